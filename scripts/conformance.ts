/**
 * `node scripts/conformance.ts`: the server scenarios of the official MCP
 * conformance suite (`@modelcontextprotocol/conformance`, requirement set
 * 2025-11-25) run against the gateway's transparent endpoint `/mcp/<server>`.
 *
 * Starts the conformance upstream (scripts/conformance-upstream.ts) on a free
 * loopback port, builds the gateway and runs it under `wrangler dev` with
 * temporary secrets and state (the user's .dev.vars and .wrangler/state are
 * never touched), registers the upstream, creates an API key, and runs the
 * suite's CLI. The CLI cannot send extra headers, so it talks to a loopback
 * proxy that adds `Authorization: Bearer <key>` and forwards everything else
 * exactly as sent, Host and Origin included (dns-rebinding-protection depends
 * on them), streaming SSE through. Prints one line per scenario and exits 1
 * when any scenario fails, including those the requirement set runs without
 * scoring (server-sse-polling is one).
 *
 *   node scripts/conformance.ts                              every 2025-11-25 server scenario
 *   node scripts/conformance.ts --scenario server-sse-polling   one scenario
 *   node scripts/conformance.ts --direct                     the same against the upstream alone (baseline)
 */

import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, request, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname, join, resolve } from "node:path";
import { type Child, HOST, installShutdown, Processes, withTimeout } from "./bench-processes.ts";
import { type RunningConformanceUpstream, startConformanceUpstream } from "./conformance-upstream.ts";
import { buildWorker, ROOT, startWranglerDev, wranglerEnv } from "./wrangler-dev.ts";

/** The spec revision whose required server scenarios are run, at that revision's wire version. */
const REVISION = "2025-11-25";
/** The name the upstream is registered under: the suite runs against `/mcp/<SERVER_NAME>`. */
const SERVER_NAME = "conformance";
/** The whole suite takes seconds; this only bounds a hung run (each scenario has its own 30 s timeout). */
const SUITE_TIMEOUT_MS = 10 * 60_000;
const ADMIN_TIMEOUT_MS = 30_000;

const USAGE = `Usage: node scripts/conformance.ts [options]

Runs the MCP conformance suite's ${REVISION} server scenarios against the gateway's
/mcp/<server> endpoint, with the conformance upstream registered behind it.

  --scenario <name>   run one scenario (e.g. dns-rebinding-protection, server-sse-polling)
  --expect-fail <name>  a scenario known to fail (repeatable): its failure is reported but does not fail the run
  --direct            run against the conformance upstream itself, without the gateway (baseline)
  --output-dir <dir>  keep the suite's per-scenario checks.json files there
  --verbose           print the conformance CLI's own output as it runs
  --help              this text

The CLI is node_modules/.bin/conformance (devDependency @modelcontextprotocol/conformance);
set CONFORMANCE_BIN to use another one.`;

interface Options {
	scenario?: string;
	/** Scenarios known to fail through the gateway (tracked work), reported but not failing the run. */
	expectFail: string[];
	direct: boolean;
	outputDir?: string;
	verbose: boolean;
}

function parseArgs(args: string[]): Options {
	const options: Options = { direct: false, verbose: false, expectFail: [] };
	for (let i = 0; i < args.length; i++) {
		const arg = args[i];
		const value = () => {
			const next = args[++i];
			if (next === undefined || next.startsWith("--")) usageError(`${arg} needs a value`);
			return next;
		};
		if (arg === "--help" || arg === "-h") {
			console.log(USAGE);
			process.exit(0);
		} else if (arg === "--scenario") options.scenario = value();
		else if (arg === "--expect-fail") options.expectFail.push(value());
		else if (arg === "--output-dir") options.outputDir = resolve(value());
		else if (arg === "--direct") options.direct = true;
		else if (arg === "--verbose") options.verbose = true;
		else usageError(`unknown option ${arg}`);
	}
	return options;
}

function usageError(message: string): never {
	console.error(`conformance: ${message}\n\n${USAGE}`);
	process.exit(2);
}

const options = parseArgs(process.argv.slice(2));

// ---------------------------------------------------------------------------------------------
// Processes, cleanup and signals

const procs = new Processes();
let upstream: RunningConformanceUpstream | undefined;
let proxy: RunningProxy | undefined;
const { shutdown, stopping } = installShutdown(procs, "conformance", () =>
	Promise.all([proxy?.close(), upstream?.close()]),
);

/** esbuild colours its build errors whatever NO_COLOR says; escape codes only garble a CI log. */
const ANSI_ESCAPE = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g");

