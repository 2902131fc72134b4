/**
 * `npm run bench`: the gateway's cost against talking to the upstream
 * directly and against the thinnest Worker → Durable Object passthrough on the
 * same runtime (the floor, scripts/bench/floor/), in one run on one machine; and its
 * 2026-07-28 stateless path against a Worker-only passthrough
 * (scripts/bench/floor-stateless/), the same upstream directly, and the 2025 path
 * through a SessionDO, all against one SDK v2 upstream that speaks both eras.
 *
 * Builds the gateway and both floors (`wrangler deploy --dry-run`), starts the
 * SDK upstreams (scripts/bench/upstream.ts, scripts/bench/modern-upstream.ts)
 * and the bundles under `wrangler dev --no-bundle` (workerd) on free loopback
 * ports with temporary state and secrets (the gateway behind a module that
 * counts its Durable Object requests, scripts/bench/counting-entry.ts), then
 * measures interleaved rounds of: tools/call latency at concurrency 1 (2025
 * sessions through the SDK client, then both eras with raw `fetch`,
 * scripts/bench/modern.ts), throughput at several concurrencies over one
 * session and over many, session setup, a 64 KiB result and progress
 * streaming, then how long a client that only listens keeps its session's
 * Durable Object active; and, on the stateless path, 2026-07-28 calls to an
 * upstream that takes each caller's own OAuth token against the operator's
 * header to the same upstream, its key connected once through the connect
 * link (scripts/bench/person.ts); and tools/call with one tool policy against
 * none, the calls alternating between the sessions (scripts/bench/policy.ts);
 * and a 64 KiB result with a response guard against without, and a call under
 * a confirm policy whose question is always accepted against without
 * (scripts/bench/guards.ts); and tools/call with OTLP export on against off, at gateway processes of their
 * own exporting to a sink that only drains (scripts/bench/telemetry.ts); and
 * tools/call to the upstream registered by URL against through a connector
 * (`mcpgw connect --upstream`), and a stdio server's first call in a session
 * (the connector starts its child) against later ones (scripts/bench/connector.ts).
 * Reads the gateway's own counters (admin session-stats, registry-stats), its
 * Durable Object requests and the bundle size, and writes docs/benchmarks.md and docs/benchmarks-latency.svg. Before
 * any server starts, it runs the per-stage microbenchmark of one request's
 * plain code (scripts/bench/stages.ts), then the tool-search figures over their own
 * catalog's servers (scripts/bench/tool-search.ts, written to docs/tool-search.md), then the code-mode
 * figures at a gateway of their own (scripts/bench/code-mode.ts, written to docs/code-mode.md).
 *
 * The parts: what the run does (plan.ts), its targets started and registered
 * (targets.ts), the sessions and calls (sessions.ts, modern.ts for raw
 * 2026-07-28 clients, person.ts for the per-person credentials stage,
 * policy.ts for the policy stage, guards.ts for the guards stage, telemetry.ts for the telemetry stage, connector.ts for the
 * connector stage), the measured rounds (measurements.ts), what
 * sessions cost (costs.ts, idle-listener.ts, from the gateway's counters in
 * gateway-admin.ts), the per-stage microbenchmark (stages.ts), and the
 * report (report.ts and its sections).
 *
 *   npm run bench              full run (a few minutes), writes docs/
 *   npm run bench -- --quick   smoke run (under a minute), report in a temp dir, docs/ untouched
 */

import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { groupCpuMs, installShutdown, Processes } from "../processes.ts";
import { measureCodeMode } from "./code-mode-measure.ts";
import { closeConnectorStage } from "./connector.ts";
import { busySessions, startLongRun } from "./costs.ts";
import { closeGuardsStage } from "./guards.ts";
import { idleListeners } from "./idle-listener.ts";
import { measureRound, newSamples, openLiveSessions, type Samples, warmUp } from "./measurements.ts";
import { BUSY_CONCURRENCY, MD_NAME, OUT_DIR, PLAN, QUICK, RAW_PATH, SVG_NAME } from "./plan.ts";
import { closePolicyStage } from "./policy.ts";
import { renderMarkdown, renderSvg } from "./report.ts";
import { CODE_MODE_DOC, writeCodeModeSection } from "./report-code-mode.ts";
import { TOOL_SEARCH_DOC, toolSearchRunLine, writeMeasuredSection } from "./report-tool-search.ts";
import type { BenchResults } from "./results.ts";
import { countListenerWarnings, describe, log, logWhatTheRunSaw, warn, warnings } from "./run-log.ts";
import { runMeta } from "./run-meta.ts";
import { closeAllSessions } from "./sessions.ts";
import { measureStages } from "./stages.ts";
import { startTargets, type Targets } from "./targets.ts";
import { closeTelemetryStage } from "./telemetry.ts";
import { measureToolSearch } from "./tool-search-measure.ts";

