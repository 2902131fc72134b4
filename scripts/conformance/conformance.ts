/**
 * `node scripts/conformance/conformance.ts`: the server scenarios of the official MCP
 * conformance suite (`@modelcontextprotocol/conformance`) run against the
 * gateway's transparent endpoint `/mcp/<server>`, for both requirement sets
 * the suite ships: 2025-11-25 (stateful, initialize handshake) and 2026-07-28
 * (stateless, a `_meta` envelope on every request). Each set runs its
 * scenarios at its own wire version, so a scenario in both sets runs twice.
 *
 * Starts the conformance reference (scripts/fixtures/reference/conformance-reference.ts,
 * an SDK v2 server speaking both eras) on a free loopback port, builds the
 * gateway and runs it under `wrangler dev` with temporary secrets and state
 * (the user's .dev.vars and .wrangler/state are never touched), registers the
 * reference, creates an API key, and runs the suite's CLI once per set. The
 * CLI cannot send extra headers, so it talks to a loopback proxy that adds
 * `Authorization: Bearer <key>` and forwards everything else exactly as sent
 * (scripts/conformance/key-proxy.ts).
 *
 * Prints one table per set. The run fails when a scenario the set scores
 * fails; the scenarios a set runs without scoring (extensions such as tasks,
 * pending ones, ones added after the set was frozen) are reported with their
 * reason and do not fail it, except the few this project requires anyway
 * (REQUIRED_HERE: server-sse-polling, http-header-validation,
 * http-custom-header-server-validation). Through the gateway, a set's
 * extension scenarios (the tasks extension's tasks-*) run against the
 * reference alone as well, and are printed side by side: those that pass
 * there count, and fail the run when they fail through the gateway; those
 * that fail there too do not (baseline.ts). The gateway runs with
 * TASK_PROMOTE_AFTER_MS=200. One scenario run by name (--scenario) fails the
 * run whenever it fails.
 *
 * Then the suite's authorization-server scenarios, against the gateway as its
 * own OAuth authorization server (scripts/conformance/authorization.ts, a
 * second `wrangler dev` of the same build): both must pass. Not with
 * --scenario, --direct (the reference has no authorization server) or
 * --no-authorization.
 *
 * The folder is this program and its parts: the suite's CLI (cli.ts), the
 * gateway under `wrangler dev` (gateway.ts), the key proxy (key-proxy.ts),
 * the results read from the CLI (results.ts), the extension scenarios beside
 * their direct baseline (baseline.ts) and the authorization scenarios
 * (authorization.ts). The reference and the identity provider are fixtures
 * (scripts/fixtures/).
 *
 *   node scripts/conformance/conformance.ts                                   both sets through the gateway, then authorization
 *   node scripts/conformance/conformance.ts --requirements 2026-07-28         one set
 *   node scripts/conformance/conformance.ts --scenario server-sse-polling     one scenario, at each set's wire
 *   node scripts/conformance/conformance.ts --direct                          the same against the reference alone (baseline)
 */

import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import {
	type RunningConformanceReference,
	startConformanceReference,
} from "../fixtures/reference/conformance-reference.ts";
import { installShutdown, Processes } from "../processes.ts";
import { AUTHORIZATION_LABEL, type AuthorizationRun, runAuthorizationScenarios } from "./authorization.ts";
import { isExtensionScenario, printSideBySide, withBaseline } from "./baseline.ts";
import { cliFinished, conformanceVersion, findConformanceBin, startCli } from "./cli.ts";
import { admin, buildGateway, type GatewayBuild, startGateway } from "./gateway.ts";
import { type RunningProxy, startKeyProxy } from "./key-proxy.ts";
import {
	type CliRun,
	collectResults,
	isRequirementSet,
	printTable,
	REQUIREMENT_SETS,
	type RequirementSet,
	reportBrokenRun,
	type ScenarioResult,
	tally,
	withoutColours,
} from "./results.ts";

