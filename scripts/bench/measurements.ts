/**
 * The measured rounds: the sessions that live through the run, the warm-up,
 * and per round (targets in an order rotated by round) tools/call latency,
 * the same call in both eras, throughput with its CPU time, session setup,
 * a 64 KiB result and progress streaming.
 */

import { performance } from "node:perf_hooks";
import { delay, groupCpuMs } from "../processes.ts";
import { measureConnectorRound, newConnectorResults, warmUpConnectorStage } from "./connector.ts";
import { resetUpstreamLog, upstreamLog } from "./gateway-admin.ts";
import { measureGuardsRound, newGuardsResults, warmUpGuardsStage } from "./guards.ts";
import {
	addDifference,
	durableObjectRequests,
	modernUpstreamCounts,
	RawClient,
	resetModernUpstreamCounts,
} from "./modern.ts";
import { measurePersonRound, newPersonResults, openPersonClients } from "./person.ts";
import { CALL_TIMEOUT_MS, CONCURRENCIES, OPEN_PARALLELISM, PLAN, QUICK } from "./plan.ts";
import { measurePolicyRound, newPolicyResults, warmUpPolicyStage } from "./policy.ts";
import { percentile, rate } from "./report-format.ts";
import {
	type ConnectorResults,
	type CpuUse,
	type GuardsResults,
	MODERN_TARGET_IDS,
	type ModernResults,
	type ModernTargetId,
	PERSON_TARGET_IDS,
	type PersonResults,
	type PersonTargetId,
	type PolicyResults,
	TARGET_IDS,
	type TargetId,
	type TelemetryResults,
	type ThroughputCell,
	type UpstreamLog,
} from "./results.ts";
import { log } from "./run-log.ts";
import {
	blob,
	byModernTarget,
	byTarget,
	echo,
	mapBounded,
	openListedSession,
	progress,
	rotated,
	runThroughput,
	type Session,
	setupOnce,
} from "./sessions.ts";
import type { Targets } from "./targets.ts";
import { measureTelemetryRound, newTelemetryResults, warmUpTelemetryStage } from "./telemetry.ts";

/** What the rounds collect, per target; durations in ms. */
export interface Samples {
	latency: Record<TargetId, number[]>;
	modern: ModernResults;
	person: PersonResults | { error: string };
	policy: PolicyResults | { error: string };
	guards: GuardsResults | { error: string };
	telemetry: TelemetryResults | { error: string };
	connectors: ConnectorResults | { error: string };
	setup: Record<TargetId, number[]>;
	blobs: Record<TargetId, number[]>;
	progressFirst: Record<TargetId, number[]>;
	progressTotal: Record<TargetId, number[]>;
	cells: ThroughputCell[];
	cpu: Record<TargetId, CpuUse>;
	setupLog: Record<TargetId, UpstreamLog>;
}

export function newSamples(t: Targets): Samples {
	const cells: ThroughputCell[] = [];
	for (const sessions of [1, PLAN.poolSize]) {
		for (const concurrency of CONCURRENCIES) {
			cells.push({ sessions, concurrency, results: byTarget(() => ({ calls: 0, ms: 0, perRound: [] })) });
		}
	}
	return {
		latency: byTarget(() => []),
		modern: {
			protocol: t.modernProtocol,
			latency: byModernTarget(() => []),
			durableObjectRequests: byModernTarget(() => ({})),
			upstreamRequests: byModernTarget(() => ({})),
		},
		person: newPersonResults(t.person),
		policy: newPolicyResults(t.policy),
		guards: newGuardsResults(t.guards),
		telemetry: newTelemetryResults(t.telemetry),
		connectors: newConnectorResults(t.connectors),
		setup: byTarget(() => []),
		blobs: byTarget(() => []),
		progressFirst: byTarget(() => []),
		progressTotal: byTarget(() => []),
		cells,
		cpu: byTarget<CpuUse>(() => ({ calls: 0, upstreamMs: 0, runtimeMs: 0, clientMs: 0 })),
		setupLog: byTarget<UpstreamLog>(() => ({ sessions: 0, requests: 0, byKind: {} })),
	};
}

/** The sessions that live through the run: one per target, a pool per target, and a raw client per 2026-07-28 target. */
export interface LiveSessions {
	mainOf(t: TargetId): Session;
	pools: Record<TargetId, Session[]>;
	raw: Record<ModernTargetId, RawClient>;
	/** The per-person stage's clients; null when the stage could not be set up. */
	person: Record<PersonTargetId, RawClient> | null;
}

export async function openLiveSessions(t: Targets): Promise<LiveSessions> {
	log(`opening sessions: 1 + ${PLAN.poolSize} per target...`);
	const mains = byTarget<Session | undefined>(() => undefined);
	const pools = byTarget<Session[]>(() => []);
	for (const id of TARGET_IDS) {
		mains[id] = await openListedSession(t.targets[id]);
		pools[id] = await mapBounded(Array.from({ length: PLAN.poolSize }), OPEN_PARALLELISM, () =>
			openListedSession(t.targets[id]),
		);
	}
	const raw = {} as Record<ModernTargetId, RawClient>;
	for (const id of MODERN_TARGET_IDS) raw[id] = await RawClient.open(t.modernTargets[id], CALL_TIMEOUT_MS);
	const mainOf = (id: TargetId): Session => {
		const session = mains[id];
		if (!session) throw new Error(`no long-lived session for ${id}`);
		return session;
	};
	return { mainOf, pools, raw, person: await openPersonClients(t.person) };
}

