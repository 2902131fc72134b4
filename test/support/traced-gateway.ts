import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import { createApp } from "../../src/edge/app.ts";
import type { Env } from "../../src/env.ts";
import { telemetryFor } from "../../src/telemetry/telemetry.ts";
import { eventually } from "./eventually.ts";
import { BASE, initializeBody, mcpHeaders, messagesOf, type RpcReply } from "./gateway.ts";
import { GATEWAY_OTLP_TENANT, otlpSpans, type ReceivedSpan } from "./otlp.ts";

/**
 * The gateway's edge exporting its telemetry, for the tests of the vitest project "telemetry":
 * requests through `createApp()` with OTEL_* over the test env, and the spans they give, read
 * back from the OTLP receiver. The Durable Objects export with the project's env (the receiver's
 * gateway tenant, GATEWAY_OTLP_TENANT): on session paths the SessionDO's CLIENT spans are read there.
 */

/** A client's own trace: what an instrumented MCP client puts in `_meta` (sampled). */
export const CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
export const CLIENT_SPAN = "00f067aa0ba902b7";

export function clientParent(trace = CLIENT_TRACE, span = CLIENT_SPAN): string {
	return `00-${trace}-${span}-01`;
}

/** A fresh trace id per test, so one tenant's spans are told apart by trace. */
export function newTraceId(): string {
	return Array.from(crypto.getRandomValues(new Uint8Array(16)), (byte) => byte.toString(16).padStart(2, "0")).join("");
}

export interface Traced {
	fetch(request: Request): Promise<{ response: Response; text: string }>;
}

/**
 * The gateway's edge with `vars` over the test env. Each request's background
 * work is awaited, then the isolate's telemetry flushed once more, as the next
 * request would: spans that ended while an export was in flight ride the next flush.
 */
export function gatewayWith(vars: Record<string, string>): Traced {
	const app = createApp();
	const tracedEnv = { ...env, ...vars } as Env;
	return {
		async fetch(request) {
			const ctx = createExecutionContext();
			const response = await app.fetch(request, tracedEnv, ctx);
			const text = await response.text();
			await waitOnExecutionContext(ctx);
			const exports: Promise<unknown>[] = [];
			telemetryFor(tracedEnv).flush((promise) => exports.push(promise));
			await Promise.allSettled(exports);
			return { response, text };
		},
	};
}

/** A 2025 POST on `path`, in the session `sessionId` when there is one. */
export function legacyPost(
	path: string,
	key: string,
	sessionId: string | undefined,
	body: unknown,
	extra = {},
): Request {
	return new Request(`${BASE}${path}`, {
		method: "POST",
		headers: mcpHeaders(key, sessionId, { "mcp-protocol-version": LATEST_PROTOCOL_VERSION, ...extra }),
		body: JSON.stringify(body),
	});
}

/** Opens a 2025 session through `gateway` and returns its id. */
export async function openTracedSession(gateway: Traced, path: string, key: string): Promise<string> {
	const { response } = await gateway.fetch(
		new Request(`${BASE}${path}`, { method: "POST", headers: mcpHeaders(key), body: JSON.stringify(initializeBody()) }),
	);
	const sessionId = response.headers.get("mcp-session-id");
	if (!sessionId) throw new Error(`initialize failed: ${response.status}`);
	await gateway.fetch(legacyPost(path, key, sessionId, { jsonrpc: "2.0", method: "notifications/initialized" }));
	return sessionId;
}

/** The JSON-RPC answer of a JSON or SSE reply: its last message with an id. */
export function replyOf(response: Response, text: string): RpcReply {
	const messages = messagesOf(text, response.headers.get("content-type") ?? "");
	return messages.filter((message) => message.id !== undefined && message.method === undefined).at(-1) as RpcReply;
}

export function callBody(id: number, name: string, args: Record<string, unknown>, meta?: Record<string, unknown>) {
	return {
		jsonrpc: "2.0",
		id,
		method: "tools/call",
		params: { name, arguments: args, ...(meta ? { _meta: meta } : {}) },
	};
}

/** The tenant's span named `name` in `trace` of `kind`, once it has arrived. */
export function spanOf(tenant: string, trace: string, name: string, kind: "SERVER" | "CLIENT"): Promise<ReceivedSpan> {
	return eventually(
		async () =>
			(await otlpSpans(tenant)).find((span) => span.traceId === trace && span.name === name && span.kind === kind),
		`${kind} span ${name}`,
	);
}

/**
 * The SessionDO's span named `name` in `trace` (a CLIENT span unless `kind` says otherwise), from
 * the project's gateway tenant. A span that ended while the object's previous export was in flight
 * rides its next flush: `poke` sends the session a request (a ping) each time the span is not there
 * yet, as the session's next request would.
 */
export function sessionSpanOf(
	trace: string,
	name: string,
	poke: () => Promise<unknown>,
	kind: "CLIENT" | "INTERNAL" = "CLIENT",
): Promise<ReceivedSpan> {
	return eventually(async () => {
		const found = (await otlpSpans(GATEWAY_OTLP_TENANT)).find(
			(span) => span.traceId === trace && span.name === name && span.kind === kind,
		);
		if (!found) await poke();
		return found;
	}, `${kind} span ${name} of the session`);
}

/** Flushes the telemetry of this project's env (the Durable Objects' own), as the isolate's next request would. */
export async function flushProject(): Promise<void> {
	const exports: Promise<unknown>[] = [];
	telemetryFor(env).flush((promise) => exports.push(promise));
	await Promise.allSettled(exports);
}

/** A ping in the session: its end flushes what the object recorded before. */
export function pinger(gateway: Traced, path: string, key: string, sessionId: string): () => Promise<unknown> {
	return () => gateway.fetch(legacyPost(path, key, sessionId, { jsonrpc: "2.0", id: "flush", method: "ping" }));
}
