import {
	JSONRPCErrorResponseSchema,
	type JSONRPCMessage,
	type JSONRPCNotification,
	JSONRPCNotificationSchema,
	JSONRPCRequestSchema,
	JSONRPCResultResponseSchema,
	type ProgressToken,
	type RequestId,
} from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { nestsDeeperThan } from "./json-depth.ts";

/**
 * One JSON-RPC message from untrusted text (an upstream's reply or event),
 * validated with the SDK's schema; null when it is not JSON, nests deeper
 * than MAX_JSON_DEPTH, or is not JSON-RPC. The one parser of messages the
 * gateway receives from upstreams.
 */
export function parseJsonRpcMessage(text: string): JSONRPCMessage | null {
	const value = jsonOf(text);
	return value === NOT_JSON ? null : jsonRpcMessageOf(value);
}

/**
 * Whether untrusted text is the response to the request `id`: exactly what
 * `isResponseTo(parseJsonRpcMessage(text), id)` says, with the schema run
 * only on a value that can be it. A relay that passes a reply on as it came
 * needs no more than this of each event (notifications, most of a busy
 * reply, are not validated at all).
 */
export function isResponseText(text: string, id: RequestId): boolean {
	return responseInText(text, id) !== null;
}

/** The response to the request `id` that untrusted text holds, parsed once; null when it holds none. */
export function responseInText(text: string, id: RequestId): JSONRPCMessage | null {
	const value = jsonOf(text);
	if (typeof value !== "object" || value === null || "method" in value || !("id" in value) || value.id !== id) {
		return null;
	}
	return jsonRpcMessageOf(value);
}

/**
 * One JSON-RPC message from a JSON value, validated with the SDK's schema for
 * its shape; null when it is none. The SDK's `JSONRPCMessageSchema` is the
 * union of four strict shapes and takes the first that fits; the keys decide
 * which one alone can fit (a method and an id: a request; a method: a
 * notification; a result: a result response; else an error response), so
 * that one is parsed alone, with the same outcome and without failing three
 * others first.
 */
export function jsonRpcMessageOf(value: unknown): JSONRPCMessage | null {
	const parsed = messageSchemaFor(value).safeParse(value);
	return parsed.success ? parsed.data : null;
}

function messageSchemaFor(value: unknown) {
	if (typeof value === "object" && value !== null && "method" in value) {
		return "id" in value ? JSONRPCRequestSchema : JSONRPCNotificationSchema;
	}
	return typeof value === "object" && value !== null && "result" in value
		? JSONRPCResultResponseSchema
		: JSONRPCErrorResponseSchema;
}

const NOT_JSON: unique symbol = Symbol("not JSON");

/** The value of JSON text, or NOT_JSON (for text nested deeper than MAX_JSON_DEPTH too: json-depth.ts says why). */
function jsonOf(text: string): unknown {
	if (nestsDeeperThan(text)) return NOT_JSON;
	try {
		return JSON.parse(text);
	} catch (error) {
		if (error instanceof SyntaxError) return NOT_JSON;
		throw error;
	}
}

const UnaddressedErrorSchema = z.object({
	jsonrpc: z.literal("2.0"),
	id: z.null(),
	error: z.object({ code: z.number().int(), message: z.string() }),
});

/**
 * Whether text is a JSON-RPC error answering no request (`"id": null`): what a
 * server sends when it could not read the request's id, and how 2025 servers
 * refuse a request outside a session. The SDK's schema (rightly) takes it for
 * no response, but it shows the sender speaks JSON-RPC.
 */
export function isUnaddressedError(text: string): boolean {
	try {
		return UnaddressedErrorSchema.safeParse(JSON.parse(text)).success;
	} catch (error) {
		if (error instanceof SyntaxError) return false;
		throw error;
	}
}

/** A notification (a method, no id), told by shape: the message was validated already. */
export function isNotification(message: JSONRPCMessage): message is JSONRPCNotification {
	return "method" in message && !("id" in message);
}

/** A response (result or error) to the request with this id. */
export function isResponseTo(message: JSONRPCMessage, id: RequestId): boolean {
	return !("method" in message) && "id" in message && message.id === id;
}

/** The progress token a peer's `notifications/progress` carries in its params; null when it carries none. */
export function progressTokenOf(message: JSONRPCNotification): ProgressToken | null {
	const token = message.params?.progressToken;
	return typeof token === "string" || typeof token === "number" ? token : null;
}

/** The id of a JSON-RPC request body, when it has a usable one (errors carry it). */
export function requestIdOf(body: unknown): string | number | null {
	if (typeof body !== "object" || body === null || !("id" in body)) return null;
	const id = body.id;
	return typeof id === "string" || (typeof id === "number" && Number.isFinite(id)) ? id : null;
}