export async function warmUp(t: Targets, live: LiveSessions): Promise<void> {
	log("warming up...");
	for (const id of MODERN_TARGET_IDS) {
		for (let i = 0; i < PLAN.warmupCalls; i++) await live.raw[id].echo();
	}
	for (const id of live.person ? PERSON_TARGET_IDS : []) {
		for (let i = 0; i < PLAN.warmupCalls; i++) await live.person?.[id].echo();
	}
	await warmUpPolicyStage(t.policy);
	await warmUpGuardsStage(t.guards);
	await warmUpTelemetryStage(t.telemetry);
	await warmUpConnectorStage(t.connectors);
	for (const id of TARGET_IDS) {
		for (let i = 0; i < PLAN.warmupCalls; i++) await echo(live.mainOf(id));
		await runThroughput(live.pools[id], 16, QUICK ? 100 : 300);
		await blob(live.mainOf(id));
		await progress(live.mainOf(id));
		await setupOnce(t.targets[id]);
	}
}

/** One round of every measurement, the targets in an order rotated by `round`. */
export async function measureRound(t: Targets, live: LiveSessions, samples: Samples, round: number): Promise<void> {
	const roundStart = performance.now();
	const order = rotated(TARGET_IDS, round);
	await resetUpstreamLog(t.upstreamUrl); // It records every request: keep the upstream's memory flat.
	await measureLatency(live, samples, order);
	await measureModernLatency(t, live, samples, round);
	await measurePersonRound(t.gateway.url, t.person, live.person, samples.person, round);
	await measurePolicyRound(t.policy, samples.policy, round);
	await measureGuardsRound(t.guards, samples.guards, round, t.cpuGroups.runtime.server);
	await measureTelemetryRound(t.telemetry, samples.telemetry, round);
	await measureConnectorRound(t.connectors, samples.connectors, round);
	await measureThroughput(t, live, samples, order);
	await measureSetup(t, samples, order);
	await measureBlobs(live, samples, order);
	await measureProgress(live, samples, order);
	const summary = [
		...TARGET_IDS.map((id) => `${id} p50 ${percentile(samples.latency[id], 50).toFixed(2)} ms`),
		...(["statelessFloor", "stateless", "legacyGateway"] as const).map(
			(id) => `${id} p50 ${percentile(samples.modern.latency[id], 50).toFixed(2)} ms`,
		),
		...("error" in samples.person
			? []
			: [`personOAuth p50 ${percentile(samples.person.latency.personOAuth, 50).toFixed(2)} ms`]),
		...policySummary(samples.policy),
		...guardsSummary(samples.guards),
		...telemetrySummary(samples.telemetry),
		...connectorSummary(samples.connectors),
	].join(", ");
	log(
		`round ${round + 1}/${PLAN.rounds} done in ${((performance.now() - roundStart) / 1000).toFixed(1)} s (${summary})`,
	);
}

/** The policy stage's p50s so far, for the round's log line. */
function policySummary(policy: PolicyResults | { error: string }): string[] {
	if ("error" in policy) return [];
	const p50 = (id: "plain" | "policy") =>
		percentile(
			policy.rounds.flatMap((round) => round[id]),
			50,
		).toFixed(2);
	return [`no policy p50 ${p50("plain")} ms`, `one policy p50 ${p50("policy")} ms`];
}

/** The guards stage's p50s so far, for the round's log line. */
function guardsSummary(guards: GuardsResults | { error: string }): string[] {
	if ("error" in guards) return [];
	const p50 = (id: "blobPlain" | "blobGuarded" | "echoPlain" | "echoConfirmed") =>
		percentile(
			guards.rounds.flatMap((round) => round[id]),
			50,
		).toFixed(2);
	return [
		`64 KiB unguarded p50 ${p50("blobPlain")} ms`,
		`guarded p50 ${p50("blobGuarded")} ms`,
		`echo p50 ${p50("echoPlain")} ms`,
		`confirmed p50 ${p50("echoConfirmed")} ms`,
	];
}

/** The telemetry stage's p50s so far, for the round's log line. */
function telemetrySummary(telemetry: TelemetryResults | { error: string }): string[] {
	if ("error" in telemetry) return [];
	const p50 = (id: "exportOn" | "exportOff") =>
		percentile(
			telemetry.rounds.flatMap((round) => round[id]),
			50,
		).toFixed(2);
	return [`export off p50 ${p50("exportOff")} ms`, `export on p50 ${p50("exportOn")} ms`];
}

