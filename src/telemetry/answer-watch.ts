import type { JSONRPCMessage, RequestId } from "@modelcontextprotocol/sdk/types.js";
import { createParser } from "eventsource-parser";
import { parseJsonRpcMessage, responseInText } from "../mcp/jsonrpc.ts";
import { joinChunks } from "../mcp/read-capped.ts";
import { once } from "../primitives/once.ts";

/**
 * A JSON reply longer than this is passed on without its answer being read
 * for telemetry (it still counts its bytes): a span then knows it ended, not
 * how. The gateway's own reply cap bounds what it relays anyway.
 */
const MAX_WATCHED_JSON_BYTES = 4 * 1024 * 1024;

/** How a watched reply ended: the JSON-RPC answer to the request (null: none was seen) and the bytes relayed. */
export type AnswerSeen = (answer: JSONRPCMessage | null, bytes: number) => void;

/**
 * `response` as it was, its body passed on chunk by chunk, with `seen`
 * called once when the body has been relayed to its end, broke off, or the
 * client went away. SSE bodies are read with the parser the relay uses
 * (`eventsource-parser`), JSON bodies whole: the answer is the message that
 * responds to `requestId`. Nothing is changed, held back or delayed, but
 * for the headers when `headers` replaces them (the one new Response made).
 */
export function watchAnswer(
	response: Response,
	requestId: RequestId | null,
	seen: AnswerSeen,
	headers: Headers = response.headers,
): Response {
	const body = response.body;
	if (body === null) {
		seen(null, 0);
		if (headers === response.headers) return response;
		return new Response(null, { status: response.status, statusText: response.statusText, headers });
	}
	const sse = (response.headers.get("content-type") ?? "").includes("text/event-stream");
	let bytes = 0;
	let answer: JSONRPCMessage | null = null;
	const held: Uint8Array[] = [];
	let heldBytes = 0;
	const decoder = new TextDecoder();
	const parser = createParser({
		onEvent(event) {
			if (answer === null && requestId !== null) answer = responseInText(event.data, requestId);
		},
	});
	const finish = once(() => {
		if (!sse && heldBytes > 0 && heldBytes <= MAX_WATCHED_JSON_BYTES) {
			answer = parseJsonRpcMessage(new TextDecoder().decode(joinChunks(held)));
		}
		seen(answer, bytes);
	});
	const reader = body.getReader();
	const watched = new ReadableStream<Uint8Array>({
		async pull(controller) {
			try {
				const { done, value } = await reader.read();
				if (done) {
					finish();
					controller.close();
					return;
				}
				bytes += value.byteLength;
				if (sse) parser.feed(decoder.decode(value, { stream: true }));
				else if (heldBytes + value.byteLength <= MAX_WATCHED_JSON_BYTES) {
					held.push(value);
					heldBytes += value.byteLength;
				} else heldBytes = MAX_WATCHED_JSON_BYTES + 1;
				controller.enqueue(value);
			} catch (error) {
				finish();
				controller.error(error);
			}
		},
		cancel(reason) {
			finish();
			return reader.cancel(reason);
		},
	});
	return new Response(watched, { status: response.status, statusText: response.statusText, headers });
}
