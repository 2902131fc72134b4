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
	JSONRPCNotificationSchema,
	JSONRPCRequestSchema,
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
import { isJsonObject } from "../primitives/json-object.ts";
import { GatewayError } from "./gateway-error.ts";
import { requestIdOf } from "./jsonrpc.ts";
import {
	COMPLETION_COMPLETE,
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
 * Each method whose messages the gateway reads, with the SDK's schema of it
 * set on the JSON-RPC envelope (one parse checks both), where and why the
 * gateway departs from that schema, and how a message of it is parsed into
 * its place in the union of client messages (`client-message.ts`) or refused.
 */

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
 * (2025-11-25's task augmentation) is left to the loose params, as it came:
 * it is read only by the tasks wire of a session that holds tasks, which
 * refuses a malformed one in its own words; to any other receiver the spec
 * has it ignored. `arguments` is checked for
 * what it is without being copied: for a JSON value, the SDK's
 * `z.record(z.string(), z.unknown())` accepts exactly the objects that are
 * not arrays, and rebuilds each one key by key, which doubled the cost of
 * parsing a call in workerd (where zod runs without its compiled parsers);
 * `null`, which some clients send for no arguments, is taken as none, as the
 * gateway always has (`normalizeOutgoing` sends `{}`).
 */
const ToolCallSchema = CallToolRequestSchema.extend({
	params: CallToolRequestSchema.shape.params.omit({ task: true }).extend({
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

/** A request of a method the gateway reads, in its place in the union: `method` its method, `message` typed by it. */
export type InspectedRequest = ReturnType<(typeof INSPECTED_REQUESTS)[number]["parse"]>;
/** A notification of a method the gateway reads, likewise. */
export type InspectedNotification = ReturnType<(typeof INSPECTED_NOTIFICATIONS)[number]["parse"]>;

/** The parser of each request method the gateway reads (`refusedParamsStatus`: see `clientMessageOf`). */
export const REQUEST_PARSERS: ReadonlyMap<string, (value: object, status: number) => InspectedRequest> = new Map(
	INSPECTED_REQUESTS.map((entry) => [entry.method, entry.parse]),
);
/** The parser of each notification method the gateway reads. */
export const NOTIFICATION_PARSERS: ReadonlyMap<string, (value: object, status: number) => InspectedNotification> =
	new Map(INSPECTED_NOTIFICATIONS.map((entry) => [entry.method, entry.parse]));

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

/** What is not a JSON-RPC 2.0 message at all is refused as such (-32600). */
export function notJsonRpc(): GatewayError {
	return new GatewayError(
		"invalid_request",
		"Invalid request: the body is not a JSON-RPC 2.0 request, notification or response.",
	);
}