/** The name the reference is registered under: the suite runs against `/mcp/<SERVER_NAME>`. */
const SERVER_NAME = "conformance";
/** A set takes seconds; this only bounds a hung run (each scenario has its own 30 s timeout). */
const SUITE_TIMEOUT_MS = 10 * 60_000;
/**
 * Unscored scenarios this project requires all the same. server-sse-polling is
 * "pending" in the 2025-11-25 set only because the suite's own fixture server
 * lags; it is the suite's end-to-end check that a reply the upstream closes
 * mid-call is resumed through the gateway (SEP-1699), which the gateway does.
 * http-header-validation and http-custom-header-server-validation are
 * "pending" in the 2026-07-28 set for the same reason; the first checks that
 * routing headers which contradict or leave out what the body says are
 * refused (SEP-2243), which the gateway does at the edge, before its cache, a
 * Durable Object or the upstream sees the request; the second that an
 * upstream's own refusal of an `Mcp-Param-*` header reaches the client as it.
 */
const REQUIRED_HERE: Readonly<Partial<Record<RequirementSet, readonly string[]>>> = {
	"2025-11-25": ["server-sse-polling"],
	"2026-07-28": ["http-header-validation", "http-custom-header-server-validation"],
};

/**
 * What the gateway under test is configured with beyond its defaults: a call
 * of a task-capable client is made a task after 200 ms rather than 5 s, so the
 * tasks scenarios' slow calls (slow_compute of a second or two) are promoted
 * well within the suite's 30 s per scenario, whatever the upstream answers.
 */
const GATEWAY_VARS = { TASK_PROMOTE_AFTER_MS: "200" };

/**
 * The wire an extension scenario (tasks-*) named with --scenario runs at. The
 * CLI puts extension scenarios on no spec timeline, so it skips them at every
 * --spec-version unless forced; the tasks extension (SEP-2663) is of 2026-07-28.
 */
