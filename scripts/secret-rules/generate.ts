/**
 * Writes src/governance/guards/secret-rules.generated.ts from the vendored
 * gitleaks.toml: each rule's id, regex, keywords, secret group, entropy and
 * allowlists, and the global allowlist's regexes and stopwords; descriptions,
 * tags and paths left out. A rule is kept only when the gateway can run it as
 * gitleaks does: RE2JS compiles its regex and every regex of its allowlists,
 * and it is not scoped to file paths (a gateway scans messages, not files).
 * What is dropped, and why, is counted in the generated file's header.
 *
 * `npm run secret-rules` writes it; `--check` only says whether it is current.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { RE2JS } from "re2js";
import { parse } from "smol-toml";
import { z } from "zod";
import { maxMatchLength, needsItsEnd } from "./match-length.ts";

/** The gitleaks commit config/gitleaks.toml was taken from (README.md says so too). */
export const GITLEAKS_COMMIT = "b58d3f102cf3a2c84cb7f923d05c25c9b1aed84b";

const TOML_PATH = fileURLToPath(new URL("gitleaks.toml", import.meta.url));
export const GENERATED_PATH = fileURLToPath(
	new URL("../../src/governance/guards/secret-rules.generated.ts", import.meta.url),
);

const AllowlistToml = z.object({
	condition: z.enum(["OR", "AND"]).optional(),
	regexTarget: z.enum(["secret", "match", "line"]).optional(),
	regexes: z.array(z.string()).optional(),
	stopwords: z.array(z.string()).optional(),
	paths: z.array(z.string()).optional(),
	commits: z.array(z.string()).optional(),
});
type AllowlistToml = z.infer<typeof AllowlistToml>;

const RuleToml = z.object({
	id: z.string(),
	regex: z.string().optional(),
	path: z.string().optional(),
	secretGroup: z.number().int().nonnegative().optional(),
	entropy: z.number().nonnegative().optional(),
	keywords: z.array(z.string()).optional(),
	allowlists: z.array(AllowlistToml).optional(),
});

const ConfigToml = z.object({
	allowlist: AllowlistToml.optional(),
	rules: z.array(RuleToml),
});

/** An allowlist as the gateway applies it (paths and commits never hold for a message). */
interface Allowlist {
	target: "secret" | "match" | "line";
	and: boolean;
	regexes: string[];
	stopwords: string[];
}

interface Rule {
	id: string;
	regex: string;
	keywords: string[];
	secretGroup?: number;
	entropy?: number;
	maxLength?: number;
	needsItsEnd?: boolean;
	allowlists: Allowlist[];
}

/** Why `regex` cannot be run, or undefined when RE2JS compiles it. */
function compileError(regex: string): string | undefined {
	try {
		RE2JS.compile(regex);
		return undefined;
	} catch (error) {
		return error instanceof Error ? error.message : String(error);
	}
}

/**
 * An allowlist as it applies without paths or commits: null when it can never
 * hold (AND with a path or commit condition), or holds nothing to check.
 */
function allowlistOf(list: AllowlistToml): Allowlist | null {
	const and = list.condition === "AND";
	if (and && ((list.paths?.length ?? 0) > 0 || (list.commits?.length ?? 0) > 0)) return null;
	const regexes = list.regexes ?? [];
	const stopwords = (list.stopwords ?? []).map((word) => word.toLowerCase());
	if (regexes.length === 0 && stopwords.length === 0) return null;
	return {
		target: list.regexTarget ?? "secret",
		and: and && regexes.length > 0 && stopwords.length > 0,
		regexes,
		stopwords,
	};
}

export interface Generated {
	source: string;
	kept: number;
	dropped: Map<string, string[]>;
}

/** The generated module's text for the TOML `toml`. */
export function generate(toml: string): Generated {
	const config = ConfigToml.parse(parse(toml));
	const dropped = new Map<string, string[]>();
	const drop = (reason: string, id: string) => dropped.set(reason, [...(dropped.get(reason) ?? []), id]);
	const rules: Rule[] = [];
	for (const rule of config.rules) {
		if (rule.path !== undefined) {
			drop("scoped to file paths", rule.id);
			continue;
		}
		if (rule.regex === undefined) {
			drop("no regex", rule.id);
			continue;
		}
		const allowlists = (rule.allowlists ?? []).map(allowlistOf).filter((list) => list !== null);
		const failure = [rule.regex, ...allowlists.flatMap((list) => list.regexes)].map(compileError).find(Boolean);
		if (failure !== undefined) {
			drop(`RE2JS does not compile it (${failure})`, rule.id);
			continue;
		}
		rules.push({
			id: rule.id,
			regex: rule.regex,
			keywords: (rule.keywords ?? []).map((word) => word.toLowerCase()),
			...(rule.secretGroup ? { secretGroup: rule.secretGroup } : {}),
			...(rule.entropy ? { entropy: rule.entropy } : {}),
			...(maxMatchLength(rule.regex) === undefined
				? needsItsEnd(rule.regex)
					? { needsItsEnd: true }
					: {}
				: { maxLength: maxMatchLength(rule.regex) }),
			allowlists,
		});
	}
	const global = config.allowlist ? allowlistOf({ ...config.allowlist, paths: [] }) : null;
	const globalFailure = global?.regexes.map(compileError).find(Boolean);
	if (globalFailure !== undefined) throw new Error(`the global allowlist does not compile: ${globalFailure}`);
	const droppedLines = [...dropped].map(([reason, ids]) => ` *   ${ids.length} ${reason}: ${ids.join(", ")}`);
	const source = [
		"/**",
		` * Generated by scripts/secret-rules/generate.ts from gitleaks' config/gitleaks.toml`,
		` * at commit ${GITLEAKS_COMMIT} (MIT licence: scripts/secret-rules/LICENSE).`,
		" * Do not edit: change the vendored TOML and run `npm run secret-rules`.",
		" *",
		` * ${rules.length} of ${config.rules.length} rules kept; dropped:`,
		...droppedLines,
		" */",
		'import type { SecretAllowlist, SecretRule } from "./secret-rule-types.ts";',
		"",
		`export const SECRET_RULES_COMMIT = ${JSON.stringify(GITLEAKS_COMMIT)};`,
		"",
		`export const GLOBAL_ALLOWLIST: SecretAllowlist = ${JSON.stringify(global ?? { target: "secret", and: false, regexes: [], stopwords: [] })};`,
		"",
		`export const SECRET_RULES: readonly SecretRule[] = ${JSON.stringify(rules)};`,
		"",
	].join("\n");
	return { source, kept: rules.length, dropped };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
	const generated = generate(readFileSync(TOML_PATH, "utf8"));
	if (process.argv.includes("--check")) {
		const current = readFileSync(GENERATED_PATH, "utf8") === generated.source;
		console.log(current ? "secret rules are current" : "secret rules are stale: run `npm run secret-rules`");
		process.exit(current ? 0 : 1);
	}
	writeFileSync(GENERATED_PATH, generated.source);
	console.log(`${generated.kept} rules written to ${GENERATED_PATH}`);
	for (const [reason, ids] of generated.dropped) console.log(`dropped ${ids.length} (${reason}): ${ids.join(", ")}`);
}
