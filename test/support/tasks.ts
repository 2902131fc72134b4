import { type ClientCapabilities, TaskSchema } from "@modelcontextprotocol/sdk/types.js";
import type { Gate } from "./gates.ts";
import { postInitialize, type RpcReply, readReply, rpc } from "./gateway.ts";

/** What a 2025-11-25 client that takes part in tasks declares (the spec's client `tasks` capability). */
export const TASKS_CLIENT: ClientCapabilities = { tasks: { list: {}, cancel: {} } };

/**
 * Opens a session declaring `capabilities` (a task client's by default); returns its id, the
 * initialize result the client saw, and `send`, one JSON-RPC message in the session read to its reply.
 */
export async function openWith(path: string, key: string, capabilities: ClientCapabilities = TASKS_CLIENT) {
	const response = await postInitialize(path, key, 1, {}, capabilities);
	const sessionId = response.headers.get("mcp-session-id");
	const reply = await readReply(response);
	if (!sessionId) throw new Error(`initialize failed: ${JSON.stringify(reply)}`);
	await (await rpc(path, key, sessionId, { jsonrpc: "2.0", method: "notifications/initialized" })).body?.cancel();
	const send = async (message: unknown) => readReply(await rpc(path, key, sessionId, message));
	return { sessionId, result: reply.result ?? {}, send };
}

/** A call of the gate tool (`tool`: its name on the endpoint) as a task (`ttl` asked, if given). */
export function taskCall(gate: Gate, id: number | string, tool = "gate", ttl?: number) {
	const call = gate.call(id, tool) as { params: Record<string, unknown> };
	return { ...call, params: { ...call.params, task: ttl === undefined ? {} : { ttl } } };
}

/** A request of the tasks wire naming one task (`tasks/get`, `tasks/result`, `tasks/cancel`). */
export function taskRequest(id: number, method: string, taskId: string) {
	return { jsonrpc: "2.0", id, method, params: { taskId } };
}

/** The task of a CreateTaskResult, checked against the SDK's Task schema. */
export function createdTask(reply: RpcReply) {
	const parsed = TaskSchema.safeParse((reply.result as { task?: unknown } | undefined)?.task);
	if (!parsed.success) throw new Error(`not a CreateTaskResult: ${JSON.stringify(reply)}`);
	return parsed.data;
}
