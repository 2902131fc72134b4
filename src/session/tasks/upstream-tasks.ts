import type { JSONRPCMessage, JSONRPCRequest, Tool } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { mapReplyMessages } from "../../mcp/reply-messages.ts";
import type { Member, SessionBinding } from "../binding.ts";
import { isUpstreamTaskId, openUpstreamTaskId, sealUpstreamTaskId } from "./upstream-task-ids.ts";

/** What passing upstreams' tasks through needs from the session. */
export interface UpstreamTasksHost {
	readonly secret: string | undefined;
	/** The session object's id: a 2025 session's upstream task ids are bound to it. */
	readonly place: string;
	readonly maxReplyBytes: number;
	current(): SessionBinding | null | undefined;
	/** The member a tool the endpoint lists as `exposed` belongs to, and its name there; null if none. */
	route(exposed: string): Promise<{ member: Member; name: string } | null>;
	/** The member's tools as the session lists them (shaped; their `execution` as the upstream said). */
	tools(member: Member): Promise<Tool[]>;
	/** Sends a request to a member as a client's request goes (`done` once its reply has ended). */
	forward(member: Member, message: JSONRPCRequest, done: () => void): Promise<Response>;
}

/** The methods of the 2025-11-25 wire that name one task. */
const TASK_ID_METHODS = new Set(["tasks/get", "tasks/result", "tasks/cancel"]);

const RELATED_TASK = "io.modelcontextprotocol/related-task";

const TaskIdSchema = z.object({ taskId: z.string() }).loose();
const CreatedSchema = z.object({ task: TaskIdSchema }).loose();
const ListedSchema = z.object({ tasks: z.array(TaskIdSchema) }).loose();
const RelatedSchema = z.object({ _meta: z.object({ [RELATED_TASK]: TaskIdSchema }).loose() }).loose();

/**
 * Tasks a 2025-11-25 upstream holds itself: a task-augmented `tools/call` of
 * a tool its upstream lists with task support (`required` or `optional`)
 * goes to it as it came, `params.task` included, and the task it makes
 * reaches the client under the gateway's id for it: sealed to this session
 * and principal, naming the server, so `tasks/get`, `tasks/result` and
 * `tasks/cancel` go back to that member under the upstream's own id, on
 * transparent and aggregate sessions alike. A call of any other tool is one
 * the session holds (HeldTasks).
 */
export class UpstreamTasks {
	constructor(private readonly host: UpstreamTasksHost) {}

	/** The member whose upstream holds the task this call asks for, or null: the session holds it, or it is no task. */
	async holder(message: JSONRPCRequest): Promise<Member | null> {
		if (message.method !== "tools/call" || message.params?.task === undefined) return null;
		const route = await this.host.route(String(message.params.name ?? "")).catch(() => null);
		if (!route) return null;
		const tool = (await this.host.tools(route.member)).find((listed) => listed.name === route.name);
		const support = tool?.execution?.taskSupport;
		return support === "required" || support === "optional" ? route.member : null;
	}

	/** The reply to a call `member`'s upstream made a task of, its task id the gateway's. */
	async created(member: Member, reply: Response): Promise<Response> {
		const binding = this.host.current();
		const secret = this.host.secret;
		if (!binding || !secret) return reply;
		const scope = { keyId: binding.keyId, userPath: binding.userPath, endpoint: binding.endpoint };
		const task = { server: member.name, place: this.host.place };
		return mapReplyMessages(reply, this.host.maxReplyBytes, (message) =>
			mapLegacyTaskIds(message, (upstreamTaskId) => sealUpstreamTaskId(secret, scope, { ...task, upstreamTaskId })),
		);
	}

	/**
	 * A `tasks/get`, `tasks/result` or `tasks/cancel` naming an upstream's task
	 * this session made: sent to its member under the upstream's id, answered
	 * under the client's. Null for any other request (an id the session holds,
	 * or one that is not this session's: unknown there).
	 */
	async answer(message: JSONRPCRequest, done: () => void): Promise<Response | null> {
		if (!TASK_ID_METHODS.has(message.method)) return null;
		const taskId = message.params?.taskId;
		const binding = this.host.current();
		const secret = this.host.secret;
		if (typeof taskId !== "string" || !isUpstreamTaskId(taskId) || !binding || !secret) return null;
		const scope = { keyId: binding.keyId, userPath: binding.userPath, endpoint: binding.endpoint };
		const task = await openUpstreamTaskId(secret, scope, taskId, this.host.place);
		const member = task ? binding.members.find((candidate) => candidate.name === task.server) : undefined;
		if (!task || !member) return null;
		const upstream = { ...message, params: { ...message.params, taskId: task.upstreamTaskId } };
		const reply = await this.host.forward(member, upstream, done);
		return mapReplyMessages(reply, this.host.maxReplyBytes, (answer) => mapLegacyTaskIds(answer, async () => taskId));
	}
}

/**
 * The message with every task id of the 2025-11-25 wire in its result mapped:
 * a CreateTaskResult's `task`, a Task's own, a list's, the related-task
 * metadata of a `tasks/result`.
 */
export async function mapLegacyTaskIds(
	message: JSONRPCMessage,
	map: (taskId: string) => Promise<string>,
): Promise<JSONRPCMessage> {
	if (!("result" in message)) return message;
	let result: Record<string, unknown> = message.result;
	const created = CreatedSchema.safeParse(result);
	if (created.success)
		result = { ...created.data, task: { ...created.data.task, taskId: await map(created.data.task.taskId) } };
	const task = TaskIdSchema.safeParse(result);
	if (task.success) result = { ...task.data, taskId: await map(task.data.taskId) };
	const listed = ListedSchema.safeParse(result);
	if (listed.success) {
		const tasks = await Promise.all(
			listed.data.tasks.map(async (entry) => ({ ...entry, taskId: await map(entry.taskId) })),
		);
		result = { ...listed.data, tasks };
	}
	const related = RelatedSchema.safeParse(result);
	if (related.success) {
		const meta = related.data._meta;
		const relatedTask = meta[RELATED_TASK];
		result = {
			...related.data,
			_meta: { ...meta, [RELATED_TASK]: { ...relatedTask, taskId: await map(relatedTask.taskId) } },
		};
	}
	return { ...message, result };
}
