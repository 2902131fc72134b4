import type { JSONRPCErrorResponse, JSONRPCMessage, JSONRPCResultResponse } from "@modelcontextprotocol/sdk/types.js";
import { mediaTypeOf } from "../primitives/media-type.ts";
import { parseJsonRpcMessage } from "./jsonrpc.ts";
import { readCapped } from "./read-capped.ts";
import { SseMessageReader } from "./sse.ts";

/** A JSON-RPC answer: a result or an error, for one id. */
export type Answer = JSONRPCResultResponse | JSONRPCErrorResponse;

/**
 * The answer in a reply to one request, JSON or SSE (read under `maxBytes`),
 * or null when the reply holds none. Whatever else the stream carried before
 * it (progress, notifications, requests to the client) goes to `other`.
 */
export async function answerOf(
	reply: Response,
	maxBytes: number,
	other: (message: JSONRPCMessage) => void = () => {},
): Promise<Answer | null> {
	if (reply.body === null) return null;
	const type = mediaTypeOf(reply.headers.get("content-type"));
	if (type === "application/json") {
		const bytes = await readCapped(reply.body, maxBytes);
		const message = bytes === null ? null : parseJsonRpcMessage(new TextDecoder().decode(bytes));
		return message !== null && isAnswer(message) ? message : null;
	}
	if (type !== "text/event-stream") {
		await reply.body.cancel();
		return null;
	}
	const reader = new SseMessageReader(reply.body, maxBytes, parseJsonRpcMessage);
	for (let message = await reader.next(); message !== null; message = await reader.next()) {
		if (isAnswer(message)) {
			await reader.cancel();
			return message;
		}
		other(message);
	}
	return null;
}

function isAnswer(message: JSONRPCMessage): message is Answer {
	return "id" in message && ("result" in message || "error" in message);
}
