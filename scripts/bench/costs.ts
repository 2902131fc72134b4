/**
 * What a session costs the gateway, from its own counters: the long-lived
 * sessions over the whole run, and a busy session's burst of calls.
 */

import { performance } from "node:perf_hooks";
import { delay } from "../processes.ts";
import {
	type CostMark,
	costMark,
	costWindow,
	countRegistryReads,
	type Gateway,
	sessionStats,
} from "./gateway-admin.ts";
import type { LiveSessions } from "./measurements.ts";
import { BUSY_CONCURRENCY, COUNTER_POLL_MS, MAX_CALLS_PER_CELL, PLAN } from "./plan.ts";
import type { CostWindow, GatewayEndpoint, TargetId } from "./results.ts";
import { closeSession, echo, openListedSession, type Target } from "./sessions.ts";

/**
 * Starts the long-lived sessions' cost window; so does the count of registry requests from any
 * source. `stop` ends both: everything of the run in between (every target's sessions, setups
 * included) counts towards the registry's requests.
 */
export async function startLongRun(
	gateway: Gateway,
	live: LiveSessions,
): Promise<{ stop(): Promise<Record<GatewayEndpoint, CostWindow>> }> {
	const start: Record<GatewayEndpoint, CostMark> = {
		server: await costMark(gateway, live.mainOf("server")),
		aggregate: await costMark(gateway, live.mainOf("aggregate")),
	};
	const registry = countRegistryReads(gateway);
	// A session's object that sees no request for a while may be evicted (it holds no listening stream:
	// the edge does), and its counters start again from 0. Reading them now and then keeps the two
	// long-lived sessions' objects, and so their counts, whole while the run measures other targets.
	const keepCounting = setInterval(() => {
		for (const t of ["server", "aggregate"] as const) sessionStats(gateway, live.mainOf(t)).catch(() => undefined);
	}, COUNTER_POLL_MS);
	return {
		stop: async () => {
			clearInterval(keepCounting);
			const registryRequests = await registry.stop();
			return {
				server: costWindow(start.server, await costMark(gateway, live.mainOf("server")), registryRequests),
				aggregate: costWindow(start.aggregate, await costMark(gateway, live.mainOf("aggregate")), registryRequests),
			};
		},
	};
}

/** A new session per gateway endpoint, driven at BUSY_CONCURRENCY for PLAN.busyCalls calls (and at least PLAN.busyMinMs). */
export async function busySessions(
	gateway: Gateway,
	targets: Record<TargetId, Target>,
): Promise<Record<GatewayEndpoint, CostWindow>> {
	const busy = {} as Record<GatewayEndpoint, CostWindow>;
	for (const endpoint of ["server", "aggregate"] as const)
		busy[endpoint] = await busySession(gateway, targets[endpoint]);
	return busy;
}

async function busySession(gateway: Gateway, target: Target): Promise<CostWindow> {
	const session = await openListedSession(target);
	await delay(300); // Let the SDK client's GET stream open: it belongs to setup, not to the calls.
	const registry = countRegistryReads(gateway);
	const before = await costMark(gateway, session);
	const until = performance.now() + PLAN.busyMinMs;
	let issued = 0;
	await Promise.all(
		Array.from({ length: BUSY_CONCURRENCY }, async () => {
			while ((issued < PLAN.busyCalls || performance.now() < until) && issued < MAX_CALLS_PER_CELL) {
				issued++;
				await echo(session);
			}
		}),
	);
	const after = await costMark(gateway, session);
	const window = costWindow(before, after, await registry.stop());
	await closeSession(session, true);
	return window;
}
