/**
 * The report's Targets section: where each goal the gateway is held to stands
 * in this run (reported against, not asserted).
 */

import { activeMsPerIdleMinute, IDLE_GOAL_MS_PER_MINUTE, idleStatus } from "./report-costs.ts";
import {
	allowance,
	cellLabel,
	endpointName,
	kib,
	MET,
	ms,
	NOT_MET,
	per1000,
	percentile,
	perSecond,
	rate,
	ratio,
	seconds,
	serverCpuPerCall,
	signedMs,
} from "./report-format.ts";
import { countList, pathObjectRequests } from "./report-modern.ts";
import { PERSON_GOAL_PER_CALL, personObjectsPerCall } from "./report-person.ts";
import { comparePolicy, POLICY_QUANTILES } from "./report-policy.ts";
import { compareTelemetry, TELEMETRY_QUANTILES } from "./report-telemetry.ts";
import { type BenchResults, costWindows } from "./results.ts";

/** The hot path's targets (issue: "a hot path that costs what it did"), with nothing configured. */
const P50_OVER_FLOOR_MS = 1.5;
const CPU_OVER_FLOOR = 1.3;
const SETUP_OVER_FLOOR = 1.3;

export interface TargetStatus {
	target: string;
	figure: string;
	status: string;
}

/** Where each target of the benchmark issue stands in this run. */
export function evaluateTargets(results: BenchResults): TargetStatus[] {
	const m = results.meta;
	const out: TargetStatus[] = [];
	const p = <T extends string>(samples: Record<T, number[]>, t: T, q: number) => percentile(samples[t], q);

	const p50Delta = p(results.latency, "server", 50) - p(results.latency, "floor", 50);
	out.push({
		target: `tools/call p50 through /mcp/:server within ${P50_OVER_FLOOR_MS} ms of the floor`,
		figure: `${ms(p(results.latency, "server", 50))} ms vs ${ms(p(results.latency, "floor", 50))} ms (${signedMs(p50Delta)} ms)`,
		status: p50Delta <= P50_OVER_FLOOR_MS ? MET : NOT_MET,
	});
	const cpu = results.cpu;
	if (cpu) {
		const perCall = (t: "server" | "floor") => serverCpuPerCall(cpu[t]);
		const r = perCall("server") / perCall("floor");
		out.push({
			target: `server-side CPU per tools/call through /mcp/:server ≤ ${CPU_OVER_FLOOR}× the floor (upstream + runtime, over the throughput calls)`,
			figure: `${ms(perCall("server"))} ms vs ${ms(perCall("floor"))} ms (${ratio(r)})`,
			status: r <= CPU_OVER_FLOOR ? MET : NOT_MET,
		});
	}
	const p99Delta = p(results.latency, "server", 99) - p(results.latency, "floor", 99);
	out.push({
		target: "tools/call p99 through /mcp/:server within 3 ms of the floor",
		figure: `${ms(p(results.latency, "server", 99))} ms vs ${ms(p(results.latency, "floor", 99))} ms (${signedMs(p99Delta)} ms)`,
		status: p99Delta <= 3 ? MET : NOT_MET,
	});
	const modern = results.modern;
	const statelessDelta = p(modern.latency, "stateless", 50) - p(modern.latency, "statelessFloor", 50);
	out.push({
		target: "2026-07-28 tools/call p50 through the stateless path within 1 ms of the Worker-only floor",
		figure: `${ms(p(modern.latency, "stateless", 50))} ms vs ${ms(p(modern.latency, "statelessFloor", 50))} ms (${signedMs(statelessDelta)} ms)`,
		status: statelessDelta <= 1 ? MET : NOT_MET,
	});
	const statelessObjects = pathObjectRequests(modern.durableObjectRequests.stateless);
	out.push({
		target: "Durable Object requests of 2026-07-28 calls on the stateless path: 0",
		figure: `${statelessObjects} in ${modern.latency.stateless.length} calls (all requests in those windows: ${countList(modern.durableObjectRequests.stateless)})`,
		status: statelessObjects === 0 ? MET : NOT_MET,
	});
	const personGoal = `Durable Object requests per 2026-07-28 call on the stateless path with an \`oauth\` upstream ≤ ${PERSON_GOAL_PER_CALL}`;
	if ("error" in results.person) {
		out.push({ target: personGoal, figure: `not measured: ${results.person.error}`, status: NOT_MET });
	} else {
		const objects = personObjectsPerCall(results.person);
		out.push({
			target: personGoal,
			figure: `${objects.total.toFixed(4)} per call (TokenVaultDO ${objects.vault.toFixed(4)}) in ${objects.calls} calls; operator's header: ${pathObjectRequests(results.person.durableObjectRequests.personOperator)} in ${results.person.latency.personOperator.length}`,
			status: objects.calls > 0 && objects.total <= PERSON_GOAL_PER_CALL ? MET : NOT_MET,
		});
	}
	for (const q of POLICY_QUANTILES) {
		const goal = `tools/call p${q} with one policy (one compiled expression) within noise of no policy`;
		if ("error" in results.policy) {
			out.push({ target: goal, figure: `not measured: ${results.policy.error}`, status: NOT_MET });
			continue;
		}
		const c = comparePolicy(results.policy, q);
		out.push({
			target: goal,
			figure: `${c.ratio.toFixed(3)}× no policy; noise band 1 ± ${c.noise.toFixed(3)} (the baseline against itself ${c.self.toFixed(3)}×)`,
			status: c.within ? MET : NOT_MET,
		});
	}
	for (const q of TELEMETRY_QUANTILES) {
		const goal = `tools/call p${q} with telemetry export on (OTLP/HTTP) within noise of export off`;
		if ("error" in results.telemetry) {
			out.push({ target: goal, figure: `not measured: ${results.telemetry.error}`, status: NOT_MET });
			continue;
		}
		const c = compareTelemetry(results.telemetry, q);
		out.push({
			target: goal,
			figure: `${c.ratio.toFixed(3)}× export off; noise band 1 ± ${c.noise.toFixed(3)} (the baseline against itself ${c.self.toFixed(3)}× in one process, ${c.elsewhere.toFixed(3)}× between processes)`,
			status: c.within ? MET : NOT_MET,
		});
	}
	for (const cell of results.throughput) {
		// Every row for the transparent endpoint; the merged one from 16 calls at once, as before.
		const endpoints = cell.concurrency >= 16 ? (["server", "aggregate"] as const) : (["server"] as const);
		for (const endpoint of endpoints) {
			const r = rate(cell.results[endpoint]) / rate(cell.results.floor);
			out.push({
				target: `throughput ${cellLabel(cell)} through ${endpointName(endpoint)} ≥ 0.8× the floor`,
				figure: `${perSecond(rate(cell.results[endpoint]))} vs ${perSecond(rate(cell.results.floor))} calls/s (${ratio(r)})`,
				status: r >= 0.8 ? MET : NOT_MET,
			});
		}
	}
	for (const endpoint of ["server", "aggregate"] as const) {
		const r = p(results.setup, endpoint, 50) / p(results.setup, "floor", 50);
		out.push({
			target: `session setup through ${endpointName(endpoint)} ≤ ${SETUP_OVER_FLOOR}× the floor (p50)`,
			figure: `${ms(p(results.setup, endpoint, 50))} ms vs ${ms(p(results.setup, "floor", 50))} ms (${ratio(r)})`,
			status: r <= SETUP_OVER_FLOOR ? MET : NOT_MET,
		});
	}
	for (const { name, endpoint, w } of costWindows(results)) {
		const allowed = allowance(w.elapsedMs, m.touchIntervalS);
		out.push({
			target: `storage writes, ${name} (${endpointName(endpoint)}): ≤ 1 per touch interval (${m.touchIntervalS} s) elapsed`,
			figure: `${w.storageWrites} writes in ${seconds(w.elapsedMs)} and ${w.calls.toLocaleString("en-US")} calls (${per1000(w.storageWrites, w.calls)} per 1,000); allowed ${allowed}`,
			status: w.storageWrites <= allowed ? MET : NOT_MET,
		});
	}
	for (const { name, endpoint, w } of costWindows(results)) {
		const allowed = allowance(w.elapsedMs, m.recheckIntervalS);
		out.push({
			target: `registry reads, ${name} (${endpointName(endpoint)}): its rechecks ≤ 1 per recheck interval (${m.recheckIntervalS} s)`,
			figure: `${w.sessionRegistryReads} rechecks in ${seconds(w.elapsedMs)} and ${w.calls.toLocaleString("en-US")} calls (${per1000(w.sessionRegistryReads, w.calls)} per 1,000); allowed ${allowed}`,
			status: w.sessionRegistryReads <= allowed ? MET : NOT_MET,
		});
	}
	for (const { name, endpoint, w } of costWindows(results)) {
		if (w.registryReadsAll === null) continue;
		out.push({
			target: `RegistryDO requests in steady state, ${name} (${endpointName(endpoint)}): 0 (only admin writes reach it)`,
			figure: `${w.registryReadsAll} requests in ${seconds(w.elapsedMs)} and ${w.calls.toLocaleString("en-US")} calls (${per1000(w.registryReadsAll, w.calls)} per 1,000)`,
			status: w.registryReadsAll === 0 ? MET : NOT_MET,
		});
	}
	for (const endpoint of ["server", "aggregate"] as const) {
		const w = results.costs.longRun[endpoint];
		// Two KV reads per recheck (the key record, the endpoint record or the server list), and the session's
		// decisions: the policies and the one member's pins record (the aggregate's sessions have one member too, see
		// targets.ts), each kept for the isolate's cache lifetime.
		const cacheS = m.endpointCacheTtlS ?? m.recheckIntervalS;
		const allowed = 2 * allowance(w.elapsedMs, m.recheckIntervalS) + 2 * allowance(w.elapsedMs, cacheS);
		out.push({
			target: `KV reads, long-lived session (${endpointName(endpoint)}): ≤ 2 per recheck interval (${m.recheckIntervalS} s) and the policies and pins once per cache lifetime (${cacheS} s)`,
			figure: `${w.kvReads} reads in ${seconds(w.elapsedMs)} (${((w.kvReads / w.elapsedMs) * 3_600_000).toFixed(1)} per session-hour); allowed ${allowed}`,
			status: w.kvReads <= allowed ? MET : NOT_MET,
		});
	}
	for (const endpoint of ["server", "aggregate"] as const) {
		const w = results.idle[endpoint];
		out.push({
			target: `Durable Object active time of an idle listener (${endpointName(endpoint)}): < ${seconds(IDLE_GOAL_MS_PER_MINUTE, 0)} per idle session-minute`,
			figure: `${seconds(activeMsPerIdleMinute(w), 2)} per minute (${seconds(w.activeMs, 2)} active while listening ${seconds(w.listenedMs)})`,
			status: idleStatus(w),
		});
	}
	const bundle = results.bundle;
	if ("error" in bundle) {
		out.push({ target: "bundle well under 3 MB gzip", figure: `not measured: ${bundle.error}`, status: NOT_MET });
	} else {
		const share = bundle.gzipBytes / 3_000_000;
		out.push({
			target: "bundle well under 3 MB gzip",
			figure: `${kib(bundle.gzipBytes)} gzip (${(share * 100).toFixed(1)} % of 3 MB; "well under" taken as at most half)`,
			status: share <= 0.5 ? MET : NOT_MET,
		});
	}
	return out;
}