/** The connector stage's p50s so far, for the round's log line. */
function connectorSummary(connectors: ConnectorResults | { error: string }): string[] {
	if ("error" in connectors) return [];
	const later = connectors.stdio.sessions.flatMap((session) => session.laterMs);
	const first = connectors.stdio.sessions.map((session) => session.initializeMs + session.firstCallMs);
	return [
		`by URL p50 ${percentile(connectors.latency.byUrl, 50).toFixed(2)} ms`,
		`connector p50 ${percentile(connectors.latency.connector, 50).toFixed(2)} ms`,
		`stdio first call p50 ${percentile(first, 50).toFixed(1)} ms, later p50 ${percentile(later, 50).toFixed(2)} ms`,
	];
}

/** tools/call echo at concurrency 1 on each target's long-lived session. */
async function measureLatency(live: LiveSessions, samples: Samples, order: TargetId[]): Promise<void> {
	for (const id of order) {
		const session = live.mainOf(id);
		for (let i = 0; i < PLAN.latencyCalls; i++) {
			const start = performance.now();
			await echo(session);
			samples.latency[id].push(performance.now() - start);
		}
	}
}

/** The same call in both eras against the SDK v2 upstream, with the counters read around each window. */
async function measureModernLatency(t: Targets, live: LiveSessions, samples: Samples, round: number): Promise<void> {
	const { modern } = samples;
	for (const id of rotated(MODERN_TARGET_IDS, round)) {
		await resetModernUpstreamCounts(t.modernUpstreamUrl, CALL_TIMEOUT_MS);
		const objectsBefore = await durableObjectRequests(t.gateway.url, CALL_TIMEOUT_MS);
		for (let i = 0; i < PLAN.latencyCalls; i++) {
			const start = performance.now();
			await live.raw[id].echo();
			modern.latency[id].push(performance.now() - start);
		}
		const objectsAfter = await durableObjectRequests(t.gateway.url, CALL_TIMEOUT_MS);
		addDifference(modern.durableObjectRequests[id], objectsBefore, objectsAfter);
		addDifference(modern.upstreamRequests[id], {}, await modernUpstreamCounts(t.modernUpstreamUrl, CALL_TIMEOUT_MS));
	}
}

/** Every throughput cell (sessions × concurrency) on every target, with the CPU time it took. */
async function measureThroughput(t: Targets, live: LiveSessions, samples: Samples, order: TargetId[]): Promise<void> {
	const upstream = t.cpuGroups.upstream;
	for (const cell of samples.cells) {
		for (const id of order) {
			const sessions = cell.sessions === 1 ? [live.mainOf(id)] : live.pools[id];
			const group = t.cpuGroups.runtime[id];
			const cpuBefore = groupCpuMs([upstream, group ?? upstream]);
			const clientBefore = process.cpuUsage();
			const result = await runThroughput(sessions, cell.concurrency, PLAN.throughputMs);
			const clientUse = process.cpuUsage(clientBefore);
			const cpuAfter = groupCpuMs([upstream, group ?? upstream]);
			if (cpuBefore && cpuAfter) {
				const used = (g: number) => (cpuAfter.get(g) ?? 0) - (cpuBefore.get(g) ?? 0);
				const cpu = samples.cpu[id];
				cpu.calls += result.calls;
				cpu.upstreamMs += used(upstream);
				cpu.runtimeMs += group === null ? 0 : used(group);
				cpu.clientMs += (clientUse.user + clientUse.system) / 1000;
			}
			const total = cell.results[id];
			total.calls += result.calls;
			total.ms += result.ms;
			total.perRound.push(rate(result));
		}
	}
}

/** Session setup, and what each setup asked of the upstream (its request log). */
async function measureSetup(t: Targets, samples: Samples, order: TargetId[]): Promise<void> {
	for (const id of order) {
		await resetUpstreamLog(t.upstreamUrl);
		for (let i = 0; i < PLAN.setupSessions; i++) samples.setup[id].push(await setupOnce(t.targets[id]));
		await delay(200); // The gateway closes an upstream session once the client's GET stream has ended.
		const entries = await upstreamLog(t.upstreamUrl);
		const setupLog = samples.setupLog[id];
		setupLog.sessions += PLAN.setupSessions;
		setupLog.requests += entries.length;
		for (const entry of entries) {
			const kind = entry.method === "POST" ? (entry.body?.method ?? "POST (other)") : entry.method;
			setupLog.byKind[kind] = (setupLog.byKind[kind] ?? 0) + 1;
		}
	}
}

async function measureBlobs(live: LiveSessions, samples: Samples, order: TargetId[]): Promise<void> {
	for (const id of order) {
		const session = live.mainOf(id);
		for (let i = 0; i < PLAN.blobCalls; i++) {
			const start = performance.now();
			await blob(session);
			samples.blobs[id].push(performance.now() - start);
		}
	}
}

async function measureProgress(live: LiveSessions, samples: Samples, order: TargetId[]): Promise<void> {
	for (const id of order) {
		for (let i = 0; i < PLAN.progressCalls; i++) {
			const { first, total } = await progress(live.mainOf(id));
			if (Number.isFinite(first)) samples.progressFirst[id].push(first);
			samples.progressTotal[id].push(total);
		}
	}
}
