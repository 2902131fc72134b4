import {
	isJSONRPCRequest,
	type JSONRPCMessage,
	type JSONRPCRequest,
	type RequestId,
} from "@modelcontextprotocol/sdk/types.js";
import { GatewayError } from "../../mcp/gateway-error.ts";
import { isResponseTo, parseJsonRpcMessage } from "../../mcp/jsonrpc.ts";
import { readCapped } from "../../mcp/read-capped.ts";
import { readSseEvents } from "../../mcp/sse.ts";
import type { HeldTask } from "./held-task.ts";

/** How a held call ended: its result, or the JSON-RPC error it was answered with. */
export type TaskOutcome = { result: Record<string, unknown> } | { error: NonNullable<HeldTask["error"]> };

/**
 * The answer to request `id` in the session's reply to it, as the client
 * would have read it: a JSON body, or the response event of an SSE one. A
 * request to the client on the way (elicitation, sampling) goes to `asked`;
 * progress and other notifications are not kept. The body is read to its
 * end, so the reply finishes exactly as a client's would. Null when it holds
 * no answer (it ended first); over `maxBytes` a RangeError.
 */
export async function answerIn(
	response: Response,
	id: RequestId,
	maxBytes: number,
	asked: (request: JSONRPCRequest) => void,
): Promise<JSONRPCMessage | null> {
	const body = response.body;
	if (!body) return null;
	if ((response.headers.get("content-type") ?? "").includes("text/event-stream")) {
		let answer: JSONRPCMessage | null = null;
		await readSseEvents(
			body,
			(event) => {
				const message = answer === null ? parseJsonRpcMessage(event.data) : null;
				if (message === null) return false;
				if (isResponseTo(message, id)) answer = message;
				else if (isJSONRPCRequest(message)) asked(message);
				return false;
			},
			maxBytes,
		);
		return answer;
	}
	const bytes = await readCapped(body, maxBytes);
	if (bytes === null) throw new RangeError(`a reply over ${maxBytes} bytes`);
	const message = parseJsonRpcMessage(new TextDecoder().decode(bytes));
	return message !== null && isResponseTo(message, id) ? message : null;
}

/** What an answer means for the task: a result, or an error. */
export function outcomeOf(answer: JSONRPCMessage): TaskOutcome | null {
	if ("result" in answer) return { result: answer.result };
	if ("error" in answer) return { error: answer.error };
	return null;
}

/** A result bigger than the session keeps: the task fails, and says so. */
export function resultTooLarge(tool: string, limit: number): GatewayError {
	return new GatewayError(
		"reply_too_large",
		`The result of '${tool}' is larger than ${limit} bytes, the most the gateway keeps for a task, so it was not kept. The call ran: check its effect before calling it again, or call it without a task to receive its result directly.`,
	);
}
