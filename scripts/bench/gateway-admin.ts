/**
 * What the bench asks the gateway: its admin API (registering the servers,
 * keys), a session's counters (`/admin/session-stats`, src/'s `SessionStats`),
 * the registry's request count, and the upstream fixture's request log; and
 * the cost windows made from them.
 */

import { performance } from "node:perf_hooks";
import type { SessionStats } from "../../src/session/session-do.ts";
import { delay, withTimeout } from "../processes.ts";
import { MODERN_VERSION } from "./modern.ts";
import { CALL_TIMEOUT_MS } from "./plan.ts";
import { type CostWindow, TARGET_LABELS } from "./results.ts";
import { describe, warn } from "./run-log.ts";
import type { Session } from "./sessions.ts";

export interface Gateway {
	url: string;
	adminToken: string;
}

export async function admin<T>(
	gateway: Gateway,
	method: string,
	path: string,
	body?: unknown,
	extra?: Record<string, string>,
) {
	const response = await fetch(`${gateway.url}/admin${path}`, {
		method,
		headers: {
			authorization: `Bearer ${gateway.adminToken}`,
			...(body === undefined ? {} : { "content-type": "application/json" }),
			...extra,
		},
		body: body === undefined ? undefined : JSON.stringify(body),
		signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
	});
	const text = await response.text();
	if (!response.ok) throw new Error(`${method} /admin${path} answered ${response.status}: ${text.slice(0, 300)}`);
	return JSON.parse(text) as T;
}

export function sessionStats(gateway: Gateway, session: Session): Promise<SessionStats> {
	const id = session.transport.sessionId;
	if (!id) throw new Error(`${TARGET_LABELS[session.target.id]}: the session has no id`);
	return sessionStatsOf(gateway, id);
}

export function sessionStatsOf(gateway: Gateway, sessionId: string): Promise<SessionStats> {
	return admin<SessionStats>(gateway, "GET", "/session-stats", undefined, { "mcp-session-id": sessionId });
}

/** The gateway's name for the SDK v2 upstream: its endpoint is `/mcp/bench-modern`. */
export const MODERN_SERVER = "bench-modern";

/**
 * Registers the SDK v2 upstream as a server. Its protocol is pinned where the
 * gateway knows the field; a gateway without it (400 naming the field) finds
 * the era itself with a `server/discover` probe. Says which, for the report.
 */
export async function registerModernServer(gateway: Gateway, url: string): Promise<string> {
	try {
		await admin(gateway, "PUT", `/servers/${MODERN_SERVER}`, { url, protocol: MODERN_VERSION });
		return `\`protocol: "${MODERN_VERSION}"\` (pinned: the gateway asks the upstream nothing to know its era)`;
	} catch (error) {
		if (!/answered 400: .*protocol/.test(describe(error))) throw error;
	}
	await admin(gateway, "PUT", `/servers/${MODERN_SERVER}`, { url });
	return "no `protocol` field, which this gateway does not have: the edge finds the upstream's era with a `server/discover` probe";
}

export async function registryReads(gateway: Gateway): Promise<number> {
	return (await admin<{ reads: number }>(gateway, "GET", "/registry-stats")).reads;
}

/** The upstream fixture's request log: one entry per request it received. */
export async function upstreamLog(upstreamUrl: string): Promise<Array<{ method: string; body?: { method?: string } }>> {
	const response = await fetch(new URL("/_log", upstreamUrl), { signal: AbortSignal.timeout(CALL_TIMEOUT_MS) });
	if (!response.ok) throw new Error(`the upstream's /_log answered ${response.status}`);
	return (await response.json()) as Array<{ method: string; body?: { method?: string } }>;
}

export async function resetUpstreamLog(upstreamUrl: string): Promise<void> {
	const response = await fetch(new URL("/_reset", upstreamUrl), {
		method: "POST",
		signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
	});
	await response.body?.cancel();
}

export interface CostMark {
	at: number;
	calls: number;
	stats: SessionStats;
}

export async function costMark(gateway: Gateway, session: Session): Promise<CostMark> {
	return { at: performance.now(), calls: session.calls, stats: await sessionStats(gateway, session) };
}

/**
 * Counts the requests the registry Durable Object serves from now on (its reads: in steady state
 * there are none, since keys, endpoints and rechecks come from Workers KV). The counter lives in memory and restarts at 0
 * when the local runtime evicts an idle registry instance, so it is polled and increments are
 * summed (a drop means a restart: everything since counts).
 */
export function countRegistryReads(gateway: Gateway): { stop(): Promise<number> } {
	let stopped = false;
	let total = 0;
	const running = (async () => {
		let previous = await registryReads(gateway);
		for (let polls = 0; polls < 10_000; polls++) {
			await delay(500);
			const current = await registryReads(gateway);
			total += current >= previous ? current - previous : current;
			previous = current;
			if (stopped) return;
		}
	})();
	return {
		stop: async () => {
			stopped = true;
			await withTimeout(running, CALL_TIMEOUT_MS, "counting registry reads");
			return total;
		},
	};
}

export function costWindow(before: CostMark, after: CostMark, registryReadsAll: number | null): CostWindow {
	if (after.stats.upstreamRequests < before.stats.upstreamRequests) {
		warn("a session's Durable Object restarted during a cost window: its counters started again from 0");
	}
	return {
		calls: after.calls - before.calls,
		elapsedMs: after.at - before.at,
		storageReads: after.stats.storageReads - before.stats.storageReads,
		storageWrites: after.stats.storageWrites - before.stats.storageWrites,
		eventBufferWrites: after.stats.eventBufferWrites - before.stats.eventBufferWrites,
		sessionRegistryReads: after.stats.registryReads - before.stats.registryReads,
		kvReads: after.stats.kvReads - before.stats.kvReads,
		registryReadsAll,
		upstreamRequests: after.stats.upstreamRequests - before.stats.upstreamRequests,
	};
}
