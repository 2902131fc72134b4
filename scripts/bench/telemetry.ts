/**
 * The telemetry stage of `npm run bench`: what exporting traces and metrics costs a `tools/call`.
 * The goal: a tool call's latency with export on is within noise of export off.
 *
 * The gateway's build (the one the run measures, without the module that counts Durable Object
 * requests) runs three more times under `wrangler dev`: once with OTEL_EXPORTER_OTLP_ENDPOINT set,
 * twice without. Export goes to the bench's OTLP sink (otlp-sink.ts), a Node process that drains
 * each request and answers 200, decoding nothing: the figure is what the gateway pays, not what a
 * collector pays to read. The telemetry settings are the deployment defaults (spans coalesced per
 * OTEL_BSP_SCHEDULE_DELAY and OTEL_BSP_MAX_EXPORT_BATCH_SIZE, metrics every 60 s), all spans sampled.
 *
 * Four 2025-11-25 sessions through `/mcp/bench` with the same raw client: export on, export off,
 * a second session at the export-off process (the baseline against itself in one process), and
 * one at the third process (the baseline against itself between processes: on and off are two
 * processes, so that is the noise that counts). Calls alternate one by one between the four,
 * their order rotated each call, so that drift of the machine falls on all alike.
 */

import { copyFileSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { z } from "zod";
import { freePort, HOST, type Processes, waitForLine } from "../processes.ts";
import { ROOT, startWranglerDev } from "../wrangler-dev.ts";
import { admin, type Gateway } from "./gateway-admin.ts";
import { alternatingEchoes, LEGACY_VERSION, RawClient, type RawTarget } from "./modern.ts";
import { CALL_TIMEOUT_MS, PLAN } from "./plan.ts";
import { TELEMETRY_TARGET_IDS, type TelemetryResults, type TelemetryTargetId } from "./results.ts";
import { log } from "./run-log.ts";
import type { RunState } from "./targets.ts";

/** The export-on gateway's OTEL_* variables beyond the endpoint: the defaults, said where they matter. */
export const EXPORT_VARIABLES = {
	// The spec's default interval: what a deployment would do.
	OTEL_METRIC_EXPORT_INTERVAL: "60000",
} as const;

/** The stage's clients and the sink's address, or why it could not be set up. */
export type TelemetryStage =
	| { clients: Record<TelemetryTargetId, RawClient>; sinkUrl: string; variables: Record<string, string> }
	| { error: string };

const SinkStatsSchema = z.object({
	requests: z.number(),
	bytes: z.number(),
	traces: z.number(),
	metrics: z.number(),
});

/** Starts `wrangler dev` on `entry` with `vars`, registers the bench upstream and a key. */
async function gatewayWith(
	procs: Processes,
	state: RunState,
	config: string,
	entry: string,
	name: string,
	upstreamUrl: string,
	vars: Record<string, string>,
): Promise<{ gateway: Gateway; key: string }> {
	const started = await startWranglerDev(procs, {
		name,
		config,
		entry,
		persistTo: join(state.tmp, `${name.replace(/\W+/g, "-")}-state`),
		env: state.env,
		extraArgs: [
			"--env-file",
			state.envFile,
			...Object.entries(vars).flatMap(([variable, value]) => ["--var", `${variable}:${value}`]),
		],
	});
	const gateway = { url: started.url, adminToken: state.adminToken };
	await admin(gateway, "PUT", "/servers/bench", { url: upstreamUrl });
	const { key } = await admin<{ key: string }>(gateway, "POST", "/keys", {
		name: "bench-telemetry",
		servers: ["bench"],
	});
	return { gateway, key };
}

/**
 * The sink, the three gateway processes of `entry` (a built gateway) and the four sessions.
 * `extraVariables` adds OTEL_* settings to the export-on gateway (for a look at one setting).
 */
export async function setUpTelemetryStage(
	procs: Processes,
	state: RunState,
	entry: string,
	upstreamUrl: string,
	extraVariables: Record<string, string> = {},
): Promise<TelemetryStage> {
	const started = performance.now();
	// A copy of the run's configuration, taken now: the whole run rewrites its own for the counting module.
	const config = join(state.tmp, "wrangler-telemetry.toml");
	copyFileSync(state.gatewayConfig, config);
	const sinkPort = await freePort();
	const sink = procs.spawn(
		"OTLP sink",
		process.execPath,
		[join(ROOT, "scripts", "bench", "otlp-sink.ts"), String(sinkPort)],
		{
			cwd: ROOT,
		},
	);
	await waitForLine(sink, /listening at/, 20_000);
	const sinkUrl = `http://${HOST}:${sinkPort}`;
	const variables = { OTEL_EXPORTER_OTLP_ENDPOINT: sinkUrl, ...EXPORT_VARIABLES, ...extraVariables };
	const [on, off, offElsewhere] = await Promise.all([
		gatewayWith(procs, state, config, entry, "gateway, export on", upstreamUrl, variables),
		gatewayWith(procs, state, config, entry, "gateway, export off", upstreamUrl, {}),
		gatewayWith(procs, state, config, entry, "gateway, export off elsewhere", upstreamUrl, {}),
	]);
	const target = (id: TelemetryTargetId, at: { gateway: Gateway; key: string }): RawTarget => ({
		id,
		url: `${at.gateway.url}/mcp/bench`,
		era: LEGACY_VERSION,
		headers: { authorization: `Bearer ${at.key}` },
	});
	const clients: Record<TelemetryTargetId, RawClient> = {
		exportOn: await RawClient.open(target("exportOn", on), CALL_TIMEOUT_MS),
		exportOff: await RawClient.open(target("exportOff", off), CALL_TIMEOUT_MS),
		exportOffAgain: await RawClient.open(target("exportOffAgain", off), CALL_TIMEOUT_MS),
		exportOffElsewhere: await RawClient.open(target("exportOffElsewhere", offElsewhere), CALL_TIMEOUT_MS),
	};
	log(
		`telemetry stage: three gateway processes and the OTLP sink ready (${(performance.now() - started).toFixed(0)} ms)`,
	);
	return { clients, sinkUrl, variables };
}

export function newTelemetryResults(stage: TelemetryStage): TelemetryResults | { error: string } {
	if ("error" in stage) return stage;
	const { OTEL_EXPORTER_OTLP_ENDPOINT: _sink, ...variables } = stage.variables;
	return { variables, rounds: [], sink: { requests: 0, bytes: 0, traces: 0, metrics: 0 } };
}

export async function warmUpTelemetryStage(stage: TelemetryStage): Promise<void> {
	if ("error" in stage) return;
	for (let i = 0; i < PLAN.warmupCalls; i++) {
		for (const id of TELEMETRY_TARGET_IDS) await stage.clients[id].echo();
	}
}

/** PLAN.latencyCalls calls per session, alternating between the sessions call by call. */
export async function measureTelemetryRound(
	stage: TelemetryStage,
	results: TelemetryResults | { error: string },
	round: number,
): Promise<void> {
	if ("error" in stage || "error" in results) return;
	const samples = await alternatingEchoes(stage.clients, TELEMETRY_TARGET_IDS, round, PLAN.latencyCalls);
	results.rounds.push(samples);
	results.sink = SinkStatsSchema.parse(await (await fetch(`${stage.sinkUrl}/stats`)).json());
}

export async function closeTelemetryStage(stage: TelemetryStage): Promise<void> {
	if ("error" in stage) return;
	for (const client of Object.values(stage.clients)) await client.close();
}
