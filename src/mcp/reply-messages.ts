import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { mediaTypeOf } from "../primitives/media-type.ts";
import { mapResultTaskId } from "./2026-07-28/tasks-extension.ts";
import { parseJsonRpcMessage } from "./jsonrpc.ts";
import { readCapped } from "./read-capped.ts";
import { SSE_HEADERS, SseMessageReader, sseMessage } from "./sse.ts";

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
