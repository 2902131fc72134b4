/**
 * The official MCP conformance suite's CLI as `npm run conformance` runs it:
 * found once (CONFORMANCE_BIN or the devDependency), run as a child process
 * with its output kept line by line (and echoed with --verbose).
 */
import { existsSync, readFileSync, realpathSync } from "node:fs";
import { dirname, join } from "node:path";
import { type Child, type Processes, withTimeout } from "../processes.ts";
import { ROOT } from "../wrangler-dev.ts";
import { type CliRun, withoutColours } from "./results.ts";

/**
 * The suite's CLI: an explicit CONFORMANCE_BIN wins (to try another version),
 * else the project's devDependency. Exits with status 2 when there is none.
 */
export function findConformanceBin(): string {
	const fromEnv = process.env.CONFORMANCE_BIN;
	if (fromEnv) {
		if (existsSync(fromEnv)) return fromEnv;
		console.error(`conformance: CONFORMANCE_BIN=${fromEnv} does not exist`);
		process.exit(2);
	}
	const local = join(ROOT, "node_modules", ".bin", "conformance");
	if (existsSync(local)) return local;
	console.error(
		"conformance: the conformance CLI was not found in node_modules/.bin. Install the devDependency " +
			"@modelcontextprotocol/conformance (npm install), or set CONFORMANCE_BIN to its dist/index.js.",
	);
	process.exit(2);
}

/** The CLI's package version, read next to its entry point (dist/index.js → package.json). */
export function conformanceVersion(bin: string): string {
	try {
		const manifest = JSON.parse(readFileSync(join(dirname(realpathSync(bin)), "..", "package.json"), "utf8")) as {
			version?: string;
		};
		return manifest.version ?? "unknown";
	} catch {
		return "unknown";
	}
}

/** A `.js` entry runs on this same Node; anything else (a wrapper script) is executed as it is. */
function commandFor(bin: string): { command: string; prefix: string[] } {
	const real = realpathSync(bin);
	return /\.[cm]?js$/.test(real) ? { command: process.execPath, prefix: [real] } : { command: bin, prefix: [] };
}

/** A running CLI: its child process, and every line it has printed so far (stdout and stderr, in order). */
export interface RunningCli {
	child: Child;
	lines: string[];
}

/** Starts the CLI with `args` (e.g. `["server", "--url", ...]`); with `verbose`, echoes its output indented. */
export function startCli(procs: Processes, bin: string, name: string, args: string[], verbose: boolean): RunningCli {
	const { command, prefix } = commandFor(bin);
	const child = procs.spawn(name, command, [...prefix, ...args], { cwd: ROOT });
	const lines: string[] = [];
	child.onLine((line) => {
		lines.push(line);
		if (verbose) console.log(`  | ${withoutColours(line)}`);
	});
	return { child, lines };
}

/** Waits, at most `ms`, for the CLI to exit; `what` names the run in the timeout's message. */
export async function cliFinished(cli: RunningCli, ms: number, what: string): Promise<CliRun> {
	await withTimeout(cli.child.exited, ms, what);
	return { exitCode: cli.child.process.exitCode, lines: cli.lines };
}
