import type { JSONRPCMessage, RequestId } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { SessionRequest } from "../client-message.ts";
import { GatewayError } from "../gateway-error.ts";
import type { TASKS_CANCEL, TASKS_GET, TASKS_UPDATE } from "../methods.ts";

/**
 * The tasks extension of 2026-07-28 (SEP-2663): a server may answer a
 * `tools/call` with a task handle (`resultType: "task"`) that the client
 * polls with `tasks/get`, feeds with `tasks/update` and stops with
 * `tasks/cancel`. Its wire, spelled once for the edge and the session.
 */
export const TASKS_EXTENSION = "io.modelcontextprotocol/tasks";

/** A request of the extension's methods, each naming its task in `params.taskId` (and `Mcp-Name`). */
export type ModernTaskRequest = Extract<
	SessionRequest,
	{ method: typeof TASKS_GET | typeof TASKS_UPDATE | typeof TASKS_CANCEL }
>;

const CapabilitiesSchema = z.object({ extensions: z.record(z.string(), z.unknown()).optional() }).loose();

/** Whether a request's client capabilities declare the tasks extension (the only way a client opts in). */
export function declaresTasks(capabilities: unknown): boolean {
	const parsed = CapabilitiesSchema.safeParse(capabilities);
	return parsed.success && parsed.data.extensions?.[TASKS_EXTENSION] !== undefined;
}

/** Capabilities with the tasks extension added (what a server advertises in `server/discover`). */
export function withTasksExtension(capabilities: Record<string, unknown>): Record<string, unknown> {
	const parsed = CapabilitiesSchema.safeParse(capabilities);
	const extensions = parsed.success ? (parsed.data.extensions ?? {}) : {};
	return { ...capabilities, extensions: { ...extensions, [TASKS_EXTENSION]: {} } };
}

/** Capabilities with the tasks extension taken out (what the gateway declares upstream when it holds the task itself). */
export function withoutTasksExtension(capabilities: Record<string, unknown>): Record<string, unknown> {
	const parsed = CapabilitiesSchema.safeParse(capabilities);
	if (!parsed.success || parsed.data.extensions?.[TASKS_EXTENSION] === undefined) return capabilities;
	const { [TASKS_EXTENSION]: _tasks, ...extensions } = parsed.data.extensions;
	return { ...capabilities, extensions };
}

/** -32021 for a task method from a client that did not declare the extension on that request. */
export function tasksCapabilityMissing(method: string, id: RequestId | null): GatewayError {
	return new GatewayError(
		"missing_client_capability",
		`Missing required client capability: ${method} needs the ${TASKS_EXTENSION} extension in the request's client capabilities.`,
		{ id, data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } } },
	);
}

/** -32602 for a task id the gateway does not know for this caller (never minted, expired, or another's). */
export function unknownTask(taskId: string, id: RequestId | null): GatewayError {
	return new GatewayError(
		"invalid_params",
		`Invalid params: task '${taskId}' is unknown: it never existed, has expired, or belongs to someone else.`,
		{ id },
	);
}

/** The `taskId` a task method names; an empty one is refused with -32602, as a missing one is where it is parsed. */
export function taskIdOf(request: ModernTaskRequest): string {
	const { method, id, params } = request.message;
	if (params.taskId === "")
		throw new GatewayError("invalid_params", `Invalid params: ${method} needs a taskId string.`, { id });
	return params.taskId;
}

/** A result that carries a task (a CreateTaskResult, or a tasks/get answer): its id is what the gateway maps. */
const TaskCarryingSchema = z.object({ taskId: z.string() }).loose();

/**
 * The message with the `taskId` of its result (a CreateTaskResult or a
 * DetailedTask) mapped by `map`; any other message as it is. What maps ids
 * between a client and the upstream that holds its task.
 */
export async function mapResultTaskId(
	message: JSONRPCMessage,
	map: (taskId: string) => Promise<string>,
): Promise<JSONRPCMessage> {
	if (!("result" in message)) return message;
	const carrying = TaskCarryingSchema.safeParse(message.result);
	if (!carrying.success) return message;
	return { ...message, result: { ...carrying.data, taskId: await map(carrying.data.taskId) } };
}

/** A task's state, era-neutral: what the session keeps and both eras render. */
export interface TaskState {
	taskId: string;
	status: "working" | "input_required" | "completed" | "failed" | "cancelled";
	statusMessage?: string;
	/** Epoch milliseconds. */
	createdAt: number;
	lastUpdatedAt: number;
	ttlMs: number;
	pollIntervalMs: number;
	result?: Record<string, unknown>;
	error?: { code: number; message: string; data?: unknown };
}

/** The task fields of SEP-2663 (ISO times, integer milliseconds). */
function taskFields(task: TaskState): Record<string, unknown> {
	const fields: Record<string, unknown> = {
		taskId: task.taskId,
		status: task.status,
		createdAt: new Date(task.createdAt).toISOString(),
		lastUpdatedAt: new Date(task.lastUpdatedAt).toISOString(),
		ttlMs: Math.round(task.ttlMs),
		pollIntervalMs: Math.round(task.pollIntervalMs),
	};
	if (task.statusMessage !== undefined) fields.statusMessage = task.statusMessage;
	return fields;
}

/** The flat CreateTaskResult a `tools/call` is answered with once the gateway holds it as a task. */
export function createTaskResult(task: TaskState): Record<string, unknown> {
	return { resultType: "task", ...taskFields(task) };
}

/** `tasks/get`'s DetailedTask: the result inlined once completed, the error once failed. */
export function detailedTask(task: TaskState): Record<string, unknown> {
	const detailed: Record<string, unknown> = { resultType: "complete", ...taskFields(task) };
	if (task.status === "completed" && task.result) detailed.result = task.result;
	if (task.status === "failed" && task.error) detailed.error = task.error;
	return detailed;
}

/** What `tasks/cancel` and `tasks/update` answer: an empty acknowledgement. */
export const TASK_ACK = { resultType: "complete" } as const;