function withoutColours(text: string): string {
	return text.replace(ANSI_ESCAPE, "");
}

function describe(error: unknown): string {
	return error instanceof Error ? error.message : String(error);
}

function log(message: string): void {
	console.log(`conformance: ${message}`);
}

// ---------------------------------------------------------------------------------------------
// The conformance CLI

/**
 * The suite's CLI: an explicit CONFORMANCE_BIN wins (to try another version),
 * else the project's devDependency.
 */
function findConformanceBin(): string {
	const fromEnv = process.env.CONFORMANCE_BIN;
	if (fromEnv) {
		if (!existsSync(fromEnv)) usageError(`CONFORMANCE_BIN=${fromEnv} does not exist`);
		return fromEnv;
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
function conformanceVersion(bin: string): string {
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

interface CliRun {
	exitCode: number | null;
	/** Every line it printed, in order (stdout and stderr). */
	lines: string[];
}

/**
 * Runs the server scenarios against `url`: the whole requirement set (it
 * fixes both the scenarios and the wire version), or one scenario at that
 * revision's wire version.
 */
async function runSuite(bin: string, url: string, resultsDir: string): Promise<CliRun> {
	const selection = options.scenario
		? ["--scenario", options.scenario, "--spec-version", REVISION]
		: ["--requirements", REVISION];
	const { command, prefix } = commandFor(bin);
	const child = procs.spawn(
		"conformance CLI",
		command,
		[...prefix, "server", "--url", url, ...selection, "--output-dir", resultsDir],
		{ cwd: ROOT },
	);
	const lines: string[] = [];
	child.onLine((line) => {
		lines.push(line);
		if (options.verbose) console.log(`  | ${withoutColours(line)}`);
	});
	await withTimeout(child.exited, SUITE_TIMEOUT_MS, "the conformance suite");
	return { exitCode: child.process.exitCode, lines };
}

// ---------------------------------------------------------------------------------------------
// Results

interface Check {
	id: string;
	status: "SUCCESS" | "FAILURE" | "WARNING" | "INFO" | "SKIPPED";
	errorMessage?: string;
	details?: Record<string, unknown>;
}

interface ScenarioResult {
	name: string;
	verdict: "PASS" | "FAIL" | "SKIP";
	passed: number;
	failed: number;
	warnings: number;
	/** Why the requirement set runs it without scoring it (pending, added-after-release, ...). */
	notScored?: string;
	/** One line per failed or warning check. */
	problems: string[];
}

/** Result dirs are named `server-<scenario>-<ISO timestamp with : and . as ->`. */
const RESULT_DIR = /^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$/;

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
 * shows up, as a failure.
 */
function collectResults(run: CliRun, resultsDir: string): ScenarioResult[] {
	const checks = readChecks(resultsDir);
	const ran = run.lines
		.map((line) => /^=== Running scenario: (.+) ===$/.exec(line)?.[1])
		.filter((name): name is string => name !== undefined);
	// A single scenario has no "===" header; an unknown one is refused before it runs (no result at all).
	const started = run.lines.some((line) => line.startsWith("Running client scenario") || line.startsWith("SKIPPED:"));
	if (options.scenario && ran.length === 0 && started) ran.push(options.scenario);
	const notScored = new Map<string, string>();
	for (const line of run.lines) {
		const match = /^\s+[✓✗] (\S+) \(([\w-]+)\)$/.exec(line);
		if (match?.[1] && match[2]) notScored.set(match[1], match[2]);
	}
	const skipped = run.lines.some((line) => line.startsWith("SKIPPED:"));
	return ran.map((name) => {
		const list = checks.get(name);
		if (!list) {
			return {
				name,
				verdict: skipped ? "SKIP" : "FAIL",
				passed: 0,
				failed: skipped ? 0 : 1,
				warnings: 0,
				notScored: notScored.get(name),
				problems: skipped
					? [`not applicable at ${REVISION}`]
					: ["no checks.json: the scenario crashed or timed out (run with --verbose)"],
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
				.map((check) => `${check.status} ${check.id}: ${check.errorMessage ?? "(no message)"}${evidence(check)}`),
		};
	});
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

function printTable(results: ScenarioResult[], target: string): void {
	const width = Math.max(8, ...results.map((result) => result.name.length));
	console.log(`\nMCP conformance, ${REVISION} server scenarios, against ${target}\n`);
	console.log(`${"scenario".padEnd(width)}  result  checks (passed/failed/warnings)  note`);
	for (const result of results) {
		const counts = `${result.passed}/${result.failed}/${result.warnings}`;
		const note = result.notScored ? `not scored for ${REVISION}: ${result.notScored}` : "";
		console.log(`${result.name.padEnd(width)}  ${result.verdict.padEnd(6)}  ${counts.padEnd(31)}  ${note}`.trimEnd());
	}
	const withProblems = results.filter((result) => result.problems.length > 0);
	if (withProblems.length > 0) {
		console.log("\nFailures and warnings:");
		for (const result of withProblems) {
			console.log(`  ${result.name}`);
			for (const problem of result.problems) console.log(`    ${problem}`);
		}
	}
	const failed = results.filter((result) => result.verdict === "FAIL").length;
	const passed = results.filter((result) => result.verdict === "PASS").length;
	console.log(`\n${passed} passed, ${failed} failed`);
}

// ---------------------------------------------------------------------------------------------
// The API-key proxy

interface RunningProxy {
	url: string;
	close(): Promise<void>;
}

/** Hop-by-hop headers describe one connection: Node frames the proxied response itself. */
const HOP_BY_HOP = new Set([
	"connection",
	"keep-alive",
	"transfer-encoding",
	"proxy-connection",
	"upgrade",
	"te",
	"trailer",
]);

/** Raw headers ([name, value, name, value, ...]) without the names `drop` matches. */
function rawHeadersWithout(raw: string[], drop: (lowerName: string) => boolean): string[] {
	const kept: string[] = [];
	for (let i = 0; i + 1 < raw.length; i += 2) {
		const name = raw[i] as string;
		if (!drop(name.toLowerCase())) kept.push(name, raw[i + 1] as string);
	}
	return kept;
}

/**
 * A loopback proxy to the gateway that adds `Authorization: Bearer <key>` to
 * every request and forwards every other request header byte for byte, in
 * order (Host and Origin included: the gateway must judge them as the client
 * sent them). Responses stream through unbuffered, so SSE events arrive as
 * the gateway sends them, and a client hanging up ends the gateway request.
 */
async function startKeyProxy(gateway: URL, key: string): Promise<RunningProxy> {
	const forward = (req: IncomingMessage, res: ServerResponse) => {
		const headers = [
			...rawHeadersWithout(req.rawHeaders, (name) => name === "authorization"),
			"Authorization",
			`Bearer ${key}`,
		];
		const outgoing = request(
			{
				host: gateway.hostname,
				port: gateway.port,
				method: req.method,
				path: req.url,
				headers,
				// The client's own Host goes through unchanged.
				setHost: false,
			},
			(incoming) => {
				res.writeHead(
					incoming.statusCode ?? 502,
					incoming.statusMessage,
					rawHeadersWithout(incoming.rawHeaders, (name) => HOP_BY_HOP.has(name)),
				);
				res.flushHeaders();
				incoming.pipe(res);
				// A stream the gateway broke off must look broken to the client too, not complete.
				incoming.on("aborted", () => res.destroy());
			},
		);
		outgoing.on("error", (error) => {
			if (res.headersSent) {
				res.destroy();
				return;
			}
			res
				.writeHead(502, { "content-type": "text/plain" })
				.end(`conformance proxy: gateway unreachable: ${error.message}`);
		});
		res.on("close", () => {
			if (!res.writableFinished) outgoing.destroy();
		});
		req.pipe(outgoing);
	};
	const server = createServer(forward);
	await new Promise<void>((resolve) => server.listen(0, HOST, resolve));
	const { port } = server.address() as AddressInfo;
	return {
		url: `http://${HOST}:${port}`,
		close: () =>
			new Promise<void>((resolve) => {
				server.closeAllConnections();
				server.close(() => resolve());
			}),
	};
}

// ---------------------------------------------------------------------------------------------
// The gateway

/**
 * The gateway under `wrangler dev`, built first, with temporary secrets and
 * state. HTTP upstreams are allowed (the upstream is plain HTTP on loopback)
 * and Host must name this machine.
 */
async function startGateway(tmp: string): Promise<{ child: Child; url: string; adminToken: string }> {
	const env = { ...wranglerEnv(tmp), NO_COLOR: "1", FORCE_COLOR: "0" };
	const config = join(ROOT, "wrangler.toml");
	const { entry } = await buildWorker(procs, { name: "gateway", config, outDir: join(tmp, "gateway-bundle"), env });
	const adminToken = randomBytes(32).toString("base64url");
	const envFile = join(tmp, "gateway.env");
	writeFileSync(
		envFile,
		`ADMIN_TOKEN="${adminToken}"\nSESSION_SECRET="${randomBytes(32).toString("base64url")}"\nKEY_SECRET="${randomBytes(32).toString("base64url")}"\n`,
		{
			mode: 0o600,
		},
	);
	const { child, url } = await startWranglerDev(procs, {
		name: "gateway (wrangler dev)",
		config,
		entry,
		persistTo: join(tmp, "gateway-state"),
		env,
		extraArgs: [
			"--env-file",
			envFile,
			"--var",
			"ALLOW_HTTP_UPSTREAMS:true",
			"--var",
			"ALLOWED_HOSTS:localhost,127.0.0.1",
		],
	});
	return { child, url, adminToken };
}

async function admin<T>(
	gatewayUrl: string,
	adminToken: string,
	method: string,
	path: string,
	body: unknown,
): Promise<T> {
	const response = await fetch(`${gatewayUrl}/admin${path}`, {
		method,
		headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
		body: JSON.stringify(body),
		signal: AbortSignal.timeout(ADMIN_TIMEOUT_MS),
	});
	const text = await response.text();
	if (!response.ok) throw new Error(`${method} /admin${path} failed: ${response.status} ${text}`);
	return JSON.parse(text) as T;
}

// ---------------------------------------------------------------------------------------------
// The run

async function main(): Promise<number> {
	const bin = findConformanceBin();
	log(`@modelcontextprotocol/conformance ${conformanceVersion(bin)} (${bin})`);
	const tmp = procs.tempDir("mcp-edge-conformance-");
	const resultsDir = options.outputDir ?? join(tmp, "results");
	mkdirSync(resultsDir, { recursive: true });

	upstream = await startConformanceUpstream();
	log(`conformance upstream at ${upstream.url}`);
	let target = upstream.url;
	if (!options.direct) {
		log("building the gateway and starting it (wrangler dev)...");
		const gateway = await startGateway(tmp);
		await admin(gateway.url, gateway.adminToken, "PUT", `/servers/${SERVER_NAME}`, { url: upstream.url });
		const { key } = await admin<{ key: string }>(gateway.url, gateway.adminToken, "POST", "/keys", {
			name: "conformance",
		});
		proxy = await startKeyProxy(new URL(gateway.url), key);
		target = `${proxy.url}/mcp/${SERVER_NAME}`;
		log(`gateway at ${gateway.url}; the suite runs against ${target} (adds the API key, forwards to the gateway)`);
	}

	log(options.scenario ? `running scenario ${options.scenario}...` : `running the ${REVISION} server scenarios...`);
	const run = await runSuite(bin, target, resultsDir);
	// Interrupted: the CLI was stopped midway, so its results are partial; shutdown() owns the exit.
	if (stopping()) return new Promise<never>(() => {});
	const results = collectResults(run, resultsDir);
	if (results.length === 0) {
		console.error(
			`conformance: the CLI ran no scenario (exit ${run.exitCode}); its output:\n${withoutColours(run.lines.join("\n"))}`,
		);
		return 1;
	}
	printTable(results, options.direct ? "the conformance upstream directly" : `the gateway's /mcp/${SERVER_NAME}`);
	if (options.outputDir) log(`checks.json per scenario in ${options.outputDir}`);
	for (const name of options.expectFail) {
		const result = results.find((candidate) => candidate.name === name);
		if (result?.verdict === "FAIL") log(`${name} failed as expected (--expect-fail): not counted`);
		else if (result?.verdict === "PASS") log(`${name} passed although expected to fail: drop --expect-fail ${name}`);
	}
	const failed = results.some((result) => result.verdict === "FAIL" && !options.expectFail.includes(result.name));
	if (!failed && run.exitCode !== 0) {
		console.error(`conformance: the CLI exited ${run.exitCode} with no failed scenario; its last output:`);
		console.error(run.lines.slice(-20).join("\n"));
		return 1;
	}
	return failed ? 1 : 0;
}

try {
	await shutdown(await main());
} catch (error) {
	// An interrupt stops the children, which makes the step waiting on them fail: not the cause.
	if (stopping()) await new Promise<never>(() => {});
	const exited = procs.exited().filter((report) => !report.includes("deploy --dry-run") && !report.includes("CLI"));
	const cause = exited.length > 0 ? `\nconformance: a child process had exited: ${exited.join("\n")}` : "";
	await shutdown(1, withoutColours(`conformance: failed: ${describe(error)}${cause}`));
}
