/// <reference types="vite/types/importMeta.d.ts" />
import { describe, expect, it } from "vitest";
import * as METHODS from "../src/mcp/methods.ts";

/**
 * Every source file of src/ as text (Vite reads them when this file is
 * bundled), so the scan sees exactly what the gateway is built from.
 */
const SOURCES: Record<string, string> = import.meta.glob("../src/**/*.{ts,tsx}", {
	query: "?raw",
	import: "default",
	eager: true,
});

const NAMES: ReadonlySet<string> = new Set(Object.values(METHODS));

/** The string literals of `source` that spell a method name, outside comments (a comment may name a method in prose). */
function methodLiterals(source: string): string[] {
	const code = source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`\\])\/\/.*$/gm, "$1");
	const found: string[] = [];
	for (const match of code.matchAll(/"([^"\\\n]*)"|'([^'\\\n]*)'|`([^`\\$]*)`/g)) {
		const text = match[1] ?? match[2] ?? match[3] ?? "";
		if (NAMES.has(text)) found.push(text);
	}
	return found;
}

describe("method names", () => {
	it("each MCP method the gateway uses has one constant, and no two constants spell the same method", () => {
		const values = Object.values(METHODS);
		expect(values.length).toBeGreaterThan(30);
		expect(new Set(values).size).toBe(values.length);
	});

	it("the scan finds a method name written as a string, in any quotes, and not one named in a comment", () => {
		expect(methodLiterals(`if (m === "tools/call" || m === 'ping' || m === \`tasks/get\`) {}`)).toEqual([
			"tools/call",
			"ping",
			"tasks/get",
		]);
		expect(methodLiterals(`// sends "tools/call"\n/** \`server/discover\` */ const url = "https://x";`)).toEqual([]);
	});

	it("no MCP method name is written as a string in src/ outside src/mcp/methods.ts", () => {
		const files = Object.keys(SOURCES);
		expect(files.length).toBeGreaterThan(100);
		const offenders = files
			.filter((file) => !file.endsWith("/src/mcp/methods.ts"))
			.flatMap((file) => methodLiterals(SOURCES[file] ?? "").map((name) => `${file}: "${name}"`));
		expect(offenders).toEqual([]);
	});
});
