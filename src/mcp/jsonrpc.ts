import {
	type InitializeRequest,
	InitializeRequestSchema,
	JSONRPCErrorResponseSchema,
	type JSONRPCMessage,
	type JSONRPCNotification,
	JSONRPCNotificationSchema,
	type JSONRPCRequest,
	JSONRPCRequestSchema,
	JSONRPCResultResponseSchema,
	type RequestId,
} from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { GatewayError } from "./gateway-error.ts";
import { MAX_JSON_DEPTH, nestsDeeperThan } from "./json-depth.ts";

/** Longest request id (as text) a client may use: ids key the gateway's maps of running requests. */
export const MAX_REQUEST_ID_LENGTH = 256;

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

/** A client message, parsed and classified once at the edge. */
export type ClientMessage =
	| { kind: "initialize"; message: JSONRPCRequest; params: InitializeRequest["params"] }
	| { kind: "request"; message: JSONRPCRequest }
	| { kind: "notification"; message: JSONRPCNotification }
	| { kind: "response"; message: JSONRPCMessage };

/** Parses request body text into one JSON-RPC message, with errors a person can act on. */
export function parseClientMessage(text: string): ClientMessage {
	return clientMessageOf(parseJsonBody(text));
}

/** A request body's JSON value; not JSON at all is a parse error, JSON nested too deeply an invalid request. */
export function parseJsonBody(text: string): unknown {
	let value: unknown;
	try {
		value = JSON.parse(text);
	} catch (error) {
		throw new GatewayError("parse_error", "Parse error: the request body is not valid JSON.", { cause: error });
	}
	if (nestsDeeperThan(text)) {
		throw new GatewayError(
			"invalid_request",
			`Invalid Request: the request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels, which the gateway does not read.`,
		);
	}
	return value;
}

/** One 2025-era JSON-RPC message from a body's JSON value, with errors a person can act on. */
export function clientMessageOf(value: unknown): ClientMessage {
	if (Array.isArray(value)) {
		throw new GatewayError(
			"invalid_request",
			"Invalid request: JSON-RPC batches are not supported; send one message per POST.",
		);
	}
	const message = jsonRpcMessageOf(withoutNullMeta(value));
	if (message === null) {
		throw new GatewayError(
			"invalid_request",
			"Invalid request: the body is not a JSON-RPC 2.0 request, notification or response.",
		);
	}
	if ("id" in message && String(message.id).length > MAX_REQUEST_ID_LENGTH) {
		throw new GatewayError(
			"invalid_request",
			`Invalid request: the request id is longer than ${MAX_REQUEST_ID_LENGTH} characters.`,
		);
	}
	const token =
		"params" in message ? (message.params?._meta as { progressToken?: unknown } | undefined)?.progressToken : undefined;
	if (token !== undefined && String(token).length > MAX_REQUEST_ID_LENGTH) {
		throw new GatewayError(
			"invalid_request",
			`Invalid request: the progress token is longer than ${MAX_REQUEST_ID_LENGTH} characters.`,
		);
	}
	return classify(message);
}

/**
 * `params._meta: null` means "no metadata"; the schema wants an object or
 * nothing, so it is dropped rather than refused (it is never sent upstream).
 */
export function withoutNullMeta(value: unknown): unknown {
	if (typeof value !== "object" || value === null) return value;
	const params = (value as { params?: unknown }).params;
	if (typeof params !== "object" || params === null || (params as { _meta?: unknown })._meta !== null) return value;
	const { _meta: _dropped, ...rest } = params as Record<string, unknown>;
	return { ...value, params: rest };
}

/**
 * Sorts a message the schema already accepted by its shape, without a second
 * validation: requests have a method and an id, notifications a method only.
 */
function classify(message: JSONRPCMessage): ClientMessage {
	if ("method" in message && "id" in message) {
		const request = message as JSONRPCRequest;
		if (request.method === "initialize") {
			const init = InitializeRequestSchema.safeParse(request);
			if (!init.success) {
				throw new GatewayError(
					"invalid_request",
					`Invalid initialize request: ${init.error.issues[0]?.message ?? "bad params"} at params.${init.error.issues[0]?.path.join(".") ?? ""}.`,
				);
			}
			return { kind: "initialize", message: request, params: init.data.params };
		}
		return { kind: "request", message: request };
	}
	if ("method" in message) return { kind: "notification", message: message as JSONRPCNotification };
	return { kind: "response", message };
}
