import type { JSONRPCMessage, JSONRPCNotification, RequestId } from "@modelcontextprotocol/sdk/types.js";
import { GatewayError } from "../mcp/gateway-error.ts";
import { MAX_JSON_DEPTH } from "../mcp/json-depth.ts";
import { isNotification, isResponseTo, parseJsonRpcMessage } from "../mcp/jsonrpc.ts";
import { readCapped } from "../mcp/read-capped.ts";
import { readSseEvents } from "../mcp/sse.ts";
import { upstreamProtocolError } from "./upstream-status.ts";

/** A JSON-RPC reply read from an upstream, with its size on the wire. */
export interface Reply {
	message: JSONRPCMessage;
	bytes: number;
}

export interface ReplyReading {
	/** The upstream, named in failures. */
	server: string;
	/** Cap on one SSE event, or on the JSON body. */
	maxBytes: number;
	/** Hears the notifications an SSE reply carries before its response. */
	onNotification?: ((message: JSONRPCNotification) => void) | undefined;
}

/**
 * Reads the JSON-RPC response for `id` from an upstream's JSON or SSE body,
 * under the reply cap: an over-size reply is `reply_too_large`, read no
 * further; anything that is not a response to `id` is an `upstream_error`
 * naming the server. The one reader of upstream replies, for both eras.
 */
export async function readUpstreamReply(response: Response, id: RequestId, reading: ReplyReading): Promise<Reply> {
	const { server, maxBytes: cap } = reading;
	const type = response.headers.get("content-type") ?? "";
	if (!response.body) throw upstreamProtocolError(server, "an empty body");
	if (type.includes("text/event-stream")) {
		let reply: Reply | undefined;
		try {
			await readSseEvents(
				response.body,
				(event) => {
					const message = parseJsonRpcMessage(event.data);
					if (!message) return false;
					if (isNotification(message)) reading.onNotification?.(message);
					else if (isResponseTo(message, id)) reply = { message, bytes: event.data.length };
					return reply !== undefined;
				},
				cap,
			);
		} catch (error) {
			if (error instanceof RangeError)
				throw upstreamTooLarge(server, `an event of its reply is larger than ${cap} bytes`);
			throw error;
		}
		if (!reply) throw upstreamProtocolError(server, "an event stream that ended before the response");
		return reply;
	}
	if (type.includes("application/json")) {
		const bytes = await readCapped(response.body, cap);
		if (bytes === null) throw upstreamTooLarge(server, `its reply is larger than ${cap} bytes`);
		const message = parseJsonRpcMessage(new TextDecoder().decode(bytes));
		if (!message) {
			throw upstreamProtocolError(
				server,
				`a body that is not a JSON-RPC message (or nests deeper than ${MAX_JSON_DEPTH} levels)`,
			);
		}
		if (!isResponseTo(message, id)) {
			throw upstreamProtocolError(server, "a JSON reply that does not answer the request it was sent");
		}
		return { message, bytes: bytes.byteLength };
	}
	await response.body.cancel();
	throw upstreamProtocolError(server, `an unexpected content type (${type || "none"})`);
}

/** An upstream sent more than the gateway relays (`what` says what). */
export function upstreamTooLarge(server: string, what: string): GatewayError {
	return new GatewayError(
		"reply_too_large",
		`Upstream server '${server}' sent too much: ${what}, which the gateway does not relay.`,
		{ server },
	);
}
