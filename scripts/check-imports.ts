/**
 * Fails when a layer of src/ imports what it must not: the arrows of
 * docs/architecture.md ("Layers"), checked on every import specifier of
 * every file (type-only imports too). Run by `npm run lint`, so CI runs it.
 *
 *   node scripts/check-imports.ts
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

/** A layer: a folder of src/, or the root files that stand for one. */
type Layer =
	| "entry"
	| "config"
	| "edge"
	| "auth"
	| "credentials"
	| "governance"
	| "session"
	| "registry"
	| "connectors"
	| "openapi"
	| "codemode"
	| "upstream"
	| "mcp"
	| "telemetry"
	| "primitives";

/**
 * What each layer may import besides itself. Arrows point down only:
 * edge → (auth, credentials, governance, session, registry) → (connectors, openapi) → upstream → mcp → primitives,
 * with auth → registry, credentials → registry, governance → registry and
 * session → (credentials, governance, registry) among the middle ones; openapi (servers made
 * from documents) sits beside connectors, reached by entry, edge and session; config (the
 * settings and the Env) sits above mcp, and telemetry (OpenTelemetry's API and export)
 * below every layer that records, upstream included. Type-only imports count as imports.
 */
const ALLOWED: Record<Layer, readonly Layer[]> = {
	entry: [
		"config",
		"telemetry",
		"edge",
		"auth",
		"credentials",
		"governance",
		"session",
		"registry",
		"connectors",
		"openapi",
		"upstream",
		"mcp",
		"primitives",
	],
	edge: [
		"config",
		"auth",
		"credentials",
		"governance",
		"session",
		"registry",
		"connectors",
		"openapi",
		"upstream",
		"mcp",
		"primitives",
		"telemetry",
	],
	auth: ["config", "registry", "mcp", "primitives", "telemetry"],
	// What an upstream request carries for whom: a person's vault, assertions, exchanges.
	credentials: ["config", "registry", "upstream", "mcp", "primitives", "telemetry"],
	// What a caller may see and call: shaping, policies, pinned definitions, one decision for lists and calls.
	governance: ["config", "registry", "mcp", "primitives", "telemetry"],
	session: [
		"config",
		"credentials",
		"governance",
		"registry",
		"connectors",
		"openapi",
		"codemode",
		"upstream",
		"mcp",
		"primitives",
		"telemetry",
	],
	// Servers reached through connectors: their Durable Object and its WebSockets, and the fetch that goes through it.
	connectors: ["config", "registry", "upstream", "mcp", "primitives", "telemetry"],
	// Programs in Worker Loader isolates (code mode): the sandbox, its limits, the typed API; calls go back through the session.
	codemode: ["mcp", "primitives"],
	// Servers made from OpenAPI documents: a document compiled into tools, a call made one HTTP request, its answer a tool result.
	openapi: ["config", "registry", "upstream", "mcp", "primitives", "telemetry"],
	registry: ["config", "mcp", "primitives", "telemetry"],
	config: ["mcp", "primitives"],
	upstream: ["telemetry", "mcp", "primitives"],
	// Traces and metrics in the OpenTelemetry API, and their export: below everything that records them.
	telemetry: ["config", "mcp", "primitives"],
	mcp: ["primitives"],
	primitives: [],
};

/** What the session shows the rest of the gateway: the object and what it re-exports. Everything else is inside it. */
const PUBLIC_SURFACE: Partial<Record<Layer, readonly string[]>> = { session: ["session/session-do.ts"] };

const ROOT_FILES: Record<string, Layer> = { "index.ts": "entry", "config.ts": "config", "env.ts": "config" };

/** The protocol eras whose own code lives apart, in a folder of each layer that has some: `src/<layer>/<era>/`. */
const ERAS = ["2025-11-25", "2026-07-28"] as const;
type Era = (typeof ERAS)[number];

/**
 * The only era-neutral files that may import an era's folders (their own layer's or a lower
 * one's): where neutral code hands over to one era's code. An era folder is part of its layer
 * and may import that layer's neutral code, the layers below it and the same era's folders
 * there, never the other era's; neutral code anywhere else imports no era folder. So dropping
 * an era is deleting its folders and editing these files (docs/architecture.md, "Dropping an
 * era", says what to change in each). A file listed here that no longer imports the era fails
 * too, so the list stays the true one.
 */