const EXTENSION_WIRE: RequirementSet = "2026-07-28";
/** How the CLI says it skipped a scenario for being an extension's. */
const EXTENSION_SKIP = /^SKIPPED: .*\(extension scenario/;

const USAGE = `Usage: node scripts/conformance/conformance.ts [options]

Runs the MCP conformance suite's server scenarios, requirement sets ${REQUIREMENT_SETS.join(" and ")},
against the gateway's /mcp/<server> endpoint with the conformance reference registered behind it,
then its authorization-server scenarios against the gateway's own OAuth authorization server
(alone: node scripts/conformance/authorization.ts).

  --requirements <set>  run one requirement set (${REQUIREMENT_SETS.join(" or ")}); default: both
  --scenario <name>     run one scenario (e.g. dns-rebinding-protection), at the wire of each set run;
                        an extension scenario (e.g. tasks-lifecycle) runs at the 2026-07-28 wire
  --expect-fail <name>  a scenario known to fail (repeatable), as <scenario> (any set) or <set>:<scenario>:
                        its failure is reported but does not fail the run
  --direct              run against the conformance reference itself, without the gateway (baseline);
                        the authorization-server scenarios do not apply
  --no-authorization    leave out the authorization-server scenarios
  --output-dir <dir>    keep the suite's per-scenario checks.json files there (one subdirectory per set,
                        and authorization/ for the authorization-server scenarios)
  --verbose             print the conformance CLI's own output as it runs
  --help                this text

A set's unscored scenarios (extension, pending, added-after-release) are reported, not counted,
except ${Object.entries(REQUIRED_HERE)
	.flatMap(([set, names]) => (names ?? []).map((name) => `${set}:${name}`))
	.join(", ")}, which this project requires.
Through the gateway, the extension scenarios (tasks-*) also run against the reference alone, shown
side by side: each one that passes there counts.
The CLI is node_modules/.bin/conformance (devDependency @modelcontextprotocol/conformance);
set CONFORMANCE_BIN to use another one.`;

interface ExpectedFailure {
	/** Undefined: in whichever set it runs. */
	set?: RequirementSet;
	scenario: string;
}

interface Options {
	sets: RequirementSet[];
	scenario?: string;
	/** Scenarios known to fail (tracked work), reported but not failing the run. */
	expectFail: ExpectedFailure[];
	direct: boolean;
	/** Also the authorization-server scenarios, against the gateway's own authorization server. */
	authorization: boolean;
	outputDir?: string;
	verbose: boolean;
}

function parseExpectedFailure(value: string): ExpectedFailure {
	const colon = value.indexOf(":");
	if (colon < 0) return { scenario: value };
	const set = value.slice(0, colon);
	if (!isRequirementSet(set)) usageError(`--expect-fail ${value}: ${set} is not a requirement set`);
	return { set, scenario: value.slice(colon + 1) };
}

function parseArgs(args: string[]): Options {
	const options: Options = {
		sets: [...REQUIREMENT_SETS],
		direct: false,
		authorization: true,
		verbose: false,
		expectFail: [],
	};
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
		} else if (arg === "--requirements") {
			const set = value();
			if (!isRequirementSet(set)) usageError(`--requirements ${set}: not one of ${REQUIREMENT_SETS.join(", ")}`);
			options.sets = [set];
		} else if (arg === "--scenario") options.scenario = value();
		else if (arg === "--expect-fail") options.expectFail.push(parseExpectedFailure(value()));
		else if (arg === "--output-dir") options.outputDir = resolve(value());
		else if (arg === "--direct") options.direct = true;
		else if (arg === "--no-authorization") options.authorization = false;
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
let reference: RunningConformanceReference | undefined;
let proxy: RunningProxy | undefined;
const { shutdown, stopping } = installShutdown(procs, "conformance", () =>
	Promise.all([proxy?.close(), reference?.close()]),
);

function describe(error: unknown): string {
	return error instanceof Error ? error.message : String(error);
}

function log(message: string): void {
	console.log(`conformance: ${message}`);
}

// ---------------------------------------------------------------------------------------------
// The conformance CLI

/**
 * Runs the server scenarios of one requirement set against `url`: the whole
 * set (it fixes both the scenarios and the wire version), or the one
 * --scenario at that set's wire version.
 */
async function runSuite(
	bin: string,
	url: string,
	set: RequirementSet,
	resultsDir: string,
	force = false,
): Promise<CliRun> {
	const selection = options.scenario
		? ["--scenario", options.scenario, "--spec-version", set, ...(force ? ["--force"] : [])]
		: ["--requirements", set];
	const cli = startCli(
		procs,
		bin,
		`conformance CLI (${set})`,
		["server", "--url", url, ...selection, "--output-dir", resultsDir],
		options.verbose,
	);
	const run = await cliFinished(cli, SUITE_TIMEOUT_MS, `the ${set} conformance run`);
	const skippedAsExtension = run.lines.some((line) => EXTENSION_SKIP.test(withoutColours(line)));
	if (options.scenario && !force && set === EXTENSION_WIRE && skippedAsExtension) {
		log(`${options.scenario} is an extension scenario: running it at the ${set} wire all the same (--force)`);
		return runSuite(bin, url, set, resultsDir, true);
	}
	return run;
}

// ---------------------------------------------------------------------------------------------
// Verdicts

function isExpectedFailure(set: RequirementSet, scenario: string): boolean {
	return options.expectFail.some((entry) => entry.scenario === scenario && (entry.set ?? set) === set);
}

/** A failure that fails the run: scored by its set, required here or asked for by name, and not expected. */
function isCountedFailure(set: RequirementSet, result: ScenarioResult): boolean {
	if (result.verdict !== "FAIL" || isExpectedFailure(set, result.name)) return false;
	return options.scenario !== undefined || result.notScored === undefined || result.requiredHere === true;
}

/** Says, per --expect-fail, whether it still holds: failed as expected, passed (drop it), or never ran. */
function reportExpectedFailures(runs: Map<RequirementSet, ScenarioResult[]>): void {
	for (const entry of options.expectFail) {
		const label = entry.set ? `${entry.set}:${entry.scenario}` : entry.scenario;
		const outcomes = [...runs].flatMap(([set, results]) =>
			entry.set === undefined || entry.set === set
				? results.filter((result) => result.name === entry.scenario).map((result) => result.verdict)
				: [],
		);
		if (outcomes.includes("FAIL")) log(`${label} failed as expected (--expect-fail): not counted`);
		else if (outcomes.includes("PASS")) log(`${label} passed although expected to fail: drop --expect-fail ${label}`);
		else log(`${label} (--expect-fail) did not run`);
	}
}

// ---------------------------------------------------------------------------------------------
// The run

async function main(): Promise<number> {
	const bin = findConformanceBin();
	log(`@modelcontextprotocol/conformance ${conformanceVersion(bin)} (${bin})`);
	const tmp = procs.tempDir("mcp-edge-conformance-");
	const resultsRoot = options.outputDir ?? join(tmp, "results");

	reference = await startConformanceReference({ logHandlerErrors: options.verbose });
	log(`conformance reference at ${reference.url}`);
	let target = reference.url;
	let build: GatewayBuild | undefined;
	if (!options.direct) {
		log("building the gateway and starting it (wrangler dev)...");
		build = await buildGateway(procs, tmp);
		const gateway = await startGateway(procs, build, {
			name: "gateway (wrangler dev)",
			dir: join(tmp, "gateway"),
			vars: GATEWAY_VARS,
		});
		await admin(gateway, "PUT", `/servers/${SERVER_NAME}`, { url: reference.url });
		const { key } = await admin<{ key: string }>(gateway, "POST", "/keys", { name: "conformance" });
		proxy = await startKeyProxy(new URL(gateway.url), key);
		target = `${proxy.url}/mcp/${SERVER_NAME}`;
		log(`gateway at ${gateway.url}; the suite runs against ${target} (adds the API key, forwards to the gateway)`);
	}
	const targetName = options.direct ? "the conformance reference directly" : `the gateway's /mcp/${SERVER_NAME}`;

	const runs = new Map<RequirementSet, ScenarioResult[]>();
	let broken = false;
	for (const set of options.sets) {
		const resultsDir = join(resultsRoot, set);
		mkdirSync(resultsDir, { recursive: true });
		log(options.scenario ? `running ${options.scenario} at ${set}...` : `running the ${set} requirement set...`);
		const run = await runSuite(bin, target, set, resultsDir);
		// Interrupted: the CLI was stopped midway, so its results are partial; shutdown() owns the exit.
		if (stopping()) return new Promise<never>(() => {});
		let results: ScenarioResult[] = collectResults(run, resultsDir, options.scenario).map((result) => ({
			...result,
			requiredHere: result.notScored !== undefined && (REQUIRED_HERE[set] ?? []).includes(result.name),
		}));
		if (reportBrokenRun(run, results, `the ${set} run`)) broken = true;
		// Through the gateway, the extension scenarios are the gateway's to pass where the reference passes them.
		if (!options.direct && results.some(isExtensionScenario)) {
			log(`running the ${set} requirement set against the reference directly, for its extension scenarios...`);
			const directDir = join(resultsRoot, `${set}-direct`);
			mkdirSync(directDir, { recursive: true });
			const directRun = await runSuite(bin, reference.url, set, directDir);
			if (stopping()) return new Promise<never>(() => {});
			results = withBaseline(results, collectResults(directRun, directDir, options.scenario));
		}
		if (results.length > 0) {
			const title = `${set} server scenarios (at the ${set} wire), against ${targetName}`;
			printTable(results, { title, label: set }, options.scenario === undefined);
			printSideBySide(results, set);
			runs.set(set, results);
		}
	}

	let authorization: AuthorizationRun | undefined;
	if (authorizationApplies() && build) {
		authorization = await runAuthorizationScenarios({
			procs,
			bin,
			build,
			dir: join(tmp, "authorization-gateway"),
			resultsDir: join(resultsRoot, "authorization"),
			verbose: options.verbose,
		});
		if (stopping()) return new Promise<never>(() => {});
	}

	console.log(`\nSummary, against ${targetName}:`);
	for (const [set, results] of runs) console.log(`  ${set}: ${tally(results, options.scenario === undefined)}`);
	if (authorization) {
		console.log("and against the gateway's own OAuth authorization server:");
		console.log(`  ${AUTHORIZATION_LABEL}: ${tally(authorization.results, false)}`);
	}
	if (options.outputDir) {
		log(`checks.json per scenario in ${options.outputDir}/<set>${authorization ? " and /authorization" : ""}`);
	}
	reportExpectedFailures(runs);
	const failed = [...runs].some(([set, results]) => results.some((result) => isCountedFailure(set, result)));
	return failed || broken || authorization?.failed ? 1 : 0;
}

/**
 * Whether this run includes the authorization-server scenarios, saying why
 * not when it does not: they need the gateway's authorization server, and a
 * run of one scenario by name is about that scenario alone.
 */
function authorizationApplies(): boolean {
	if (options.direct)
		log("the authorization-server scenarios do not apply with --direct (the reference has no authorization server)");
	else if (options.scenario) log("the authorization-server scenarios are not run with --scenario");
	else if (!options.authorization) log("the authorization-server scenarios are not run (--no-authorization)");
	return !options.direct && !options.scenario && options.authorization;
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
