import type { JSONRPCMessage, JSONRPCRequest, RequestId } from "@modelcontextprotocol/sdk/types.js";
import { SUBSCRIPTION_ID_META_KEY } from "@modelcontextprotocol/server";
import type { SubscriptionFilter } from "../../mcp/2026-07-28/subscription-filter.ts";
import { wantedBy } from "../../mcp/2026-07-28/subscription-filter.ts";
import { GatewayError } from "../../mcp/gateway-error.ts";
import { parseJsonRpcMessage } from "../../mcp/jsonrpc.ts";
import { NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED } from "../../mcp/methods.ts";
import { SSE_HEADERS, SseMessageReader, sseMessage } from "../../mcp/sse.ts";
import { asGatewayError } from "../../session/session-do.ts";
import { listenTime, openWindow, type SessionStub } from "../listen-window.ts";
import { admitAgain } from "../mcp-admission.ts";
import type { McpContext } from "../request-context.ts";

/**
 * Written between two windows. The stream asks for the next window only
 * once the client has read this (it pulls again), so a client that has gone
 * away is never given another window: the runtime notices a gone client only
 * when it writes to it.
 */
const BETWEEN_WINDOWS = new TextEncoder().encode(":\n\n");

/**
 * A 2026-07-28 `subscriptions/listen` served from a 2025 session: the
 * acknowledgement first, then the notifications the filter opted in to, each
 * tagged with the subscription id (the listen request's id). Underneath, the
 * edge listens to the session in windows exactly as for a 2025 client's GET
 * (so the object is rechecked at each window's end and costs nothing in
 * between); a window's end is invisible to the client, which keeps one stream
 * until it closes it.
 *
 * The listen is one request spanning many windows, so before each new window
 * the request's credential is authenticated again and the window counted
 * against its rate limit (`admitAgain`). A window the session paces (its
 * upstream's stream ended early) is waited for, and none opens sooner than
 * SSE_RETRY_MS after the one before. It stops when the client disconnects
 * (the request's signal, or a write between windows that does not go
 * through). A session that ends (revoked, expired) ends the stream with the
 * completion result; a refusal ends it with its error.
 */
export function modernListenStream(
	c: McpContext,
	stub: SessionStub,
	message: JSONRPCRequest,
	acknowledged: SubscriptionFilter,
): Response {
	const { maxReplyBytes, sseRetryMs } = c.get("settings");
	const tag = { [SUBSCRIPTION_ID_META_KEY]: message.id };
	const tagged = (notification: JSONRPCMessage): JSONRPCMessage => {
		if (!("method" in notification)) return notification;
		const params = notification.params ?? {};
		return { ...notification, params: { ...params, _meta: { ...params._meta, ...tag } } };
	};
	const acknowledgement = tagged({
		jsonrpc: "2.0",
		method: NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED,
		params: { notifications: acknowledged },
	});
	const complete: JSONRPCMessage = { jsonrpc: "2.0", id: message.id, result: { resultType: "complete", _meta: tag } };
	/** Aborted once the stream is over: the client left, or the last answer was written. */
	const over = new AbortController();
	let reader: SseMessageReader | null = null;
	let windows = 0;
	/** When the last window opened: one that ends sooner than SSE_RETRY_MS is followed by the rest of that wait. */
	let openedAt = Number.NEGATIVE_INFINITY;
	let lastEventId: string | null = null;
	type Controller = ReadableStreamDefaultController<Uint8Array>;
	/** Waits `ms` (cut short if the client leaves), then asks the client to read on before the next window. */
	const between = async (controller: Controller, ms = 0) => {
		if (ms > 0) await pause(ms, over.signal);
		if (!over.signal.aborted) controller.enqueue(BETWEEN_WINDOWS);
	};
	const finish = (controller: Controller, last: JSONRPCMessage) => {
		over.abort();
		controller.enqueue(sseMessage(last));
		controller.close();
	};
	const leave = async () => {
		over.abort();
		await reader?.cancel();
	};
	// Aborted when the client disconnects (Workers' `enable_request_signal`).
	c.req.raw.signal.addEventListener("abort", () => void leave(), { once: true });
	const pull = async (controller: Controller) => {
		try {
			while (!over.signal.aborted) {
				if (reader === null) {
					const early = openedAt + sseRetryMs - listenTime.clock.now();
					if (early > 0) return await between(controller, early);
					// The listen request itself was authenticated and counted: later windows are, each.
					if (windows++ > 0) await admitAgain(c);
					const window = await openWindow(c, stub, lastEventId);
					if (!(window instanceof Response)) return await between(controller, window.retryMs);
					if (over.signal.aborted) return void (await window.body?.cancel());
					if (!window.ok || !window.body) return finish(controller, await lastAnswer(window, message.id, complete));
					openedAt = listenTime.clock.now();
					reader = new SseMessageReader(window.body, maxReplyBytes, parseJsonRpcMessage);
				}
				const next = await reader.next();
				lastEventId = reader.lastEventId ?? lastEventId;
				if (next === null) {
					reader = null;
					return await between(controller);
				}
				if (wantedBy(acknowledged, next)) return controller.enqueue(sseMessage(tagged(next)));
			}
		} catch (error) {
			if (over.signal.aborted) return;
			// A credential that no longer authenticates, a key over its rate, a failed window.
			await reader?.cancel();
			finish(controller, { jsonrpc: "2.0", id: message.id, error: asGatewayError(error).toJsonRpcError() });
		}
	};
	const body = new ReadableStream<Uint8Array>(
		{ start: (controller) => controller.enqueue(sseMessage(acknowledgement)), pull, cancel: leave },
		// Pulled only when the client reads: nothing is listened to ahead of a client that is not there.
		{ highWaterMark: 0 },
	);
	return new Response(body, { headers: SSE_HEADERS });
}

/** Resolves after `ms` on the listening clock, or at once when `signal` aborts (its timer then dropped). */
function pause(ms: number, signal: AbortSignal): Promise<void> {
	return new Promise((resolve) => {
		if (signal.aborted) return resolve();
		const cancel = listenTime.timers.set(ms, () => {
			signal.removeEventListener("abort", abandon);
			resolve();
		});
		const abandon = () => {
			cancel();
			resolve();
		};
		signal.addEventListener("abort", abandon, { once: true });
	});
}

/**
 * How the listen ends when the session answers a window with a refusal: the
 * session is gone (revoked, expired) or the upstream offers no stream
 * (404, 405), a graceful end as the server's own would be; otherwise the
 * refusal's own error (a session with its limit of listening windows open).
 */
async function lastAnswer(window: Response, id: RequestId, complete: JSONRPCMessage): Promise<JSONRPCMessage> {
	const text = await window.text();
	if (window.status === 404 || window.status === 405) return complete;
	const reply = parseJsonRpcMessage(text);
	const error = reply && "error" in reply ? reply.error : undefined;
	const failed = new GatewayError("upstream_error", `The listening stream failed (HTTP ${window.status}).`);
	return { jsonrpc: "2.0", id, error: error ?? failed.toJsonRpcError() };
}
