/**
 * The idle listener: a client that only listens on its session's GET stream,
 * and how long that keeps the session's Durable Object active.
 */

import { performance } from "node:perf_hooks";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import { delay } from "../processes.ts";
import { type Gateway, sessionStatsOf } from "./gateway-admin.ts";
import { AFTER_CLOSE_PROBE_MS, CALL_TIMEOUT_MS, COUNTER_POLL_MS } from "./plan.ts";
import { type GatewayEndpoint, type IdleWindow, TARGET_LABELS, type TargetId } from "./results.ts";
import type { Target } from "./sessions.ts";

/**
 * A client that opens a session, opens its GET stream and then only listens
 * for `windowMs` before closing it: how long the session's Durable Object was
 * active meanwhile (session-stats activeMs, read before the GET and right
 * after the close), and whether it still was a moment after the close. Raw
 * HTTP, not the SDK client, which opens (and reopens) its own GET stream.
 */
async function idleListener(gateway: Gateway, target: Target, windowMs: number): Promise<IdleWindow> {
	const label = TARGET_LABELS[target.id];
	const send = async (init: RequestInit & { headers: Record<string, string> }, expected: number) => {
		const response = await fetch(target.url, {
			...init,
			headers: { ...target.headers, ...init.headers },
			signal: init.signal ?? AbortSignal.timeout(CALL_TIMEOUT_MS),
		});
		if (response.status !== expected) {
			throw new Error(
				`${label}: idle listener's ${init.method ?? "GET"} answered ${response.status}: ${(await response.text()).slice(0, 300)}`,
			);
		}
		return response;
	};
	const posting = { accept: "application/json, text/event-stream", "content-type": "application/json" };
	const initialize = await send(
		{
			method: "POST",
			headers: posting,
			body: JSON.stringify({
				jsonrpc: "2.0",
				id: 1,
				method: "initialize",
				params: {
					protocolVersion: LATEST_PROTOCOL_VERSION,
					capabilities: {},
					clientInfo: { name: "mcp-edge-bench-listener", version: "1.0.0" },
				},
			}),
		},
		200,
	);
	await initialize.text();
	const sessionId = initialize.headers.get("mcp-session-id");
	if (!sessionId) throw new Error(`${label}: initialize gave no session id`);
	const inSession = { "mcp-session-id": sessionId, "mcp-protocol-version": LATEST_PROTOCOL_VERSION };
	const initialized = await send(
		{
			method: "POST",
			headers: { ...posting, ...inSession },
			body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
		},
		202,
	);
	await initialized.body?.cancel();

	const before = await sessionStatsOf(gateway, sessionId);
	// Reading the counters now and then keeps them whole: an object with no request for a while may
	// be evicted, and its counters start again from 0 (reading them is not activity the meter counts).
	const keepCounting = setInterval(() => sessionStatsOf(gateway, sessionId).catch(() => undefined), COUNTER_POLL_MS);
	const opened = performance.now();
	// The gateway ends each listening window (at most LISTEN_WINDOW_SECONDS); a client resumes at
	// once with the last event id it saw, as the SDK's client does after `retry`.
	let lastEventId: string | null = null;
	let windows = 0;
	while (performance.now() - opened < windowMs) {
		const left = Math.ceil(windowMs - (performance.now() - opened));
		const listening = AbortSignal.timeout(left);
		let stream: Response;
		try {
			stream = await send(
				{
					headers: {
						...inSession,
						accept: "text/event-stream",
						...(lastEventId ? { "last-event-id": lastEventId } : {}),
					},
					signal: AbortSignal.any([listening, AbortSignal.timeout(left + CALL_TIMEOUT_MS)]),
				},
				200,
			);
		} catch (error) {
			// A window the gateway ended just before the listening time was up: the resumed GET had
			// only the few milliseconds left to be answered in, and the listening is over.
			if (listening.aborted) break;
			throw error;
		}
		windows++;
		const text = await stream.text().catch(() => "");
		lastEventId = [...text.matchAll(/^id: (.+)$/gm)].at(-1)?.[1] ?? lastEventId;
	}
	const listenedMs = performance.now() - opened;
	const atClose = await sessionStatsOf(gateway, sessionId);
	await delay(AFTER_CLOSE_PROBE_MS);
	const later = await sessionStatsOf(gateway, sessionId);
	clearInterval(keepCounting);

	const ended = await send({ method: "DELETE", headers: inSession }, 204);
	await ended.body?.cancel();
	return {
		listenedMs,
		windows,
		activeMs: atClose.activeMs - before.activeMs,
		activeAfterClose: later.activeMs - atClose.activeMs > AFTER_CLOSE_PROBE_MS / 2,
	};
}

/** An idle listener on each of the gateway's endpoints, at once. */
export async function idleListeners(
	gateway: Gateway,
	targets: Record<TargetId, Target>,
	windowMs: number,
): Promise<Record<GatewayEndpoint, IdleWindow>> {
	const idle = {} as Record<GatewayEndpoint, IdleWindow>;
	await Promise.all(
		(["server", "aggregate"] as const).map(async (endpoint) => {
			idle[endpoint] = await idleListener(gateway, targets[endpoint], windowMs);
		}),
	);
	return idle;
}
