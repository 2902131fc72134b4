import type { JSONRPCMessage, JSONRPCRequest, RequestId } from "@modelcontextprotocol/sdk/types.js";
import { INPUT_RESULT_SCHEMAS } from "../../mcp/2026-07-28/input-results.ts";
import { modernReply, modernResult } from "../../mcp/2026-07-28/modern-results.ts";
import {
	createTaskResult,
	detailedTask,
	type ModernTaskRequest,
	TASK_ACK,
	type TaskState,
	taskIdOf,
	unknownTask,
} from "../../mcp/2026-07-28/tasks-extension.ts";
import type { ClientResponse, ToolCall } from "../../mcp/client-message.ts";
import { GatewayError } from "../../mcp/gateway-error.ts";
import { TASKS_CANCEL, TASKS_UPDATE, TOOLS_CALL } from "../../mcp/methods.ts";
import { isJsonObject } from "../../primitives/json-object.ts";
import { renderRpcFailure } from "../session-responses.ts";
import { type HeldTask, isTerminal } from "../tasks/held-task.ts";
import type { HeldTasks } from "../tasks/held-tasks.ts";

/*
 * The 2026-07-28 wire of the tasks a session holds (the tasks extension,
 * SEP-2663): server-directed. A `tools/call` from a client that declares the
 * extension is held from its start; if it has not finished within the
 * promotion delay it is answered with a CreateTaskResult, otherwise with its
 * own answer, as if no task had been made. `tasks/get` inlines the outcome,
 * `tasks/cancel` and `tasks/update` answer an empty acknowledgement.
 */

/**
 * A `tools/call` (its envelope taken off) held as a task, answered with its
 * own outcome when it ends within `promoteAfterMs`, else with the task.
 */
export async function promotedCall(tasks: HeldTasks, call: ToolCall, promoteAfterMs: number): Promise<Response> {
	const { message } = call;
	try {
		// Nothing is written unless the call outlives the delay: a quick call costs no storage.
		const started = await tasks.start(call, undefined, { unsaved: true, era: "2026-07-28" });
		const settled = (await tasks.settle(started.taskId, promoteAfterMs)) ?? started;
		if (!isTerminal(settled.status)) {
			// Durable before the client learns its id (the extension's rule for a CreateTaskResult).
			const task = (await tasks.keep(settled.taskId)) ?? settled;
			return reply(message.id, createTaskResult(rendered(task)));
		}
		const task = settled;
		// Finished in time: answered as a call is, and the task it never showed is forgotten.
		await tasks.forget(task.taskId);
		if (!task.result && !task.error) return reply(message.id, createTaskResult(rendered(task)));
		const answer: JSONRPCMessage = task.result
			? { jsonrpc: "2.0", id: message.id, result: task.result }
			: { jsonrpc: "2.0", id: message.id, error: task.error ?? { code: -32603, message: "The call failed." } };
		return Response.json(modernReply(TOOLS_CALL, answer));
	} catch (error) {
		return renderRpcFailure(error, message.id);
	}
}

/**
 * `tasks/get`, `tasks/update` or `tasks/cancel` of a task this session holds;
 * an id it does not is unknown (-32602). What a held call asks the client
 * (elicitation, sampling, roots) is the task's `inputRequests`, keyed by the
 * request's id; `tasks/update` answers them through `respond`, as a client's
 * answer to a request goes (SEP-2663 with SEP-2322's shapes).
 */
export async function answerModernTask(
	tasks: HeldTasks,
	request: ModernTaskRequest,
	respond: (answer: ClientResponse) => Promise<void>,
): Promise<Response> {
	const { message } = request;
	try {
		const taskId = taskIdOf(request);
		if (request.method === TASKS_CANCEL) {
			// Idempotent: a task already finished is acknowledged as it is (cancellation is cooperative).
			if (!(await tasks.cancel(taskId))) throw unknownTask(taskId, message.id);
			return reply(message.id, { ...TASK_ACK });
		}
		const task = await tasks.get(taskId);
		if (!task) throw unknownTask(taskId, message.id);
		const asked = questionsOf(tasks, taskId);
		if (request.method === TASKS_UPDATE) {
			for (const answer of answersTo(asked, message)) await respond(answer);
			return reply(message.id, { ...TASK_ACK });
		}
		const detailed = detailedTask(rendered(task));
		if (task.status === "input_required" && asked.size > 0) {
			detailed.inputRequests = Object.fromEntries(
				[...asked].map(([key, request]) => [key, { method: request.method, params: request.params ?? {} }]),
			);
		}
		return reply(message.id, detailed);
	} catch (error) {
		return renderRpcFailure(error, message.id);
	}
}

/** What the task's call asks the client and waits for, by the key its `inputRequests` use. */
function questionsOf(tasks: HeldTasks, taskId: string): Map<string, JSONRPCRequest> {
	const watching = tasks.questions(taskId, () => {});
	watching.stop();
	return new Map(watching.asked.map((question) => [String(question.id), question]));
}

/**
 * The client's answers in a `tasks/update`, as JSON-RPC responses to what was
 * asked: an answer to a key that is not outstanding is ignored (the
 * extension's rule); one that is not a result of its request's kind is refused
 * with -32602 before anything is answered.
 */
function answersTo(asked: Map<string, JSONRPCRequest>, message: JSONRPCRequest): ClientResponse[] {
	const responses = message.params?.inputResponses;
	if (!isJsonObject(responses)) {
		throw new GatewayError(
			"invalid_params",
			"Invalid params: tasks/update needs inputResponses, an object keyed like inputRequests.",
			{
				id: message.id,
			},
		);
	}
	const answers: ClientResponse[] = [];
	for (const [key, value] of Object.entries(responses)) {
		const request = asked.get(key);
		if (!request) continue;
		const parsed = INPUT_RESULT_SCHEMAS[request.method]?.safeParse(value);
		// Sent as the client wrote it: the schema's parse would drop what it does not know.
		if (!parsed?.success || !isJsonObject(value)) {
			throw new GatewayError(
				"invalid_params",
				`Invalid params: inputResponses.${key} is not a valid ${request.method} result.`,
				{
					id: message.id,
				},
			);
		}
		answers.push({ kind: "response", message: { jsonrpc: "2.0", id: request.id, result: value } });
	}
	return answers;
}

/** A held task as the extension's wire shows it: its result in this era's shape. */
function rendered(task: HeldTask): TaskState {
	const { tool: _tool, ...state } = task;
	return state.result ? { ...state, result: modernResult(TOOLS_CALL, state.result) } : state;
}

function reply(id: RequestId, result: Record<string, unknown>): Response {
	return Response.json({ jsonrpc: "2.0", id, result });
}
