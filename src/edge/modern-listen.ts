import type { JSONRPCMessage, JSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";
import { SUBSCRIPTION_ID_META_KEY } from "@modelcontextprotocol/server";
import type { SubscriptionFilter } from "../mcp/2026-07-28/subscription-filter.ts";
import { wantedBy } from "../mcp/2026-07-28/subscription-filter.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import { parseJsonRpcMessage } from "../mcp/jsonrpc.ts";
import { SSE_HEADERS, SseMessageReader, sseMessage } from "../mcp/sse.ts";
import { asGatewayError } from "../session/session-do.ts";
import { listenTime, openWindow, type SessionStub } from "./listen-window.ts";
import { admitAgain } from "./mcp-admission.ts";
import type { McpContext } from "./request-context.ts";

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
	const settings = c.get("settings");
	const tag = { [SUBSCRIPTION_ID_META_KEY]: message.id };
	const tagged = (notification: JSONRPCMessage): JSONRPCMessage => {
		if (!("method" in notification)) return notification;
		const params = notification.params ?? {};
		return { ...notification, params: { ...params, _meta: { ...params._meta, ...tag } } };
	};
	const complete: JSONRPCMessage = { jsonrpc: "2.0", id: message.id, result: { resultType: "complete", _meta: tag } };
	let reader: SseMessageReader | null = null;
	let closed = false;
	let windows = 0;
	/** When the last window opened: one that ends sooner than SSE_RETRY_MS is followed by the rest of that wait. */
	let openedAt = Number.NEGATIVE_INFINITY;
	let lastEventId: string | null = null;
	let wake: (() => void) | null = null;
	const sleep = (ms: number) =>
		new Promise<void>((resolve) => {
			const cancel = listenTime.timers.set(ms, () => {
				wake = null;
				resolve();
			});
			wake = () => {
				cancel();
				resolve();
			};
		});
	const finish = (controller: ReadableStreamDefaultController<Uint8Array>, last: JSONRPCMessage) => {
		closed = true;
		controller.enqueue(sseMessage(last));
		controller.close();
	};
	const leave = async () => {
		closed = true;
		wake?.();
		await reader?.cancel();
	};
	// Aborted when the client disconnects (Workers' `enable_request_signal`).
	c.req.raw.signal.addEventListener("abort", () => void leave(), { once: true });
	const body = new ReadableStream<Uint8Array>(
		{
			start: (controller) => {
				controller.enqueue(
					sseMessage(
						tagged({
							jsonrpc: "2.0",
							method: "notifications/subscriptions/acknowledged",
							params: { notifications: acknowledged },
						}),
					),
				);
			},
			pull: async (controller) => {
				try {
					for (;;) {
						if (closed) return;
						if (reader === null) {
							const early = openedAt + settings.sseRetryMs - listenTime.clock.now();
							if (early > 0) {
								await sleep(early);
								if (!closed) controller.enqueue(BETWEEN_WINDOWS);
								return;
							}
							// The listen request itself was authenticated and counted: later windows are, each.
							if (windows++ > 0) await admitAgain(c);
							const window = await openWindow(c, stub, lastEventId);
							if (closed) {
								if (window instanceof Response) await window.body?.cancel();
								return;
							}
							if (!(window instanceof Response)) {
								await sleep(window.waitMs);
								if (!closed) controller.enqueue(BETWEEN_WINDOWS);
								return;
							}
							if (!window.ok || !window.body) return finish(controller, await lastAnswer(window, message, complete));
							openedAt = listenTime.clock.now();
							reader = new SseMessageReader(window.body, settings.maxReplyBytes, parseJsonRpcMessage);
						}
						const next = await reader.next();
						lastEventId = reader.lastEventId ?? lastEventId;
						if (next === null) {
							reader = null;
							if (!closed) controller.enqueue(BETWEEN_WINDOWS);
							return;
						}
						if (wantedBy(acknowledged, next)) {
							controller.enqueue(sseMessage(tagged(next)));
							return;
						}
					}
				} catch (error) {
					if (closed) return;
					// A credential that no longer authenticates, a key over its rate, a failed window.
					await reader?.cancel();
					finish(controller, { jsonrpc: "2.0", id: message.id, error: asGatewayError(error).toJsonRpcError() });
				}
			},
			cancel: () => leave(),
		},
		// Pulled only when the client reads: nothing is listened to ahead of a client that is not there.
		{ highWaterMark: 0 },
	);
	return new Response(body, { headers: SSE_HEADERS });
}

/**
 * How the listen ends when the session answers a window with a refusal: the
 * session is gone (revoked, expired) or the upstream offers no stream
 * (404, 405), a graceful end as the server's own would be; otherwise the
 * refusal's own error (a session with its limit of listening windows open).
 */
async function lastAnswer(
	window: Response,
	message: JSONRPCRequest,
	complete: JSONRPCMessage,
): Promise<JSONRPCMessage> {
	const text = await window.text();
	if (window.status === 404 || window.status === 405) return complete;
	const reply = parseJsonRpcMessage(text);
	if (reply && "error" in reply) return { jsonrpc: "2.0", id: message.id, error: reply.error };
	return {
		jsonrpc: "2.0",
		id: message.id,
		error: new GatewayError("upstream_error", `The listening stream failed (HTTP ${window.status}).`).toJsonRpcError(),
	};
}
