import type { JSONRPCMessage, JSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";
import { SUBSCRIPTION_ID_META_KEY } from "@modelcontextprotocol/server";
import type { Settings } from "../config.ts";
import type { Env } from "../env.ts";
import { parseJsonRpcMessage } from "../mcp/jsonrpc.ts";
import { SseMessageReader, sseMessage } from "../mcp/sse.ts";
import type { SubscriptionFilter } from "../mcp/subscription-filter.ts";
import { wantedBy } from "../mcp/subscription-filter.ts";
import type { SessionScope } from "../session/binding.ts";
import { SSE_HEADERS } from "../session/listening.ts";
import type { SessionDO } from "../session/session-do.ts";
import { serveListen } from "./listen.ts";
import type { WaitUntil } from "./rate-limits.ts";

type SessionStub = DurableObjectStub<SessionDO>;

/**
 * A 2026-07-28 `subscriptions/listen` served from a 2025 session: the
 * acknowledgement first, then the notifications the filter opted in to, each
 * tagged with the subscription id (the listen request's id). Underneath, the
 * edge listens to the session in windows exactly as for a 2025 client's GET
 * (so the object is rechecked at each window's end and costs nothing in
 * between); a window's end is invisible to the client, which keeps one stream
 * until it closes it. A session that ends (revoked, expired) ends the stream
 * with the completion result.
 */
export function modernListenStream(
	env: Env,
	settings: Settings,
	stub: SessionStub,
	scope: SessionScope,
	message: JSONRPCRequest,
	acknowledged: SubscriptionFilter,
	waitUntil: WaitUntil,
): Response {
	const tag = { [SUBSCRIPTION_ID_META_KEY]: message.id };
	const tagged = (notification: JSONRPCMessage): JSONRPCMessage => {
		if (!("method" in notification)) return notification;
		const params = notification.params ?? {};
		return { ...notification, params: { ...params, _meta: { ...params._meta, ...tag } } };
	};
	let reader: SseMessageReader | null = null;
	let closed = false;
	let lastEventId: string | null = null;
	const body = new ReadableStream<Uint8Array>({
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
			for (;;) {
				if (closed) return;
				if (reader === null) {
					const window = await serveListen(env, settings, stub, scope, lastEventId, waitUntil);
					if (!window.ok || !window.body) {
						await window.body?.cancel();
						// The session is gone (revoked, expired): a graceful end, as the server's own would be.
						const result = { resultType: "complete", _meta: tag };
						controller.enqueue(sseMessage({ jsonrpc: "2.0", id: message.id, result }));
						controller.close();
						return;
					}
					reader = new SseMessageReader(window.body, settings.maxReplyBytes, parseJsonRpcMessage);
				}
				const next = await reader.next();
				lastEventId = reader.lastEventId ?? lastEventId;
				if (next === null) {
					reader = null;
					continue;
				}
				if (wantedBy(acknowledged, next)) {
					controller.enqueue(sseMessage(tagged(next)));
					return;
				}
			}
		},
		cancel: async () => {
			closed = true;
			await reader?.cancel();
		},
	});
	return new Response(body, { headers: SSE_HEADERS });
}