const procs = new Processes();
/** Closes the benchmark's clients, then stops the gateway, the floor and the upstream (see installShutdown). */
const { shutdown } = installShutdown(procs, "bench", () => {
	closeAllSessions();
	return undefined;
});

async function main(): Promise<void> {
	const started = performance.now();
	const loadAtStart = loadavg();
	countListenerWarnings();
	log(`${QUICK ? "quick" : "full"} run; ${cpus().length} cores, Node ${process.version}`);
	const watchdog = startWatchdog();
	const stages = await measureStagesFirst();
	await measureToolSearchFirst();
	await measureCodeModeFirst();
	const targets = await startTargets(procs);
	const measured = await measure(targets);
	logWhatTheRunSaw();
	const results: BenchResults = {
		quick: QUICK,
		meta: runMeta(started, loadAtStart),
		latency: measured.samples.latency,
		setup: measured.samples.setup,
		blob: measured.samples.blobs,
		progressFirst: measured.samples.progressFirst,
		progressTotal: measured.samples.progressTotal,
		throughput: measured.samples.cells,
		modern: measured.samples.modern,
		person: measured.samples.person,
		policy: measured.samples.policy,
		guards: measured.samples.guards,
		telemetry: measured.samples.telemetry,
		connectors: measured.samples.connectors,
		costs: measured.costs,
		idle: measured.idle,
		cpu: groupCpuMs([targets.cpuGroups.upstream]) !== null ? measured.samples.cpu : null,
		setupUpstream: measured.samples.setupLog,
		bundle: targets.bundle,
		stages,
		warnings,
	};
	writeReport(results);
	log(`done in ${((performance.now() - started) / 1000).toFixed(0)} s`);
	clearTimeout(watchdog);
}

/** Stops the run when it takes far longer than it should (an overloaded machine, a stuck server). */
function startWatchdog(): NodeJS.Timeout {
	const watchdog = setTimeout(
		() =>
			void shutdown(
				1,
				`bench: did not finish within ${PLAN.watchdogMs / 60_000} min; stopping. Is the machine overloaded or a server stuck?`,
			),
		PLAN.watchdogMs,
	);
	watchdog.unref();
	return watchdog;
}

/** On a quiet machine, before any server starts. A failure is reported, not fatal: src/ may be mid-edit. */
async function measureStagesFirst(): Promise<BenchResults["stages"]> {
	log("per-stage cost of one request's plain code (scripts/bench/stages.ts)...");
	const stagesStart = performance.now();
	const stages = await measureStages({ quick: QUICK }).catch((error: unknown) => {
		warn(`the per-stage microbenchmark failed: ${describe(error)}`);
		return { error: describe(error) };
	});
	log(`per-stage microbenchmark done in ${((performance.now() - stagesStart) / 1000).toFixed(1)} s`);
	return stages;
}

/**
 * The tool-search figures (scripts/bench/tool-search.ts), before the gateway starts: they need only
 * the catalog's own servers. Written to docs/tool-search.md (a quick run: next to its report), not to
 * benchmarks.md; a failure is reported, not fatal.
 */
