/**
 * What one run of the conformance CLI found, per scenario: read from its
 * output (which scenarios ran, which the requirement set does not score) and
 * from the `checks.json` each scenario leaves in the results directory.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** The spec revisions whose frozen requirement sets the suite ships (requirements/<revision>.yaml). */
export const REQUIREMENT_SETS = ["2025-11-25", "2026-07-28"] as const;
export type RequirementSet = (typeof REQUIREMENT_SETS)[number];

export function isRequirementSet(value: string): value is RequirementSet {
	return (REQUIREMENT_SETS as readonly string[]).includes(value);
}

export interface CliRun {
	exitCode: number | null;
	/** Every line it printed, in order (stdout and stderr). */
	lines: string[];
}

interface Check {
	id: string;
	status: "SUCCESS" | "FAILURE" | "WARNING" | "INFO" | "SKIPPED";
	errorMessage?: string;
	details?: Record<string, unknown>;
}

export interface ScenarioResult {
	name: string;
	verdict: "PASS" | "FAIL" | "SKIP";
	passed: number;
	failed: number;
	warnings: number;
	/** Why the requirement set runs it without scoring it (extension, pending, added-after-release). */
	notScored?: string;
	/** Not scored by its set, but this project requires it to pass all the same. */
	requiredHere?: boolean;
	/** How an extension scenario fared against the reference alone, in a gateway run (baseline.ts). */
	direct?: Pick<ScenarioResult, "verdict" | "passed" | "failed" | "warnings">;
	/** One line per failed or warning check. */
	problems: string[];
}

/** The longest check message the table prints; checks.json (--output-dir) keeps all of it. */
const MESSAGE_MAX_CHARS = 400;
/** How many failed checks of an unscored scenario the table prints. */
const UNSCORED_PROBLEMS_SHOWN = 2;
/**
 * Result dirs are named `server-<scenario>-<ISO timestamp with : and . as ->`,
 * `authorization-server-<scenario>-<...>` for the authorization-server scenarios.
 */
const RESULT_DIR = /^(?:authorization-)?server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$/;
/** The CLI's list of scenarios run but not scored: `  ✓ name (reason)`. */
const NOT_SCORED_LINE = /^\s+[✓✗] (\S+) \(([\w-]+)\)$/;
/** The CLI announces each scenario of a set with this header (a single scenario has none). */
const SCENARIO_HEADER = /^=== Running scenario: (.+) ===$/;
/** A scenario not applicable at the requested wire version is skipped with this line. */
const SKIPPED_LINE = /^SKIPPED: (.*)$/;

/** Each scenario's checks.json from the results dir, by scenario name. */
function readChecks(resultsDir: string): Map<string, Check[]> {
	const byScenario = new Map<string, Check[]>();
	if (!existsSync(resultsDir)) return byScenario;
	// Sorted, so with a reused --output-dir the latest run of a scenario (by timestamp) wins.
	for (const entry of readdirSync(resultsDir).sort()) {
		const name = RESULT_DIR.exec(entry)?.[1];
		const file = join(resultsDir, entry, "checks.json");
		if (name && existsSync(file)) byScenario.set(name, JSON.parse(readFileSync(file, "utf8")) as Check[]);
	}
	return byScenario;
}

/**
 * One result per scenario the CLI ran, in its order. The scenario list comes
 * from its output, so a scenario that crashed before writing checks.json still
 * shows up, as a failure. `scenario` names the one scenario of a single run.
 */
export function collectResults(run: CliRun, resultsDir: string, scenario?: string): ScenarioResult[] {
	const checks = readChecks(resultsDir);
	const ran = run.lines
		.map((line) => SCENARIO_HEADER.exec(line)?.[1])
		.filter((name): name is string => name !== undefined);
	const skipped = run.lines.map((line) => SKIPPED_LINE.exec(line)?.[1]).find((reason) => reason !== undefined);
	// An unknown scenario is refused before it runs: no header, no "Running" line, no result at all.
	const started = skipped !== undefined || run.lines.some((line) => line.startsWith("Running client scenario"));
	if (scenario && ran.length === 0 && started) ran.push(scenario);
	const notScored = new Map<string, string>();
	for (const line of run.lines) {
		const match = NOT_SCORED_LINE.exec(line);
		if (match?.[1] && match[2]) notScored.set(match[1], match[2]);
	}
	return ran.map((name): ScenarioResult => {
		const list = checks.get(name);
		if (!list) {
			return {
				name,
				verdict: skipped !== undefined ? "SKIP" : "FAIL",
				passed: 0,
				failed: skipped !== undefined ? 0 : 1,
				warnings: 0,
				notScored: notScored.get(name),
				problems: [skipped ?? "no checks.json: the scenario crashed or timed out (run with --verbose)"],
			};
		}
		const count = (status: Check["status"]) => list.filter((check) => check.status === status).length;
		const failed = count("FAILURE");
		return {
			name,
			verdict: failed > 0 ? "FAIL" : "PASS",
			passed: count("SUCCESS"),
			failed,
			warnings: count("WARNING"),
			notScored: notScored.get(name),
			problems: list
				.filter((check) => check.status === "FAILURE" || check.status === "WARNING")
				.map(
					(check) => `${check.status} ${check.id}: ${oneLine(check.errorMessage ?? "(no message)")}${evidence(check)}`,
				),
		};
	});
}

