import type { JSONRPCMessage, JSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { headerValue } from "../mcp/2026-07-28/header-value.ts";
import { mapResultTaskId } from "../mcp/2026-07-28/tasks-extension.ts";
import { parseJsonRpcMessage } from "../mcp/jsonrpc.ts";
import { readCapped } from "../mcp/read-capped.ts";
import { SSE_HEADERS, SseMessageReader, sseMessage } from "../mcp/sse.ts";
import { mediaTypeOf } from "../primitives/media-type.ts";
import { openJson, signJson } from "../primitives/signed-json.ts";
import type { SessionScope } from "../session/session-do.ts";

/**
 * Tasks a 2026-07-28 upstream holds itself (it advertises the tasks
 * extension) reach the client under an id of the gateway's: the upstream's
 * id, the server, and the key, user path and endpoint that created it,
 * MAC'd. The client's `tasks/*` naming it go to that server with the
 * upstream's id; from any other key, user path or endpoint the id is
 * unknown, as every id the gateway mints is (invariant "A session belongs to a principal and an endpoint"),
 * and a forged one is refused by the MAC before anything is asked (invariant "Forged IDs cost nothing").
 * No state is kept: the id carries it.
 */
const LABEL = "upstream-task";

/** Ids of tasks an upstream holds start with this; the session's own never do (they start with its 64-hex place). */
const PREFIX = "up.";

const SealedSchema = z.object({
	k: z.string(),
	u: z.string(),
	e: z.string(),
	s: z.string(),
	t: z.string(),
});

export interface UpstreamTask {
	server: string;
	upstreamTaskId: string;
}

/** The client's id of the task `upstreamTaskId` that `server` holds for this scope. */
export async function sealUpstreamTaskId(secret: string, scope: SessionScope, task: UpstreamTask): Promise<string> {
	const sealed = { k: scope.keyId, u: scope.userPath, e: scope.endpoint, s: task.server, t: task.upstreamTaskId };
	return `${PREFIX}${await signJson(secret, LABEL, sealed)}`;
}

/**
 * The upstream task a client's id names, when it is one the gateway sealed for
 * this same scope; null for anything else (malformed, forged, another's), which
 * the caller answers as an unknown task.
 */
export async function openUpstreamTaskId(
	secret: string,
	scope: SessionScope,
	taskId: string,
): Promise<UpstreamTask | null> {
	if (!taskId.startsWith(PREFIX)) return null;
	const sealed = await openJson(secret, LABEL, taskId.slice(PREFIX.length), SealedSchema);
	if (!sealed || sealed.k !== scope.keyId || sealed.u !== scope.userPath || sealed.e !== scope.endpoint) return null;
	return { server: sealed.s, upstreamTaskId: sealed.t };
}

/** The request as the upstream must see it: its own task id, in the body and in `Mcp-Name`. */
export function toUpstreamTask(
	message: JSONRPCRequest,
	upstreamTaskId: string,
): { message: JSONRPCRequest; body: string; headers: Record<string, string> } {
	const upstream: JSONRPCRequest = { ...message, params: { ...message.params, taskId: upstreamTaskId } };
	return { message: upstream, body: JSON.stringify(upstream), headers: { "mcp-name": headerValue(upstreamTaskId) } };
}

/**
 * The upstream's reply with each JSON-RPC message in it mapped by `map` (JSON,
 * or SSE message by message): how the client comes to see only the gateway's
 * task ids, and the gateway's capabilities. Read under the reply cap; a reply
 * of another type passes as it is.
 */
export async function mapReplyMessages(
	reply: Response,
	maxReplyBytes: number,
	map: (message: JSONRPCMessage) => Promise<JSONRPCMessage>,
): Promise<Response> {
	const type = mediaTypeOf(reply.headers.get("content-type"));
	if (!reply.body) return reply;
	if (type === "application/json") {
		const bytes = await readCapped(reply.body, maxReplyBytes);
		const message = bytes === null ? null : parseJsonRpcMessage(new TextDecoder().decode(bytes));
		if (message === null) {
			return Response.json(
				{ jsonrpc: "2.0", id: null, error: { code: -32603, message: "The upstream's reply could not be read." } },
				{ status: 502 },
			);
		}
		return Response.json(await map(message), { status: reply.status });
	}
	if (type !== "text/event-stream") return reply;
	const reader = new SseMessageReader(reply.body, maxReplyBytes, parseJsonRpcMessage);
	const body = new ReadableStream<Uint8Array>({
		pull: async (controller) => {
			const message = await reader.next();
			if (message === null) {
				controller.close();
				return;
			}
			controller.enqueue(sseMessage(await map(message)));
		},
		cancel: () => reader.cancel(),
	});
	return new Response(body, { status: reply.status, headers: { ...SSE_HEADERS, "x-accel-buffering": "no" } });
}

/** The upstream's reply with the task id of any result in it mapped by `map`. */
export function mapReplyTaskIds(
	reply: Response,
	maxReplyBytes: number,
	map: (taskId: string) => Promise<string>,
): Promise<Response> {
	return mapReplyMessages(reply, maxReplyBytes, (message) => mapResultTaskId(message, map));
}