async function measureToolSearchFirst(): Promise<void> {
	log("tool search: tools/list bytes, full and search mode, and retrieval quality (scripts/bench/tool-search.ts)...");
	try {
		const figures = await measureToolSearch({ quick: QUICK });
		const path = QUICK ? join(OUT_DIR, "tool-search.md") : TOOL_SEARCH_DOC;
		mkdirSync(OUT_DIR, { recursive: true });
		writeMeasuredSection(figures, toolSearchRunLine(), path);
		log(
			`tool search: ${figures.tools} tools, tools/list ${figures.listBytes.full} → ${figures.listBytes.search} bytes; recall@5 ${(figures.recallAt5 * 100).toFixed(1)} %, MRR ${figures.mrr.toFixed(3)}; wrote ${path}`,
		);
	} catch (error) {
		warn(`the tool-search measurement failed: ${describe(error)}`);
	}
}

/**
 * The code-mode figures (scripts/bench/code-mode.ts), after tool search and before the other targets
 * start: a gateway of their own (stopped after) with the demo servers and server-everything. Written to
 * docs/code-mode.md (a quick run: next to its report); a failure is reported, not fatal.
 */
async function measureCodeModeFirst(): Promise<void> {
	log("code mode: bytes and round trips of three tasks in full, search and code mode (scripts/bench/code-mode.ts)...");
	try {
		const figures = await measureCodeMode(procs, { quick: QUICK, log });
		const path = QUICK ? join(OUT_DIR, "code-mode.md") : CODE_MODE_DOC;
		mkdirSync(OUT_DIR, { recursive: true });
		writeCodeModeSection(figures, toolSearchRunLine(), path);
		const { direct, program } = figures.latency;
		log(
			`code mode: ${figures.tasks.length} tasks measured; one inner call p50 ${program.p50.toFixed(1)} ms against ${direct.p50.toFixed(1)} ms direct; wrote ${path}`,
		);
	} catch (error) {
		warn(`the code-mode measurement failed: ${describe(error)}`);
	}
}

/** Everything measured against the running targets: the rounds, then what sessions cost. */
async function measure(
	targets: Targets,
): Promise<{ samples: Samples; costs: BenchResults["costs"]; idle: BenchResults["idle"] }> {
	const { gateway } = targets;
	const live = await openLiveSessions(targets);
	await warmUp(targets, live);
	const longRun = await startLongRun(gateway, live);
	const samples = newSamples(targets);
	for (let round = 0; round < PLAN.rounds; round++) await measureRound(targets, live, samples, round);
	const longRunCosts = await longRun.stop();

	log(
		`idle listener: a session per endpoint that only listens on its GET stream for ${PLAN.idleListenMs / 1000} s, alongside the busy sessions...`,
	);
	// A listener costs the machine next to nothing and its figure is wall time, so it runs alongside.
	const idleRun = idleListeners(gateway, targets.targets, PLAN.idleListenMs);
	log(
		`cost of a busy session: ${PLAN.busyCalls} calls (and at least ${PLAN.busyMinMs / 1000} s) at concurrency ${BUSY_CONCURRENCY}...`,
	);
	const busy = await busySessions(gateway, targets.targets);
	const idle = await idleRun;
	for (const client of Object.values(live.raw)) await client.close();
	await closePolicyStage(targets.policy);
	await closeGuardsStage(targets.guards);
	await closeTelemetryStage(targets.telemetry);
	await closeConnectorStage(targets.connectors);
	return { samples, costs: { busy, longRun: longRunCosts }, idle };
}

function writeReport(results: BenchResults): void {
	const markdown = renderMarkdown(results, SVG_NAME);
	mkdirSync(OUT_DIR, { recursive: true });
	writeFileSync(join(OUT_DIR, MD_NAME), markdown);
	writeFileSync(join(OUT_DIR, SVG_NAME), renderSvg(results));
	writeFileSync(RAW_PATH, JSON.stringify(results));
	console.log(`\n${markdown}`);
	log(`wrote ${join(OUT_DIR, MD_NAME)} and ${SVG_NAME}; raw samples in ${RAW_PATH}`);
}

try {
	await main();
	await shutdown(0);
} catch (error) {
	// A bundle build is the only child meant to exit early; any other one that did is the likely cause.
	const exited = procs.exited().filter((report) => !report.includes("wrangler deploy --dry-run"));
	const cause = exited.length > 0 ? `\nbench: a child process had exited: ${exited.join("\n")}` : "";
	await shutdown(1, `bench: failed: ${describe(error)}${cause}`);
}
