/**
 * What exporting telemetry costs a `tools/call` (issue 23, "Costs and limits": a tool call's
 * latency with export on is within noise of export off). A stage of its own, run alone:
 *
 *   node scripts/bench/telemetry-export.ts            the full run's rounds and counts
 *   node scripts/bench/telemetry-export.ts --quick    the quick run's
 *
 * One build of the gateway (`wrangler deploy --dry-run`) runs twice under `wrangler dev`: with
 * OTEL_EXPORTER_OTLP_ENDPOINT pointing at a local OTLP receiver (scripts/otlp-receiver.ts, its own
 * process) and without. The bench's 2025 upstream is registered at both. Three 2025-11-25 sessions
 * through `/mcp/bench` with the same raw client: export on, export off, a second session with export
 * off (the baseline against itself), and a session at a third process of the same build with export
 * off: the on and off gateways are two processes, so noise is judged both within one process and
 * between two. Calls alternate one
 * by one between the three, their order rotated each call, so that drift falls on all three alike.
 * Prints p50 and p99 of each and the ratios; writes nothing.
 */

import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { z } from "zod";
import { freePort, HOST, installShutdown, Processes, waitForLine } from "../processes.ts";
import { buildWorker, ROOT, startWranglerDev } from "../wrangler-dev.ts";
import { admin, type Gateway } from "./gateway-admin.ts";
import { LEGACY_VERSION, RawClient, type RawTarget } from "./modern.ts";
import { CALL_TIMEOUT_MS, PLAN, QUICK } from "./plan.ts";
import { ms, percentile } from "./report-format.ts";
import { describe, log } from "./run-log.ts";
import { rotated } from "./sessions.ts";
import { prepareState, startUpstreamProcess } from "./targets.ts";

const TARGET_IDS = ["exportOn", "exportOff", "exportOffAgain", "exportOffElsewhere"] as const;
type TargetId = (typeof TARGET_IDS)[number];
const LABELS: Record<TargetId, string> = {
	exportOn: "export on (OTLP/HTTP to a local receiver)",
	exportOff: "export off",
	exportOffAgain: "export off, a second session (noise)",
	exportOffElsewhere: "export off, a second gateway process (noise between processes)",
};
/** Calls per target before the measured rounds: isolates warm, caches filled. */
const WARM_UP_CALLS = QUICK ? 10 : 50;

const procs = new Processes();
const { shutdown } = installShutdown(procs, "bench-telemetry");

/** Starts the gateway build under `wrangler dev` with `extraVars`; registers the upstream and a key. */
async function gatewayWith(
	state: ReturnType<typeof prepareState>,
	entry: string,
	name: string,
	upstreamUrl: string,
	extraVars: Record<string, string>,
): Promise<{ gateway: Gateway; key: string }> {
	const vars = Object.entries(extraVars).flatMap(([variable, value]) => ["--var", `${variable}:${value}`]);
	const started = await startWranglerDev(procs, {
		name,
		config: state.gatewayConfig,
		entry,
		persistTo: join(state.tmp, `${name.replace(/\W+/g, "-")}-state`),
		env: state.env,
		extraArgs: ["--env-file", state.envFile, ...vars],
	});
	const gateway = { url: started.url, adminToken: state.adminToken };
	await admin(gateway, "PUT", "/servers/bench", { url: upstreamUrl });
	const { key } = await admin<{ key: string }>(gateway, "POST", "/keys", {
		name: "bench-telemetry",
		servers: ["bench"],
	});
	return { gateway, key };
}

const TracesSchema = z.array(z.object({ traceId: z.string(), spans: z.array(z.unknown()) }));

