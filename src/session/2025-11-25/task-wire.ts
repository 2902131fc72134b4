import {
	type JSONRPCMessage,
	type JSONRPCNotification,
	type JSONRPCRequest,
	type RequestId,
	type ServerCapabilities,
	type Task,
	TaskMetadataSchema,
	type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import type { SessionRequest, ToolCall } from "../../mcp/client-message.ts";
import { describeError, GatewayError } from "../../mcp/gateway-error.ts";
import { taskAsked } from "../../mcp/message-accessors.ts";
import {
	NOTIFICATIONS_TASKS_STATUS,
	TASKS_CANCEL,
	TASKS_GET,
	TASKS_LIST,
	TASKS_RESULT,
	TOOLS_CALL,
} from "../../mcp/methods.ts";
import { SSE_HEADERS, sseMessage } from "../../mcp/sse.ts";
import { isJsonObject } from "../../primitives/json-object.ts";
import type { RunningCall } from "../running-call.ts";
import { renderRpcFailure } from "../session-responses.ts";
import { type HeldTask, isTerminal } from "../tasks/held-task.ts";
import type { HeldTasks } from "../tasks/held-tasks.ts";

/*
 * The 2025-11-25 wire of the tasks a session holds (the spec's tasks
 * utility): task-augmented `tools/call`, `tasks/get`, `tasks/result`,
 * `tasks/list`, `tasks/cancel`, `notifications/tasks/status`. Only for a
 * client that declared `capabilities.tasks`: to any other the gateway does
 * not declare tasks, and a `params.task` it sends is ignored, as the spec
 * asks of a receiver that did not declare them.
 */

/** What the gateway honours, as its initialize result declares it. */
export const GATEWAY_TASKS_CAPABILITY: NonNullable<ServerCapabilities["tasks"]> = {
	list: {},
	cancel: {},
	requests: { tools: { call: {} } },
};

/** The `_meta` key tying a message to its task. */
const RELATED_TASK = "io.modelcontextprotocol/related-task";

/** Whether the session holds tasks for this client: it declared `capabilities.tasks` at initialize. */
export function holdsTasksFor(clientCapabilities: Record<string, unknown> | undefined): boolean {
	const tasks = clientCapabilities?.tasks;
	return typeof tasks === "object" && tasks !== null;
}

/**
 * An initialize reply as the client sees it: `capabilities.tasks` is what
 * the gateway honours for a client that holds tasks, and absent for any
 * other (an upstream's own is never passed on: the gateway does not pass
 * task augmentation to upstreams).
 */
export function withTasksCapability(
	reply: JSONRPCMessage,
	clientCapabilities: Record<string, unknown> | undefined,
): JSONRPCMessage {
	if (!("result" in reply)) return reply;
	const capabilities = reply.result.capabilities;
	if (!isJsonObject(capabilities)) return reply;
	const { tasks: _upstreams, ...others } = capabilities;
	const declared = holdsTasksFor(clientCapabilities) ? { ...others, tasks: GATEWAY_TASKS_CAPABILITY } : others;
	return { ...reply, result: { ...reply.result, capabilities: declared } };
}

/**
 * A listed tool as the gateway honours it for a client that holds tasks: any
 * tool may be called as a task (the session holds it), so one its upstream
 * lists without task support is `optional`; `required` stays required.
 */
export function withTaskSupport(tool: Tool): Tool {
	if (tool.execution?.taskSupport === "required" || tool.execution?.taskSupport === "optional") return tool;
	return { ...tool, execution: { ...tool.execution, taskSupport: "optional" } };
}

/** A request without a call's task augmentation: the call as the upstream gets it. */
export function withoutTask(request: SessionRequest): SessionRequest {
	return request.method === TOOLS_CALL ? callWithoutTask(request) : request;
}

function callWithoutTask(call: ToolCall): ToolCall {
	if (!taskAsked(call)) return call;
	const { task: _task, ...params } = call.message.params;
	return { ...call, message: { ...call.message, params } };
}

/** A held task as a 2025-11-25 `Task` (a tool result with `isError` is a failed task there). */
export function wireTask(task: HeldTask): Task {
	const failedResult = task.status === "completed" && task.result?.isError === true;
	return {
		taskId: task.taskId,
		status: failedResult ? "failed" : task.status,
		...(task.statusMessage !== undefined
			? { statusMessage: task.statusMessage }
			: failedResult
				? { statusMessage: "The tool reported an error; tasks/result gives its result." }
				: {}),
		createdAt: new Date(task.createdAt).toISOString(),
		lastUpdatedAt: new Date(task.lastUpdatedAt).toISOString(),
		ttl: task.ttlMs,
		pollInterval: task.pollIntervalMs,
	};
}

/** `notifications/tasks/status`: the task's full state, without related-task metadata (the spec's SHOULD NOT). */
export function statusNotification(task: HeldTask): JSONRPCNotification {
	return { jsonrpc: "2.0", method: NOTIFICATIONS_TASKS_STATUS, params: wireTask(task) };
}

/**
 * Answers a request of the tasks wire: a task-augmented `tools/call` (held,
 * answered at once with `CreateTaskResult`) or a `tasks/*` request, the
 * client's `call` ending with its answer. Null for any other request, which
 * the session serves as usual.
 */
export async function answerTaskRequest(
	tasks: HeldTasks,
	request: SessionRequest,
	call: RunningCall,
): Promise<Response | null> {
	const { id } = request.message;
	if (request.method === TASKS_RESULT) {
		try {
			const { taskId } = request.message.params;
			const task = known(await tasks.get(taskId), taskId);
			if (!isTerminal(task.status)) return resultStream(tasks, id, taskId, call);
			return call.answered(Response.json(resultMessage(id, task)));
		} catch (error) {
			return call.answered(renderRpcFailure(error, id));
		}
	}
	const answer = await answered(tasks, request);
	return answer && call.answered(answer);
}

/** A task request answered at once (its answer complete when returned); null when not one. */
async function answered(tasks: HeldTasks, request: SessionRequest): Promise<Response | null> {
	const { id } = request.message;
	try {
		switch (request.method) {
			case TOOLS_CALL: {
				if (!taskAsked(request)) return null;
				const asked = TaskMetadataSchema.safeParse(request.message.params.task);
				if (!asked.success) throw invalid("params.task must be an object with an optional numeric ttl (milliseconds)");
				const task = await tasks.start(callWithoutTask(request), asked.data.ttl);
				return reply(id, { task: wireTask(task) });
			}
			case TASKS_GET: {
				const { taskId } = request.message.params;
				return reply(id, wireTask(known(await tasks.get(taskId), taskId)));
			}
			case TASKS_LIST: {
				const page = await tasks.list(request.message.params?.cursor);
				return reply(id, {
					tasks: page.tasks.map(wireTask),
					...(page.nextCursor !== undefined ? { nextCursor: page.nextCursor } : {}),
				});
			}
			case TASKS_CANCEL: {
				const { taskId } = request.message.params;
				const task = known(await tasks.get(taskId), taskId);
				if (isTerminal(task.status)) {
					throw invalid(`cannot cancel task '${taskId}': it is already ${wireTask(task).status}`);
				}
				return reply(id, wireTask(known(await tasks.cancel(taskId), taskId)));
			}
			default:
				return null;
		}
	} catch (error) {
		return renderRpcFailure(error, id);
	}
}

/**
 * `tasks/result` of a task still running: an SSE stream that carries what
 * the call asks the client meanwhile (the spec's `input_required` path, each
 * request tied to the task by its related-task metadata; the client answers
 * with a POST, as any answer), then the task's result once it is terminal.
 * A client that leaves changes nothing for the task.
 */
function resultStream(tasks: HeldTasks, id: RequestId, taskId: string, call: RunningCall): Response {
	let stop = () => {};
	const body = new ReadableStream<Uint8Array>({
		start(controller) {
			const send = (message: JSONRPCMessage) => {
				try {
					controller.enqueue(sseMessage(message));
				} catch {
					// The client left: the stream is closed, and the task goes on without it.
				}
			};
			const watching = tasks.questions(taskId, (question) => send(relatedTo(question, taskId)));
			stop = watching.stop;
			for (const question of watching.asked) send(relatedTo(question, taskId));
			tasks
				.settle(taskId, Number.POSITIVE_INFINITY)
				.then((task) => {
					send(task ? resultMessage(id, task) : { jsonrpc: "2.0", id, error: unknownTask(taskId).toJsonRpcError() });
					controller.close();
				})
				.catch((error: unknown) => console.warn(`tasks/result stream ended: ${describeError(error)}`))
				.finally(() => {
					stop();
					call.end();
				});
		},
		cancel() {
			stop();
			call.end();
		},
	});
	return new Response(call.endsWith(body), { headers: SSE_HEADERS });
}

/** A request the task's call makes of the client, tied to the task. */
function relatedTo(question: JSONRPCRequest, taskId: string): JSONRPCRequest {
	const params = question.params ?? {};
	return { ...question, params: { ...params, _meta: { ...params._meta, [RELATED_TASK]: { taskId } } } };
}

/**
 * `tasks/result` of a terminal task: exactly what the call would have been
 * answered (its result, or its JSON-RPC error), the result carrying the
 * related-task metadata the spec requires.
 */
function resultMessage(id: RequestId, task: HeldTask): JSONRPCMessage {
	if (task.result) {
		const meta = isJsonObject(task.result._meta) ? task.result._meta : {};
		return {
			jsonrpc: "2.0",
			id,
			result: { ...task.result, _meta: { ...meta, [RELATED_TASK]: { taskId: task.taskId } } },
		};
	}
	if (task.error) return { jsonrpc: "2.0", id, error: task.error };
	const cancelled = new GatewayError(
		"cancelled",
		`Task '${task.taskId}' was cancelled before it finished, so it has no result.`,
	);
	return { jsonrpc: "2.0", id, error: cancelled.toJsonRpcError() };
}

function reply(id: RequestId, result: Record<string, unknown>): Response {
	return Response.json({ jsonrpc: "2.0", id, result });
}

/** The task, or the spec's -32602 for an id this session does not hold. */
function known(task: HeldTask | null, taskId: string): HeldTask {
	if (task) return task;
	throw unknownTask(taskId);
}

function unknownTask(taskId: string): GatewayError {
	return invalid(
		`task '${taskId}' is unknown: this session holds no task by that id (it never existed here, has expired, or belongs to another session)`,
	);
}

function invalid(what: string): GatewayError {
	return new GatewayError("invalid_params", `Invalid params: ${what}.`);
}
