import type { JSONRPCMessage, RequestId } from "@modelcontextprotocol/sdk/types.js";
import { isResponseTo, parseJsonRpcMessage } from "../../mcp/jsonrpc.ts";
import { readCapped } from "../../mcp/read-capped.ts";
import { readSseEvents } from "../../mcp/sse.ts";
import type { LiveStream } from "../streams/client-streams.ts";

/**
 * How an aggregate member's reply reaches the client: on a resumable stream
 * of the gateway's own, read by the gateway whether or not the client is
 * still connected, so the call runs to its end and its result can be resumed.
 */
export interface ReplyRoute {
	/** The client's stream for this reply and the response that connects the client to it. */
	open(): Promise<{ stream: LiveStream; response: Response }>;
	/** The response to the request as the client gets it (a member's resource URIs in the aggregate's form). */
	answer(response: JSONRPCMessage): JSONRPCMessage;
	/** A message of the reply other than the response: what the client gets on the stream (null: nothing). */
	route(message: JSONRPCMessage, stream: LiveStream): JSONRPCMessage | null;
	/** The reply is over; `task` is the reading, kept running past the client's connection. */
	reading(task: Promise<void>, stream: LiveStream): void;
}

export interface MemberReplyOptions {
	/** The id of the request the reply answers. */
	requestId: RequestId;
	/** SSE (else one JSON message). */
	sse: boolean;
	/** Cap on one event, or on the JSON reply. */
	maxBytes: number;
	/** The ending of a reply that ended (`null`) or broke before its response; null: none (the client cancelled). */
	failed: (error: unknown) => JSONRPCMessage | null;
	/** The ending of a JSON reply that is not the response to the request. */
	notAnAnswer: () => JSONRPCMessage;
	/** The ending of a reply over the cap. */
	tooLarge: () => JSONRPCMessage;
}

/**
 * Reads an aggregate member's reply onto the client's stream: its response
 * to the request (sent at once; the stream ends there), and what `route` lets
 * through of everything else. A reply that ends or breaks first ends the
 * stream with the message `failed` gives.
 */
export async function readMemberReply(
	body: ReadableStream<Uint8Array>,
	stream: LiveStream,
	route: ReplyRoute,
	options: MemberReplyOptions,
): Promise<void> {
	let answered = false;
	const take = (reply: JSONRPCMessage | null): boolean => {
		if (reply === null) return false;
		if (isResponseTo(reply, options.requestId)) {
			// Sent and ended at once: the reply's remaining bytes are dropped afterwards, not waited for.
			stream.send(route.answer(reply));
			stream.end();
			answered = true;
			return true;
		}
		const passed = route.route(reply, stream);
		if (passed) stream.send(passed);
		return false;
	};
	let ending: JSONRPCMessage | null = null;
	try {
		if (options.sse) {
			await readSseEvents(body, (event) => take(parseJsonRpcMessage(event.data)), options.maxBytes);
		} else {
			const bytes = await readCapped(body, options.maxBytes);
			if (bytes === null) throw new RangeError("reply over the cap");
			if (!take(parseJsonRpcMessage(new TextDecoder().decode(bytes)))) ending = options.notAnAnswer();
		}
		if (!answered) ending ??= options.failed(null);
	} catch (error) {
		if (!answered) ending = error instanceof RangeError ? options.tooLarge() : options.failed(error);
	}
	if (ending) stream.send(ending);
	stream.end();
}