try {
	const started = performance.now();
	log(
		`telemetry export stage, ${QUICK ? "quick" : "full"} counts: ${PLAN.rounds} rounds of ${PLAN.latencyCalls} calls`,
	);
	const state = prepareState(procs);
	const receiverPort = await freePort();
	const receiver = procs.spawn(
		"OTLP receiver",
		process.execPath,
		[join(ROOT, "scripts", "otlp-receiver.ts"), String(receiverPort)],
		{
			cwd: ROOT,
		},
	);
	const [upstream, build] = await Promise.all([
		startUpstreamProcess(procs, "upstream", "upstream.ts"),
		buildWorker(procs, {
			name: "gateway",
			config: join(ROOT, "wrangler.toml"),
			outDir: join(state.tmp, "gateway-bundle"),
			env: state.env,
		}),
		waitForLine(receiver, /listening at/, 20_000),
	]);
	const receiverUrl = `http://${HOST}:${receiverPort}`;
	const [on, off, offElsewhere] = await Promise.all([
		gatewayWith(state, build.entry, "gateway, export on", upstream.url, {
			OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl,
			// Metrics at their spec default interval: what a deployment would do.
			OTEL_METRIC_EXPORT_INTERVAL: "60000",
		}),
		gatewayWith(state, build.entry, "gateway, export off", upstream.url, {}),
		gatewayWith(state, build.entry, "gateway, export off elsewhere", upstream.url, {}),
	]);
	const target = (id: TargetId, at: { gateway: Gateway; key: string }): RawTarget => ({
		// RawTarget's ids name the main run's targets; this stage's label is only for its messages.
		id: id as unknown as RawTarget["id"],
		url: `${at.gateway.url}/mcp/bench`,
		era: LEGACY_VERSION,
		headers: { authorization: `Bearer ${at.key}` },
	});
	const clients: Record<TargetId, RawClient> = {
		exportOn: await RawClient.open(target("exportOn", on), CALL_TIMEOUT_MS),
		exportOff: await RawClient.open(target("exportOff", off), CALL_TIMEOUT_MS),
		exportOffAgain: await RawClient.open(target("exportOffAgain", off), CALL_TIMEOUT_MS),
		exportOffElsewhere: await RawClient.open(target("exportOffElsewhere", offElsewhere), CALL_TIMEOUT_MS),
	};
	for (let i = 0; i < WARM_UP_CALLS; i++) for (const id of TARGET_IDS) await clients[id].echo();
	const samples: Record<TargetId, number[]> = {
		exportOn: [],
		exportOff: [],
		exportOffAgain: [],
		exportOffElsewhere: [],
	};
	let call = 0;
	for (let round = 0; round < PLAN.rounds; round++) {
		for (let i = 0; i < PLAN.latencyCalls; i++, call++) {
			for (const id of rotated(TARGET_IDS, call)) {
				const t0 = performance.now();
				await clients[id].echo();
				samples[id].push(performance.now() - t0);
			}
		}
		log(`round ${round + 1}/${PLAN.rounds} done`);
	}
	for (const id of TARGET_IDS) await clients[id].close();
	const traces = TracesSchema.parse(await (await fetch(`${receiverUrl}/traces`)).json());
	const spans = traces.reduce((sum, trace) => sum + trace.spans.length, 0);

	const p = (id: TargetId, q: number) => percentile(samples[id], q);
	const ratio = (a: TargetId, b: TargetId, q: number) => (p(a, q) / p(b, q)).toFixed(3);
	const lines = [
		"### Telemetry export: tools/call with export on and off",
		"",
		`${samples.exportOn.length} calls per target, 2025-11-25 sessions through /mcp/bench, alternating call by call.`,
		`The gateway with export on sent the receiver ${spans} spans in its last ${traces.length} traces (the receiver shows at most 50).`,
		"",
		"| target | p50 (ms) | p99 (ms) |",
		"| --- | ---: | ---: |",
		...TARGET_IDS.map((id) => `| ${LABELS[id]} | ${ms(p(id, 50))} | ${ms(p(id, 99))} |`),
		"",
		"| ratio | p50 | p99 |",
		"| --- | ---: | ---: |",
		`| export on / export off | ${ratio("exportOn", "exportOff", 50)} | ${ratio("exportOn", "exportOff", 99)} |`,
		`| export off again / export off (noise in one process) | ${ratio("exportOffAgain", "exportOff", 50)} | ${ratio("exportOffAgain", "exportOff", 99)} |`,
		`| export off elsewhere / export off (noise between processes) | ${ratio("exportOffElsewhere", "exportOff", 50)} | ${ratio("exportOffElsewhere", "exportOff", 99)} |`,
	];
	console.log(lines.join("\n"));
	log(`done in ${((performance.now() - started) / 1000).toFixed(0)} s`);
	await shutdown(0);
} catch (error) {
	await shutdown(1, `bench-telemetry: failed: ${describe(error)}`);
}
