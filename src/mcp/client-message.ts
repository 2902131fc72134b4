import {
	type InitializeRequest,
	InitializeRequestSchema,
	type JSONRPCErrorResponse,
	JSONRPCErrorResponseSchema,
	type JSONRPCNotification,
	JSONRPCNotificationSchema,
	type JSONRPCRequest,
	JSONRPCRequestSchema,
	type JSONRPCResultResponse,
	JSONRPCResultResponseSchema,
} from "@modelcontextprotocol/sdk/types.js";
import type { z } from "zod";
import { GatewayError } from "./gateway-error.ts";
import { MAX_JSON_DEPTH, nestsDeeperThan } from "./json-depth.ts";
import {
	type InspectedNotification,
	type InspectedRequest,
	NOTIFICATION_PARSERS,
	notJsonRpc,
	REQUEST_PARSERS,
} from "./method-schemas.ts";
import { INITIALIZE, type TOOLS_CALL } from "./methods.ts";

/*
 * A client's message, parsed once where it enters the gateway (the edge) into
 * a union typed by the methods the gateway reads, each with its method's own
 * schema from the SDK (`method-schemas.ts`); every later step (the session
 * over RPC included, since structured clone keeps plain objects) trusts the
 * parse. A message of any other method is a plain JSON-RPC request or
 * notification, passed on as it came and never read. What code reads of a
 * parsed message, it reads through `message-accessors.ts` or the narrowed type.
 */

/** Longest request id (as text) a client may use: ids key the gateway's maps of running requests. */
export const MAX_REQUEST_ID_LENGTH = 256;

/**
 * `initialize`: its params as the SDK's schema reads them (the session keeps
 * the client's capabilities and info from these), and the request as the
 * client sent it, which a transparent upstream is sent: the SDK's schema of
 * the capabilities drops keys it does not know. It keeps `extensions` (MCP
 * Apps' `io.modelcontextprotocol/ui` among them), which an aggregate's
 * members are initialized with.
 */
export interface InitializeMessage {
	kind: "request";
	method: typeof INITIALIZE;
	message: JSONRPCRequest;
	params: InitializeRequest["params"];
}

/** A request of a method the gateway does not read: `method` null, passed on as it came. */
export interface OtherRequest {
	kind: "request";
	method: null;
	message: JSONRPCRequest;
}

/** A notification of a method the gateway does not read: `method` null, passed on as it came. */
export interface OtherNotification {
	kind: "notification";
	method: null;
	message: JSONRPCNotification;
}

/** A client's answer to a request the gateway sent it (on a member's or a held task's behalf). */
export interface ClientResponse {
	kind: "response";
	message: JSONRPCResultResponse | JSONRPCErrorResponse;
}

/**
 * A client's request, parsed once: `method` names its method when the gateway
 * reads it (then `message` is typed by it), null for any other.
 */
export type ClientRequest = InspectedRequest | InitializeMessage | OtherRequest;
export type ClientNotification = InspectedNotification | OtherNotification;
export type ClientMessage = ClientRequest | ClientNotification | ClientResponse;

/** The methods whose requests the gateway reads. */
export type RequestMethod = InspectedRequest["method"];
/** A request of `method`, parsed. */
export type RequestOf<M extends RequestMethod> = Extract<InspectedRequest, { method: M }>["message"];
/** The methods whose notifications the gateway reads. */
export type NotificationMethod = InspectedNotification["method"];
/** A notification of `method`, parsed. */
export type NotificationOf<M extends NotificationMethod> = Extract<InspectedNotification, { method: M }>["message"];
/** A request after `initialize`: what a session is sent. */
export type SessionRequest = Exclude<ClientRequest, InitializeMessage>;
/** A message after `initialize`: what a session is sent. */
export type SessionMessage = SessionRequest | ClientNotification | ClientResponse;
/** A `tools/call`, parsed. */
export type ToolCall = Extract<SessionRequest, { method: typeof TOOLS_CALL }>;

/** Parses request body text into one client message, with errors a person can act on. */
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