/**
 * Says, on stderr, when a run of the CLI broke rather than failed: it ran no
 * scenario, or it exited with an error status although no scenario failed
 * (the CLI fails a run only for a failed scenario). `what` names the run.
 */
export function reportBrokenRun(run: CliRun, results: ScenarioResult[], what: string): boolean {
	if (results.length === 0) {
		console.error(`conformance: ${what} ran no scenario (exit ${run.exitCode}); its output:\n${plain(run.lines)}`);
		return true;
	}
	if (run.exitCode !== 0 && !results.some((result) => result.verdict === "FAIL")) {
		console.error(`conformance: ${what} exited ${run.exitCode} with no failed scenario; its last output:`);
		console.error(plain(run.lines.slice(-20)));
		return true;
	}
	return false;
}

function plain(lines: string[]): string {
	return withoutColours(lines.join("\n"));
}

/** esbuild colours its build errors whatever NO_COLOR says; escape codes only garble a CI log. */
const ANSI_ESCAPE = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g");

export function withoutColours(text: string): string {
	return text.replace(ANSI_ESCAPE, "");
}

/**
 * A check's message on one line, cut to a length a table can hold: some
 * (wire-schema-valid) list every offending message, one per line.
 */
function oneLine(message: string): string {
	const flat = message.replace(/\s*\n\s*/g, " | ");
	return flat.length > MESSAGE_MAX_CHARS ? `${flat.slice(0, MESSAGE_MAX_CHARS)}...` : flat;
}

/** The few details that say why a check failed: HTTP status, Host sent, the text of a failed tool result. */
function evidence(check: Check): string {
	const details = check.details ?? {};
	const parts: string[] = [];
	if (typeof details.hostHeader === "string") parts.push(`Host ${details.hostHeader}`);
	if (typeof details.statusCode === "number") parts.push(`HTTP ${details.statusCode}`);
	const body = details.body as { result?: { content?: Array<{ text?: unknown }> } } | undefined;
	const resultText = body?.result?.content?.[0]?.text;
	if (typeof resultText === "string") parts.push(`result: "${resultText.slice(0, 300)}"`);
	return parts.length > 0 ? ` [${parts.join("; ")}]` : "";
}

/**
 * The counts of one set's run, for its closing line and the overall summary:
 * scored, unscored but required here (which count as well), and the rest
 * apart, unless `scoring` is false (a single scenario run by name, for which
 * the CLI does not say whether its set scores it).
 */
export function tally(results: ScenarioResult[], scoring = true): string {
	const count = (list: ScenarioResult[], verdict: ScenarioResult["verdict"]) =>
		list.filter((result) => result.verdict === verdict).length;
	const line = (list: ScenarioResult[]) => {
		const skipped = count(list, "SKIP");
		return `${count(list, "PASS")} passed, ${count(list, "FAIL")} failed${skipped > 0 ? `, ${skipped} skipped` : ""}`;
	};
	if (!scoring) return line(results);
	const required = results.filter((result) => result.notScored && result.requiredHere);
	const unscored = results.filter((result) => result.notScored && !result.requiredHere);
	const parts = [`scored: ${line(results.filter((result) => !result.notScored))}`];
	if (required.length > 0) parts.push(`not scored but required here: ${line(required)}`);
	if (unscored.length > 0) parts.push(`not scored: ${line(unscored)}`);
	return parts.join("; ");
}

/** What a table is of: `title` heads it, `label` names the run in its notes and closing line (e.g. a requirement set). */
export interface TableHeading {
	title: string;
	label: string;
}

export function printTable(results: ScenarioResult[], { title, label }: TableHeading, scoring = true): void {
	const width = Math.max(8, ...results.map((result) => result.name.length));
	console.log(`\nMCP conformance, ${title}\n`);
	console.log(`${"scenario".padEnd(width)}  result  checks (passed/failed/warnings)  note`);
	for (const result of results) {
		const counts = `${result.passed}/${result.failed}/${result.warnings}`;
		const required = result.requiredHere
			? result.direct?.verdict === "PASS"
				? " (counted: it passes directly)"
				: " (required here)"
			: "";
		const note = result.notScored ? `not scored for ${label}: ${result.notScored}${required}` : "";
		console.log(`${result.name.padEnd(width)}  ${result.verdict.padEnd(6)}  ${counts.padEnd(31)}  ${note}`.trimEnd());
	}
	const withProblems = results.filter((result) => result.problems.length > 0);
	if (withProblems.length > 0) {
		console.log("\nFailures, warnings and skips:");
		for (const result of withProblems) {
			console.log(`  ${result.name}${result.notScored ? ` (not scored: ${result.notScored})` : ""}`);
			// An unscored scenario's failures are for visibility: its first lines say enough.
			const brief = result.notScored !== undefined && !result.requiredHere;
			const shown = brief ? result.problems.slice(0, UNSCORED_PROBLEMS_SHOWN) : result.problems;
			for (const problem of shown) console.log(`    ${problem}`);
			const hidden = result.problems.length - shown.length;
			if (hidden > 0) console.log(`    ... and ${hidden} more (see its checks.json, --output-dir)`);
		}
	}
	console.log(`\n${label}: ${tally(results, scoring)}`);
}
