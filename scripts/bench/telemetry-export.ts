/**
 * The telemetry stage of `npm run bench` on its own (scripts/bench/telemetry.ts), for a machine too
 * busy for the whole run or a look after a change of the telemetry path:
 *
 *   node scripts/bench/telemetry-export.ts            the full run's rounds and counts
 *   node scripts/bench/telemetry-export.ts --quick    the quick run's
 *
 * Builds the gateway, starts the bench's 2025 upstream and the stage's sink and three gateway
 * processes (nothing else of the whole run), measures only the stage's rounds and prints its
 * section of the report (report-telemetry.ts); writes only its raw samples, to a temporary file. BENCH_OTEL_VARS (`NAME=value,…`)
 * adds OTEL_* settings to the exporting gateway, e.g. `OTEL_BSP_SCHEDULE_DELAY=0` to export at
 * every request's end.
 */

import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { installShutdown, Processes } from "../processes.ts";
import { buildWorker, ROOT } from "../wrangler-dev.ts";
import { PLAN, QUICK } from "./plan.ts";
import { telemetrySection } from "./report-telemetry.ts";
import { describe, log } from "./run-log.ts";
import { prepareState, startUpstreamProcess } from "./targets.ts";
import {
	closeTelemetryStage,
	measureTelemetryRound,
	newTelemetryResults,
	setUpTelemetryStage,
	warmUpTelemetryStage,
} from "./telemetry.ts";

/** The stage's raw samples, for a closer look (never committed). */
const RAW_PATH = join(tmpdir(), `mcp-edge-gateway-bench-telemetry-${QUICK ? "quick" : "full"}.json`);

const procs = new Processes();
const { shutdown } = installShutdown(procs, "bench-telemetry");

/** BENCH_OTEL_VARS as variables; only OTEL_* names are taken. */
function extraVariables(): Record<string, string> {
	const pairs = (process.env.BENCH_OTEL_VARS ?? "").split(",").filter((pair) => pair.trim() !== "");
	const variables: Record<string, string> = {};
	for (const pair of pairs) {
		const at = pair.indexOf("=");
		const name = pair.slice(0, at).trim();
		if (at <= 0 || !name.startsWith("OTEL_")) throw new Error(`BENCH_OTEL_VARS: expected OTEL_NAME=value, got ${pair}`);
		variables[name] = pair.slice(at + 1).trim();
	}
	return variables;
}

try {
	const started = performance.now();
	log(`telemetry stage alone, ${QUICK ? "quick" : "full"} counts: ${PLAN.rounds} rounds of ${PLAN.latencyCalls} calls`);
	const extra = extraVariables();
	const state = prepareState(procs);
	const [upstream, build] = await Promise.all([
		startUpstreamProcess(procs, "upstream", "upstream.ts"),
		buildWorker(procs, {
			name: "gateway",
			config: join(ROOT, "wrangler.toml"),
			outDir: join(state.tmp, "gateway-bundle"),
			env: state.env,
		}),
	]);
	const stage = await setUpTelemetryStage(procs, state, build.entry, upstream.url, extra);
	const results = newTelemetryResults(stage);
	await warmUpTelemetryStage(stage);
	for (let round = 0; round < PLAN.rounds; round++) {
		await measureTelemetryRound(stage, results, round);
		log(`round ${round + 1}/${PLAN.rounds} done`);
	}
	await closeTelemetryStage(stage);
	console.log(telemetrySection(results).join("\n"));
	writeFileSync(RAW_PATH, JSON.stringify(results));
	log(`raw samples in ${RAW_PATH}`);
	log(`done in ${((performance.now() - started) / 1000).toFixed(0)} s`);
	await shutdown(0);
} catch (error) {
	await shutdown(1, `bench-telemetry: failed: ${describe(error)}`);
}