const ERA_ENTRY_POINTS: Record<Era, readonly string[]> = {
	"2025-11-25": [
		"edge/admin/operations.ts",
		"edge/mcp-routes.ts",
		"session/aggregate/tool-disclosure.ts",
		"session/client-messages.ts",
		"session/session-decisions.ts",
		"session/session-do.ts",
		"session/session-parts.ts",
		"session/session-state.ts",
		"session/session.ts",
	],
	"2026-07-28": [
		"edge/mcp-routes.ts",
		"mcp/post-classification.ts",
		"mcp/reply-messages.ts",
		"session/binding.ts",
		"session/reply-relay.ts",
		"session/session-do.ts",
		"session/session-parts.ts",
		"session/session-rpc.ts",
		"session/session.ts",
		"session/upstream-calls.ts",
		"upstream/upstream-connection.ts",
		"upstream/upstream-era.ts",
	],
};

const SRC = resolve(import.meta.dirname, "..", "src");

function layerOf(file: string): Layer | null {
	const path = relative(SRC, file);
	const [first, ...rest] = path.split("/");
	if (first === undefined) return null;
	if (rest.length === 0) return ROOT_FILES[first] ?? null;
	return isLayer(first) ? first : null;
}

/** The era whose folder holds `file` (`src/<layer>/<era>/…`), or null for the era-neutral code of its layer. */
function eraOf(file: string): Era | null {
	const folder = relative(SRC, file).split("/")[1];
	return ERAS.find((era) => era === folder) ?? null;
}

function isLayer(name: string): name is Layer {
	return Object.hasOwn(ALLOWED, name);
}

interface Specifier {
	path: string;
	line: number;
}

/**
 * The import specifiers of a TypeScript file: static imports and re-exports
 * (`import type` ones too), side-effect imports, dynamic `import("...")` and
 * `typeof import("...")`. Comments are blanked first, so
 * an import written in a comment is not one.
 */
