import { DiscoverRequestSchema, SubscriptionsListenRequestSchema } from "@modelcontextprotocol/core";
import {
	CallToolRequestSchema,
	CancelledNotificationSchema,
	CancelTaskRequestSchema,
	CompleteRequestSchema,
	GetPromptRequestSchema,
	GetTaskPayloadRequestSchema,
	GetTaskRequestSchema,
	InitializedNotificationSchema,
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
	ListPromptsRequestSchema,
	ListResourcesRequestSchema,
	ListResourceTemplatesRequestSchema,
	ListTasksRequestSchema,
	ListToolsRequestSchema,
	PingRequestSchema,
	ProgressNotificationSchema,
	PromptReferenceSchema,
	ReadResourceRequestSchema,
	ResourceTemplateReferenceSchema,
	RootsListChangedNotificationSchema,
	SetLevelRequestSchema,
	SubscribeRequestSchema,
	UnsubscribeRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { GatewayError } from "./gateway-error.ts";
import { MAX_JSON_DEPTH, nestsDeeperThan } from "./json-depth.ts";
import {
	COMPLETION_COMPLETE,
	INITIALIZE,
	LOGGING_SET_LEVEL,
	NOTIFICATIONS_CANCELLED,
	NOTIFICATIONS_INITIALIZED,
	NOTIFICATIONS_PROGRESS,
	NOTIFICATIONS_ROOTS_LIST_CHANGED,
	PING,
	PROMPTS_GET,
	PROMPTS_LIST,
	RESOURCES_LIST,
	RESOURCES_READ,
	RESOURCES_SUBSCRIBE,
	RESOURCES_TEMPLATES_LIST,
	RESOURCES_UNSUBSCRIBE,
	SERVER_DISCOVER,
	SUBSCRIPTIONS_LISTEN,
	TASKS_CANCEL,
	TASKS_GET,
	TASKS_LIST,
	TASKS_RESULT,
	TASKS_UPDATE,
	TOOLS_CALL,
	TOOLS_LIST,
} from "./methods.ts";

/*
 * A client's message, parsed once where it enters the gateway (the edge) into
 * a union typed by the methods the gateway reads, each with its method's own
 * schema from the SDK; every later step (the session over RPC included, since
 * structured clone keeps plain objects) trusts the parse. A message of any
 * other method is a plain JSON-RPC request or notification, passed on as it
 * came and never read.
 */

/** Longest request id (as text) a client may use: ids key the gateway's maps of running requests. */
export const MAX_REQUEST_ID_LENGTH = 256;

type Shape = z.core.$ZodShape;

/**
 * The SDK's schema of a request (`method` and `params`) as a whole JSON-RPC
 * request: the envelope strict as in `JSONRPCRequestSchema`, the params loose,
 * so fields the schema does not name (a 2026-07-28 envelope's, a retry's
 * `requestState`) are kept as the client sent them. One parse validates what
 * `JSONRPCRequestSchema` did and the method's own params besides.
 */
function requestWith<M extends string, S extends Shape>(
	schema: z.ZodObject<{ method: z.ZodLiteral<M>; params: z.ZodObject<S> }>,
) {
	return JSONRPCRequestSchema.extend({ method: schema.shape.method, params: z.looseObject(schema.shape.params.shape) });
}

/** As `requestWith`, for a method whose params are optional (lists, `ping`, `server/discover`). */
function requestMaybeWith<M extends string, S extends Shape>(
	schema: z.ZodObject<{ method: z.ZodLiteral<M>; params: z.ZodOptional<z.ZodObject<S>> }>,
) {
	return JSONRPCRequestSchema.extend({
		method: schema.shape.method,
		params: z.looseObject(schema.shape.params.unwrap().shape).optional(),
	});
}

/** As `requestWith`, for notifications (`JSONRPCNotificationSchema`'s envelope). */
function notificationWith<M extends string, S extends Shape>(
	schema: z.ZodObject<{ method: z.ZodLiteral<M>; params: z.ZodObject<S> }>,
) {
	return JSONRPCNotificationSchema.extend({
		method: schema.shape.method,
		params: z.looseObject(schema.shape.params.shape),
	});
}

function notificationMaybeWith<M extends string, S extends Shape>(
	schema: z.ZodObject<{ method: z.ZodLiteral<M>; params: z.ZodOptional<z.ZodObject<S>> }>,
) {
	return JSONRPCNotificationSchema.extend({
		method: schema.shape.method,
		params: z.looseObject(schema.shape.params.unwrap().shape).optional(),
	});
}

/**
 * The tasks extension's `tasks/update` (2026-07-28, SEP-2663), which neither
 * SDK defines: it names its task as `tasks/cancel` does; its `inputResponses`
 * are checked against what the task asked, where it is answered.
 */
const UpdateTaskRequestSchema = CancelTaskRequestSchema.extend({ method: z.literal(TASKS_UPDATE) });

/**
 * `tools/call` as the SDK's schema has it, but for two fields. `task`
 * (2025-11-25's task augmentation) is read only by the tasks wire of a
 * session that holds tasks, which refuses a malformed one in its own words;
 * to any other receiver the spec has it ignored. `arguments` is checked for
 * what it is without being copied: for a JSON value, the SDK's
 * `z.record(z.string(), z.unknown())` accepts exactly the objects that are
 * not arrays, and rebuilds each one key by key, which doubled the cost of
 * parsing a call in workerd (where zod runs without its compiled parsers);
 * `null`, which some clients send for no arguments, is taken as none, as the
 * gateway always has (`normalizeOutgoing` sends `{}`).
 */
const ToolCallSchema = CallToolRequestSchema.extend({
	params: CallToolRequestSchema.shape.params.extend({
		task: z.unknown().optional(),
		arguments: z
			.custom<Record<string, unknown> | null>((value) => value === null || isJsonObject(value), {
				error: "Invalid input: expected an object",
			})
			.optional(),
	}),
});

/**
 * `completion/complete` as the SDK's schema has it, its nested objects as
 * loose as its params: a completion goes on as the client sent it, and only
 * what the schema names is read.
 */
const CompletionSchema = CompleteRequestSchema.extend({
	params: CompleteRequestSchema.shape.params.extend({
		ref: z.union([PromptReferenceSchema.loose(), ResourceTemplateReferenceSchema.loose()]),
		argument: CompleteRequestSchema.shape.params.shape.argument.loose(),
		context: CompleteRequestSchema.shape.params.shape.context.unwrap().loose().optional(),
	}),
});

/** How a message of one method the gateway reads is parsed into its place in the union. */
function inspected<K extends "request" | "notification", M extends string, T extends { method: M }>(
	kind: K,
	method: M,
	schema: z.ZodType<T>,
) {
	return {
		method,
		parse: (value: object, refusedParamsStatus: number): { kind: K; method: M; message: T } => ({
			kind,
			method,
			message: parsedAs(schema, method, value, refusedParamsStatus),
		}),
	};
}

/** The requests whose params the gateway reads, each with the SDK's schema of its method. */
const INSPECTED_REQUESTS = [
	inspected("request", PING, requestMaybeWith(PingRequestSchema)),
	inspected("request", TOOLS_LIST, requestMaybeWith(ListToolsRequestSchema)),
	inspected("request", TOOLS_CALL, requestWith(ToolCallSchema)),
	inspected("request", PROMPTS_LIST, requestMaybeWith(ListPromptsRequestSchema)),
	inspected("request", PROMPTS_GET, requestWith(GetPromptRequestSchema)),
	inspected("request", RESOURCES_LIST, requestMaybeWith(ListResourcesRequestSchema)),
	inspected("request", RESOURCES_TEMPLATES_LIST, requestMaybeWith(ListResourceTemplatesRequestSchema)),
	inspected("request", RESOURCES_READ, requestWith(ReadResourceRequestSchema)),
	inspected("request", RESOURCES_SUBSCRIBE, requestWith(SubscribeRequestSchema)),
	inspected("request", RESOURCES_UNSUBSCRIBE, requestWith(UnsubscribeRequestSchema)),
	inspected("request", COMPLETION_COMPLETE, requestWith(CompletionSchema)),
	inspected("request", LOGGING_SET_LEVEL, requestWith(SetLevelRequestSchema)),
	inspected("request", TASKS_GET, requestWith(GetTaskRequestSchema)),
	inspected("request", TASKS_RESULT, requestWith(GetTaskPayloadRequestSchema)),
	inspected("request", TASKS_LIST, requestMaybeWith(ListTasksRequestSchema)),
	inspected("request", TASKS_CANCEL, requestWith(CancelTaskRequestSchema)),
	inspected("request", TASKS_UPDATE, requestWith(UpdateTaskRequestSchema)),
	inspected("request", SERVER_DISCOVER, requestMaybeWith(DiscoverRequestSchema)),
	inspected("request", SUBSCRIPTIONS_LISTEN, requestWith(SubscriptionsListenRequestSchema)),
];

/** The notifications whose params the gateway reads, or on whose method it acts. */
const INSPECTED_NOTIFICATIONS = [
	inspected("notification", NOTIFICATIONS_INITIALIZED, notificationMaybeWith(InitializedNotificationSchema)),
	inspected("notification", NOTIFICATIONS_CANCELLED, notificationWith(CancelledNotificationSchema)),
	inspected("notification", NOTIFICATIONS_PROGRESS, notificationWith(ProgressNotificationSchema)),
	inspected(
		"notification",
		NOTIFICATIONS_ROOTS_LIST_CHANGED,
		notificationMaybeWith(RootsListChangedNotificationSchema),
	),
];

type InspectedRequest = ReturnType<(typeof INSPECTED_REQUESTS)[number]["parse"]>;
type InspectedNotification = ReturnType<(typeof INSPECTED_NOTIFICATIONS)[number]["parse"]>;

const REQUEST_PARSERS: ReadonlyMap<string, (value: object, status: number) => InspectedRequest> = new Map(
	INSPECTED_REQUESTS.map((entry) => [entry.method, entry.parse]),
);
const NOTIFICATION_PARSERS: ReadonlyMap<string, (value: object, status: number) => InspectedNotification> = new Map(
	INSPECTED_NOTIFICATIONS.map((entry) => [entry.method, entry.parse]),
);

/**
 * `initialize`: its params as the SDK's schema reads them (the session keeps
 * the client's capabilities and info from these), and the request as the
 * client sent it, which a transparent upstream is sent: the SDK's schema of
 * the capabilities drops what it does not know, extensions among them.
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
 * field. `refusedParamsStatus`: the HTTP status of that refusal, 200 for a
 * 2025 client (the answer to its request, as its session would give it), 400
 * for a 2026-07-28 one (that era's transport).
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
		if (parse) return parse(body, refusedParamsStatus);
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
 * A message of a method the gateway reads, parsed with its method's schema.
 * What is not JSON-RPC at all is refused as such; params the method's schema
 * refuses are -32602, its first issue in words.
 */
function parsedAs<T>(schema: z.ZodType<T>, method: string, body: object, refusedParamsStatus: number): T {
	const parsed = schema.safeParse(body);
	if (parsed.success) return parsed.data;
	const envelope = ("id" in body ? JSONRPCRequestSchema : JSONRPCNotificationSchema).safeParse(body);
	if (!envelope.success) throw notJsonRpc();
	throw new GatewayError("invalid_params", `Invalid params: ${paramsIssue(method, body, parsed.error)}.`, {
		status: refusedParamsStatus,
		id: requestIdOf(body),
	});
}

/** The first issue with a message's params, as a sentence: "tools/call needs a name string". */
function paramsIssue(method: string, body: object, error: z.ZodError): string {
	const issue = error.issues[0];
	if (!issue) return `${method}'s params are malformed`;
	const [, ...path] = issue.path.map(String);
	const field = path.join(".");
	const params = "params" in body ? body.params : undefined;
	const [key] = path;
	const missing =
		path.length === 1 && key !== undefined && (typeof params !== "object" || params === null || !(key in params));
	if (issue.code === "invalid_type" && path.length === 0 && params === undefined) return `${method} needs params`;
	if (issue.code === "invalid_type" && missing) return `${method} needs a ${field} ${issue.expected}`;
	return `${method}'s ${field === "" ? "params" : `params.${field}`}: ${issue.message}`;
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

function notJsonRpc(): GatewayError {
	return new GatewayError(
		"invalid_request",
		"Invalid request: the body is not a JSON-RPC 2.0 request, notification or response.",
	);
}

/** Whether a JSON value is an object (not an array, not null): what JSON-RPC params and MCP results are. */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
	return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The id of a JSON-RPC request body, when it has a usable one (errors carry it). */
export function requestIdOf(body: unknown): string | number | null {
	if (typeof body !== "object" || body === null || !("id" in body)) return null;
	const id = body.id;
	return typeof id === "string" || (typeof id === "number" && Number.isFinite(id)) ? id : null;
}

/*
 * Accessors: what the gateway reads of a parsed message, by name, so no code
 * spells out a path into params or casts one.
 */

/** The tool a request calls; null for any request but `tools/call`. */
export function calledTool(request: ClientRequest): string | null {
	return request.method === TOOLS_CALL ? request.message.params.name : null;
}

/** A call's arguments (none: `{}`, as the call is sent). */
export function callArguments(call: ToolCall): Record<string, unknown> {
	return call.message.params.arguments ?? {};
}

/**
 * Whether a `tools/call` asks to be made a task (2025-11-25's task
 * augmentation, `params.task`). What it asks is read by the tasks wire of a
 * session that holds tasks, which refuses a malformed one in its own words,
 * and nowhere else: to any other receiver the spec has it ignored.
 */
export function taskAsked(call: ToolCall): boolean {
	return "task" in call.message.params;
}

/** The resource a request reads, subscribes to or unsubscribes from; null for any other request. */
export function resourceUri(request: ClientRequest): string | null {
	switch (request.method) {
		case RESOURCES_READ:
		case RESOURCES_SUBSCRIBE:
		case RESOURCES_UNSUBSCRIBE:
			return request.message.params.uri;
		default:
			return null;
	}
}

/** The task a task method names (`tasks/get`, `tasks/result`, `tasks/cancel`, `tasks/update`); null for any other request. */
export function namedTaskId(request: ClientRequest): string | null {
	switch (request.method) {
		case TASKS_GET:
		case TASKS_RESULT:
		case TASKS_CANCEL:
		case TASKS_UPDATE:
			return request.message.params.taskId;
		default:
			return null;
	}
}

/** A request that names a task (`namedTaskId`). */
export type TaskNamingRequest = Extract<
	ClientRequest,
	{ method: typeof TASKS_GET | typeof TASKS_RESULT | typeof TASKS_CANCEL | typeof TASKS_UPDATE }
>;

/** The same task request naming another task (the upstream's own id for the task it holds). */
export function withTaskId<R extends TaskNamingRequest>(request: R, taskId: string): R {
	return { ...request, message: { ...request.message, params: { ...request.message.params, taskId } } };
}

/** The same call under another tool name (an alias's real name, an aggregate member's own). */
export function withToolName(call: ToolCall, name: string): ToolCall {
	return { ...call, message: { ...call.message, params: { ...call.message.params, name } } };
}

/** The same request under another id (the gateway's own, for a call it runs on a client's behalf). */
export function withRequestId<R extends SessionRequest>(request: R, id: string | number): R {
	return { ...request, message: { ...request.message, id } };
}
