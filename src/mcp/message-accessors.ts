import type { ClientRequest, SessionRequest, ToolCall } from "./client-message.ts";
import {
	RESOURCES_READ,
	RESOURCES_SUBSCRIBE,
	RESOURCES_UNSUBSCRIBE,
	TASKS_CANCEL,
	TASKS_GET,
	TASKS_RESULT,
	TASKS_UPDATE,
	TOOLS_CALL,
} from "./methods.ts";

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

/** The same call with other arguments (a request-stage guard's redactions). */
export function withArguments(call: ToolCall, args: Record<string, unknown>): ToolCall {
	return { ...call, message: { ...call.message, params: { ...call.message.params, arguments: args } } };
}

/** A resource request (read, subscribe, unsubscribe) for another URI: the one its member knows the resource by. */
export function withResourceUri<R extends Extract<SessionRequest, { method: ResourceMethod }>>(
	request: R,
	uri: string,
): R {
	return { ...request, message: { ...request.message, params: { ...request.message.params, uri } } };
}

type ResourceMethod = typeof RESOURCES_READ | typeof RESOURCES_SUBSCRIBE | typeof RESOURCES_UNSUBSCRIBE;

/** The same request under another id (the gateway's own, for a call it runs on a client's behalf). */
export function withRequestId<R extends SessionRequest>(request: R, id: string | number): R {
	return { ...request, message: { ...request.message, id } };
}
