/**
 * Every npm script that runs the project's TypeScript checks Node first: on a Node older than
 * 22.18 (which cannot run `.ts` files) it prints the sentence of scripts/node-check.mjs and exits 1,
 * instead of dying with ERR_UNKNOWN_FILE_EXTENSION and a stack trace. The scripts run through npm
 * itself, with the older Node first on PATH, as a person with that Node on PATH runs them.
 */
import { execFile, execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { type CliRun, envWithoutNpm } from "./run-cli.ts";

const ROOT = join(import.meta.dirname, "..", "..");
const CHECK = "node scripts/node-check.mjs && ";
const SENTENCE = "This project needs Node 22.18 or newer";

const scripts = z
	.object({ scripts: z.record(z.string(), z.string()) })
	.parse(JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"))).scripts;

/** Scripts that run a TypeScript file with node, or the test runner (whose fixtures are TypeScript run by node). */
const typeScriptScripts = Object.entries(scripts)
	.filter(([, command]) => /\bnode [^&|;]*\.ts\b/.test(command) || /\bvitest\b/.test(command))
	.map(([name]) => name);

/** Where an older Node is: the system's (Debian's Node 20 here and in CI), unless OLD_NODE names one. */
const OLD_NODE_CANDIDATES = [process.env.OLD_NODE, "/usr/bin/node", "/usr/local/bin/node"];

function olderNode(): { path: string; version: string } | null {
	for (const path of OLD_NODE_CANDIDATES) {
		if (!path || !existsSync(path)) continue;
		const version = execFileSync(path, ["--version"], { encoding: "utf8" }).trim();
		const [major = 0, minor = 0] = version.slice(1).split(".").map(Number);
		if (major < 22 || (major === 22 && minor < 18)) return { path, version };
	}
	return null;
}

/** The environment with `node` (and the npm beside it) resolved to the older Node, and no npm settings of ours. */
function envWithNode(nodePath: string): NodeJS.ProcessEnv {
	return { ...envWithoutNpm(), PATH: `${dirname(nodePath)}:${process.env.PATH ?? ""}`, NO_COLOR: "1" };
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<CliRun> {
	return new Promise((resolve) => {
		execFile(command, args, { cwd: ROOT, env, timeout: 30_000 }, (error, stdout, stderr) => {
			resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr });
		});
	});
}

describe("every script checks Node first", () => {
	it("every npm script that runs TypeScript starts with the Node check, the ones the issue names among them", () => {
		expect(typeScriptScripts).toEqual(
			expect.arrayContaining(["start", "deploy-check", "bench", "conformance", "config-schema", "lint", "test"]),
		);
		for (const name of typeScriptScripts) expect(scripts[name], name).toMatch(new RegExp(`^${CHECK}`));
	});

	const old = olderNode();
	it.skipIf(old === null)(
		`on an older Node (${old?.version ?? `none found at ${OLD_NODE_CANDIDATES.filter(Boolean).join(", ")}`}) each of them says which Node it needs and exits 1, without a stack trace`,
		{ timeout: 120_000 },
		async () => {
			const env = envWithNode(old?.path ?? "");
			for (const name of typeScriptScripts) {
				const result = await run("npm", ["run", "--silent", name], env);
				expect(result.code, `npm run ${name}: ${result.stderr}`).toBe(1);
				expect(result.stderr, name).toContain(
					`${SENTENCE} (it runs its TypeScript scripts directly); this is Node ${old?.version.slice(1)}.`,
				);
				expect(result.stderr, name).not.toContain("ERR_UNKNOWN_FILE_EXTENSION");
				expect(result.stderr, name).not.toMatch(/^\s+at /m);
			}
		},
	);

	it.skipIf(old === null)(
		"on an older Node mcpgw says which Node it needs and exits 1, without a stack trace",
		async () => {
			const result = await run(old?.path ?? "", [join(ROOT, "scripts", "cli", "mcpgw.mjs"), "status"], process.env);
			expect(result.code).toBe(1);
			expect(result.stderr).toContain(SENTENCE);
			expect(result.stderr).not.toMatch(/^\s+at /m);
		},
	);
});
