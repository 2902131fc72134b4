/** Runs `mcpgw` as a user does (a child process of scripts/cli/mcpgw.mjs) against the project's gateway. */
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inject } from "vitest";

const BIN = join(import.meta.dirname, "..", "..", "scripts", "cli", "mcpgw.mjs");

export interface CliRun {
	code: number;
	stdout: string;
	stderr: string;
}

/**
 * `mcpgw <args>` with MCPGW_URL and MCPGW_ADMIN_TOKEN set for the project's gateway; `env` overrides them.
 * It runs in `cwd`, by default a directory without .dev.vars: the token comes from the environment only.
 */
export function mcpgw(args: string[], env: Record<string, string> = {}, cwd = tmpdir()): Promise<CliRun> {
	return new Promise((resolve) => {
		execFile(
			process.execPath,
			[BIN, ...args],
			{
				cwd,
				env: {
					...process.env,
					MCPGW_URL: inject("cliGatewayUrl"),
					MCPGW_ADMIN_TOKEN: inject("cliAdminToken"),
					NO_COLOR: "1",
					...env,
				},
				timeout: 25_000,
			},
			(error, stdout, stderr) => {
				const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
				resolve({ code, stdout, stderr });
			},
		);
	});
}

/** `mcpgw <args> --json`, its output parsed; fails the test with stderr when it exits non-zero. */
export async function mcpgwJson<T>(args: string[]): Promise<T> {
	const run = await mcpgw([...args, "--json"]);
	if (run.code !== 0) throw new Error(`mcpgw ${args.join(" ")} exited ${run.code}: ${run.stderr}`);
	return JSON.parse(run.stdout) as T;
}

/** A config file in a fresh temporary directory. */
export function configFile(config: unknown): string {
	const path = join(mkdtempSync(join(tmpdir(), "mcpgw-config-")), "gateway.config.json");
	writeFileSync(path, JSON.stringify(config, null, "\t"));
	return path;
}

/** This process's environment without npm's own settings (`npm_*`), for an npm the test runs itself. */
export function envWithoutNpm(): NodeJS.ProcessEnv {
	const env = { ...process.env };
	for (const name of Object.keys(env)) if (name.startsWith("npm_")) delete env[name];
	return env;
}

/** Names unique within the run, so test files sharing one gateway never collide. */
let counter = 0;
export function uniqueName(prefix: string): string {
	counter += 1;
	return `${prefix}-${process.pid.toString(36)}-${counter}`;
}