/**
 * One client message from a body's JSON value, parsed once, with errors a
 * person can act on: what is not JSON-RPC is -32600; a message of a method
 * the gateway reads whose params its schema refuses is -32602 naming the
 * field. `refusedParamsStatus`: the HTTP status of that refusal of a request,
 * 200 for a 2025 client (the answer to its request, as its session would give
 * it), 400 for a 2026-07-28 one (that era's transport); a notification's is 400.
 */
export function clientMessageOf(value: unknown, refusedParamsStatus = 200): ClientMessage {
	if (Array.isArray(value)) {
		throw new GatewayError(
			"invalid_request",
			"Invalid request: JSON-RPC batches are not supported; send one message per POST.",
		);
	}
	const body = withoutNullMeta(value);
	if (typeof body !== "object" || body === null) throw notJsonRpc();
	checkLengths(body);
	// The keys decide which one shape alone can fit (the SDK's `JSONRPCMessageSchema` tries its four in turn).
	if ("method" in body) {
		const method = typeof body.method === "string" ? body.method : "";
		if ("id" in body) {
			if (method === INITIALIZE) return initializeOf(body);
			const parse = REQUEST_PARSERS.get(method);
			if (parse) return parse(body, refusedParamsStatus);
			return { kind: "request", method: null, message: plain(JSONRPCRequestSchema, body) };
		}
		const parse = NOTIFICATION_PARSERS.get(method);
		// A notification has no request to answer: its refusal is the POST's, 400.
		if (parse) return parse(body, 400);
		return { kind: "notification", method: null, message: plain(JSONRPCNotificationSchema, body) };
	}
	const message = "result" in body ? plain(JSONRPCResultResponseSchema, body) : plain(JSONRPCErrorResponseSchema, body);
	return { kind: "response", message };
}

/**
 * `params._meta: null` means "no metadata"; the schema wants an object or
 * nothing, so it is dropped rather than refused (it is never sent upstream).
 */
export function withoutNullMeta(value: unknown): unknown {
	if (typeof value !== "object" || value === null || !("params" in value)) return value;
	const params = value.params;
	if (typeof params !== "object" || params === null || !("_meta" in params) || params._meta !== null) return value;
	const { _meta: _dropped, ...rest } = params;
	return { ...value, params: rest };
}

/** The request id and progress token key the gateway's maps: each at most MAX_REQUEST_ID_LENGTH characters. */
function checkLengths(body: object): void {
	if ("id" in body && String(body.id).length > MAX_REQUEST_ID_LENGTH) {
		throw new GatewayError(
			"invalid_request",
			`Invalid request: the request id is longer than ${MAX_REQUEST_ID_LENGTH} characters.`,
		);
	}
	const params = "params" in body ? body.params : undefined;
	const meta = typeof params === "object" && params !== null && "_meta" in params ? params._meta : undefined;
	const token = typeof meta === "object" && meta !== null && "progressToken" in meta ? meta.progressToken : undefined;
	if (token !== undefined && String(token).length > MAX_REQUEST_ID_LENGTH) {
		throw new GatewayError(
			"invalid_request",
			`Invalid request: the progress token is longer than ${MAX_REQUEST_ID_LENGTH} characters.`,
		);
	}
}

/** A message of a method the gateway does not read, validated by the SDK's schema of its shape. */
function plain<T>(schema: z.ZodType<T>, body: object): T {
	const parsed = schema.safeParse(body);
	if (!parsed.success) throw notJsonRpc();
	return parsed.data;
}

/**
 * `initialize`, parsed twice over: with the SDK's JSON-RPC schema (what a
 * transparent upstream is sent, as it came) and with its method's (what the
 * session keeps of the client). Once per session.
 */
function initializeOf(body: object): InitializeMessage {
	const message = plain(JSONRPCRequestSchema, body);
	const init = InitializeRequestSchema.safeParse(message);
	if (!init.success) {
		throw new GatewayError(
			"invalid_request",
			`Invalid initialize request: ${init.error.issues[0]?.message ?? "bad params"} at params.${init.error.issues[0]?.path.join(".") ?? ""}.`,
		);
	}
	return { kind: "request", method: INITIALIZE, message, params: init.data.params };
}