function specifiersOf(source: string): Specifier[] {
	const code = withoutComments(source);
	const found: Specifier[] = [];
	/** The line of a match, not counting the separator and blank space it starts with. */
	const lineAt = (match: RegExpMatchArray) =>
		code.slice(0, (match.index ?? 0) + (/^[;\n]?\s*/.exec(match[0])?.[0].length ?? 0)).split("\n").length;
	const clause = String.raw`(type\s+)?(\*\s+as\s+[\w$]+|\*|\{[^}]*\}|[\w$]+(?:\s*,\s*(?:\{[^}]*\}|\*\s+as\s+[\w$]+))?)`;
	const statement = new RegExp(
		String.raw`(?:^|[;\n])\s*(?:import|export)\s+${clause}\s*from\s*(["'])([^"'\n]+)\3`,
		"g",
	);
	for (const match of code.matchAll(statement)) found.push({ path: match[4] ?? "", line: lineAt(match) });
	for (const match of code.matchAll(/(?:^|[;\n])\s*import\s*(["'])([^"'\n]+)\1/g)) {
		found.push({ path: match[2] ?? "", line: lineAt(match) });
	}
	for (const match of code.matchAll(/\bimport\s*\(\s*(["'])([^"'\n]+)\1\s*\)/g)) {
		found.push({ path: match[2] ?? "", line: lineAt(match) });
	}
	return found;
}

/** `source` with its comments replaced by spaces (newlines kept); strings, templates and regular expressions are skipped over. */
function withoutComments(source: string): string {
	const out = source.split("");
	let i = 0;
	/** The last significant character: a `/` after one of these starts a regular expression, not a division. */
	let previous = "\n";
	const blank = (from: number, to: number) => {
		for (let j = from; j < to; j++) if (out[j] !== "\n") out[j] = " ";
	};
	while (i < source.length) {
		const char = source[i] ?? "";
		const next = source[i + 1] ?? "";
		if (char === "/" && next === "/") {
			const end = source.indexOf("\n", i);
			const stop = end < 0 ? source.length : end;
			blank(i, stop);
			i = stop;
		} else if (char === "/" && next === "*") {
			const end = source.indexOf("*/", i + 2);
			const stop = end < 0 ? source.length : end + 2;
			blank(i, stop);
			i = stop;
		} else if (char === '"' || char === "'" || char === "`") {
			i = skipQuoted(source, i, char);
			previous = char;
		} else if (char === "/" && /[(,=:[!&|?{};+\-*%<>~^\n]/.test(previous)) {
			i = skipQuoted(source, i, "/");
			previous = "/";
		} else {
			if (!/\s/.test(char)) previous = char;
			i++;
		}
	}
	return out.join("");
}

/** The index just past the literal that opens at `start` with `quote` (a regular expression's classes included). */
function skipQuoted(source: string, start: number, quote: string): number {
	let i = start + 1;
	let inClass = false;
	while (i < source.length) {
		const char = source[i];
		if (char === "\\") i += 2;
		else if (quote === "/" && char === "[") {
			inClass = true;
			i++;
		} else if (quote === "/" && char === "]") {
			inClass = false;
			i++;
		} else if (char === quote && !inClass) return i + 1;
		else if (quote !== "`" && char === "\n") return i;
		else i++;
	}
	return i;
}

function sourceFiles(dir: string): string[] {
	return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
		const path = join(dir, entry.name);
		if (entry.isDirectory()) return sourceFiles(path);
		return entry.name.endsWith(".ts") || entry.name.endsWith(".tsx") ? [path] : [];
	});
}

/** Every import in src/ that breaks an arrow, as a sentence naming the file, the line and the rule. */
function violations(): string[] {
	const found: string[] = [];
	/** The entry points seen importing each era's folders, to find listed ones that no longer do. */
	const entered = new Set<string>();
	for (const file of sourceFiles(SRC)) {
		const from = layerOf(file);
		const where = relative(SRC, file);
		const fromEra = eraOf(file);
		if (from === null) {
			found.push(`src/${where}: not in any layer; add its folder to the table in scripts/check-imports.ts`);
			continue;
		}
		for (const specifier of specifiersOf(readFileSync(file, "utf8"))) {
			if (!specifier.path.startsWith(".")) continue;
			const target = resolve(dirname(file), specifier.path);
			const at = `src/${where}:${specifier.line} imports ${specifier.path}`;
			const inside = relative(SRC, target);
			if (inside.startsWith("..")) {
				found.push(`${at}: src/ imports nothing outside it`);
				continue;
			}
			const to = layerOf(target);
			if (to === null) {
				found.push(`${at}: not in any layer`);
				continue;
			}
			const toEra = eraOf(target);
			if (toEra !== null && fromEra !== null && toEra !== fromEra) {
				found.push(`${at}: ${fromEra} code may not import ${toEra} code`);
				continue;
			}
			if (toEra !== null && fromEra === null) {
				if (!ERA_ENTRY_POINTS[toEra].includes(where)) {
					found.push(
						`${at}: neutral code imports a ${toEra} folder only at that era's entry points (ERA_ENTRY_POINTS in scripts/check-imports.ts)`,
					);
					continue;
				}
				entered.add(`${toEra} ${where}`);
			}
			if (to === from) continue;
			if (!ALLOWED[from].includes(to)) {
				found.push(`${at}: ${from} may not import ${to}`);
				continue;
			}
			const surface = PUBLIC_SURFACE[to];
			if (surface && from !== "entry" && from !== "config" && !surface.includes(inside)) {
				found.push(`${at}: outside ${to}, only ${surface.join(", ")} may be imported`);
			}
		}
	}
	for (const era of ERAS) {
		for (const entry of ERA_ENTRY_POINTS[era]) {
			if (!entered.has(`${era} ${entry}`)) {
				found.push(
					`src/${entry}: listed as an entry point of ${era} but imports none of its folders; remove it from ERA_ENTRY_POINTS`,
				);
			}
		}
	}
	return found;
}

const found = violations();
for (const line of found) console.error(line);
if (found.length > 0) {
	console.error(
		`check-imports: ${found.length} import(s) or entry point(s) against the arrows (docs/architecture.md, "Layers")`,
	);
	process.exit(1);
}
console.log("check-imports: every import of src/ follows the arrows");
