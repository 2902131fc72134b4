import {
	type JSONRPCMessage,
	ListTasksResultSchema,
	type RequestId,
	type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { guardsReach } from "../../governance/guards/applicable-guards.ts";
import type { RequestOf, SessionRequest, ToolCall } from "../../mcp/client-message.ts";
import { namedTaskId, taskAsked, withTaskId } from "../../mcp/message-accessors.ts";
import { NOTIFICATIONS_TASKS_STATUS, TASKS_CANCEL, TASKS_GET, TASKS_LIST, TASKS_RESULT } from "../../mcp/methods.ts";
import { mapReplyMessages } from "../../mcp/reply-messages.ts";
import { randomToken } from "../../primitives/crypto.ts";
import type { GuardRecord } from "../../registry/guard-records.ts";
import type { AggregateRouter } from "../aggregate/aggregate-router.ts";
import type { Catalog } from "../aggregate/catalog.ts";
import type { MemberSessions } from "../aggregate/member-sessions.ts";
import { type Member, scopeOf } from "../binding.ts";
import { RunningCall } from "../running-call.ts";
import { renderRpcFailure } from "../session-responses.ts";
import type { SessionState } from "../session-state.ts";
import type { HeldTasks } from "../tasks/held-tasks.ts";
import { openUpstreamTaskId, upstreamTaskSealer } from "../tasks/task-ids.ts";
import { answerIn } from "../tasks/task-outcome.ts";
import type { UpstreamCalls } from "../upstream-calls.ts";
import { wireTask } from "./task-wire.ts";

/** A `tasks/list` cursor past the session's own tasks: `up:<member index>:<the member's cursor>`. */
const UPSTREAM_CURSOR = /^up:(\d+):(.*)$/s;

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
 * transparent and aggregate sessions alike. A call of any other tool, or of
 * a server a content guard may apply to, is one the session holds (HeldTasks).
 */
export class UpstreamTasks {
	/** The gateway's secret, which seals the ids it gives upstreams' tasks; none: no upstream task is passed through. */
	private readonly secret: string | undefined;
	private readonly maxReplyBytes: number;

	constructor(
		private readonly state: SessionState,
		private readonly members: MemberSessions,
		private readonly router: AggregateRouter,
		private readonly calls: UpstreamCalls,
		/** The members' tools as the session lists them (shaped; their `execution` as the upstream said). */
		private readonly catalog: Catalog,
		/** The published content guards (the isolate's cache). */
		private readonly guards: () => Promise<readonly GuardRecord[]>,
	) {
		this.secret = state.settings.sessionSecret;
		this.maxReplyBytes = state.settings.maxReplyBytes;
	}

	/** The member whose upstream holds the task this call asks for, or null: the session holds it, or it is no task. */
	async holder(call: ToolCall): Promise<Member | null> {
		if (!taskAsked(call) || call.message.params.task === undefined) return null;
		const route = await this.route(call.message.params.name).catch(() => null);
		if (!route) return null;
		const tool = (await this.tools(route.member)).find((listed) => listed.name === route.name);
		const support = tool?.execution?.taskSupport;
		if (support !== "required" && support !== "optional") return null;
		// A result read later from the upstream's own task would pass no response guard: a server a guard
		// may apply to has its tasks held by the session, whose call's reply the guards read (decision 0130).
		return guardsReach(await this.guards(), route.member.name) ? null : route.member;
	}

	/**
	 * `tasks/list`: the session's own tasks a page at a time, then each
	 * member's whose upstream holds tasks (it lists a tool with task support),
	 * one of its pages a time, under the gateway's ids.
	 */
	async list(message: RequestOf<typeof TASKS_LIST>, held: HeldTasks): Promise<Response> {
		try {
			const cursor = message.params?.cursor;
			const upstream = cursor === undefined ? null : UPSTREAM_CURSOR.exec(cursor);
			if (upstream) {
				const page = await this.upstreamPage(Number(upstream[1]), upstream[2] || undefined);
				return listReply(message.id, page.tasks, page.nextCursor);
			}
			const own = await held.list(cursor);
			const tasks: unknown[] = own.tasks.map(wireTask);
			if (own.nextCursor !== undefined) return listReply(message.id, tasks, own.nextCursor);
			const page = await this.upstreamPage(0, undefined);
			return listReply(message.id, [...tasks, ...page.tasks], page.nextCursor);
		} catch (error) {
			return renderRpcFailure(error, message.id);
		}
	}

	/** One page of the first member from `from` on whose upstream holds tasks (its own cursor, if any). */
	private async upstreamPage(
		from: number,
		cursor: string | undefined,
	): Promise<{ tasks: unknown[]; nextCursor?: string }> {
		const binding = this.state.binding;
		const secret = this.secret;
		if (!binding || !secret) return { tasks: [] };
		const members = binding.members;
		for (let index = from; index < members.length; index++) {
			const member = members[index];
			if (!member || !(await this.holdsTasks(member))) continue;
			const request: SessionRequest = {
				kind: "request",
				method: TASKS_LIST,
				message: {
					jsonrpc: "2.0",
					id: `gw-tasks-${randomToken(8)}`,
					method: TASKS_LIST,
					params: cursor === undefined ? {} : { cursor },
				},
			};
			// Within the client's `tasks/list`, which counts; this one ends when its reply has been read.
			const within = RunningCall.within();
			let reply: Response;
			try {
				reply = await this.forward(member, request, within);
			} catch (error) {
				within.end();
				throw error;
			}
			// A listing asks the client nothing; a request on its stream is left unanswered, as it would be.
			const answer = await answerIn(within.leave(reply), request.message.id, this.maxReplyBytes, () => {});
			const listed = answer && "result" in answer ? ListTasksResultSchema.safeParse(answer.result) : null;
			cursor = undefined;
			if (!listed?.success) {
				console.warn(`member ${member.name}: tasks/list gave no list of tasks; its tasks are left out`);
				continue;
			}
			const seal = upstreamTaskSealer(secret, scopeOf(binding), { server: member.name, place: this.state.place });
			const tasks = await Promise.all(
				listed.data.tasks.map(async (task) => ({ ...task, taskId: await seal(task.taskId) })),
			);
			const next = listed.data.nextCursor;
			return {
				tasks,
				nextCursor:
					next !== undefined ? `up:${index}:${next}` : index + 1 < members.length ? `up:${index + 1}:` : undefined,
			};
		}
		return { tasks: [] };
	}

	/** Whether the member's upstream lists a tool with task support (so it may hold tasks of this session's). */
	private async holdsTasks(member: Member): Promise<boolean> {
		const tools = await this.tools(member).catch(() => []);
		return tools.some(
			(tool) => tool.execution?.taskSupport === "required" || tool.execution?.taskSupport === "optional",
		);
	}

	/** Members' events with the task ids of their upstreams' status notifications the gateway's. */
	async sealedEvents<E extends { server: string; data: string }>(events: readonly E[]): Promise<E[]> {
		const binding = this.state.binding;
		const secret = this.secret;
		if (!binding || !secret || !events.some((event) => event.data.includes(NOTIFICATIONS_TASKS_STATUS))) {
			return [...events];
		}
		const scope = scopeOf(binding);
		return Promise.all(
			events.map(async (event) => {
				const data = await sealedStatus(
					event.data,
					upstreamTaskSealer(secret, scope, { server: event.server, place: this.state.place }),
				);
				return data === null ? event : { ...event, data };
			}),
		);
	}

	/** The reply to a call `member`'s upstream made a task of, its task id the gateway's. */
	async created(member: Member, reply: Response): Promise<Response> {
		const binding = this.state.binding;
		const secret = this.secret;
		if (!binding || !secret) return reply;
		const seal = upstreamTaskSealer(secret, scopeOf(binding), { server: member.name, place: this.state.place });
		return mapReplyMessages(reply, this.maxReplyBytes, (message) => mapLegacyTaskIds(message, seal));
	}

	/**
	 * A `tasks/get`, `tasks/result` or `tasks/cancel` naming an upstream's task
	 * this session made: sent to its member under the upstream's id, answered
	 * under the client's. Null for any other request (an id the session holds,
	 * or one that is not this session's: unknown there).
	 */
	async answer(request: SessionRequest, call: RunningCall): Promise<Response | null> {
		if (request.method !== TASKS_GET && request.method !== TASKS_RESULT && request.method !== TASKS_CANCEL) return null;
		const taskId = namedTaskId(request);
		const binding = this.state.binding;
		const secret = this.secret;
		if (taskId === null || !binding || !secret) return null;
		// Null for a held id, or one not sealed for this session: the session's own tasks, or unknown there.
		const task = await openUpstreamTaskId(secret, scopeOf(binding), taskId, this.state.place);
		const member = task ? binding.members.find((candidate) => candidate.name === task.server) : undefined;
		if (!task || !member) return null;
		const reply = await this.forward(member, withTaskId(request, task.upstreamTaskId), call);
		const mapped = await mapReplyMessages(reply, this.maxReplyBytes, (answer) =>
			mapLegacyTaskIds(answer, async () => taskId),
		);
		// Read through to its end (or cancelled with it): the call still ends with the upstream's reply.
		return call.carriedOn(reply, mapped);
	}

	/** The member a tool the endpoint lists as `exposed` belongs to, and its name there; null if none. */
	private async route(exposed: string): Promise<{ member: Member; name: string } | null> {
		const binding = this.state.binding;
		if (!binding) return null;
		if (binding.mode === "transparent") return { member: this.members.transparentMember(binding), name: exposed };
		const target = await this.router.routeTool(exposed);
		return { member: this.members.member(target.server), name: target.name };
	}

	/** The member's tools as the session lists them. */
	private tools(member: Member): Promise<Tool[]> {
		return this.catalog.get(member.name, "tools");
	}

	/** Sends a request of `call` to a member as a client's request goes (the call ends with its reply). */
	private forward(member: Member, request: SessionRequest, call: RunningCall): Promise<Response> {
		return this.state.aggregate
			? this.router.forwardTo(member.name, request, call)
			: this.calls.request(member, request, call);
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

function listReply(id: RequestId, tasks: unknown[], nextCursor: string | undefined): Response {
	return Response.json({ jsonrpc: "2.0", id, result: nextCursor === undefined ? { tasks } : { tasks, nextCursor } });
}

const StatusNotificationSchema = z
	.object({ method: z.literal(NOTIFICATIONS_TASKS_STATUS), params: TaskIdSchema })
	.loose();

/**
 * An upstream's `notifications/tasks/status` (an event's data) with its task id
 * sealed by `seal`, so the client sees the id it knows; null for any other data.
 */
export async function sealedStatus(
	data: string,
	seal: (upstreamTaskId: string) => Promise<string>,
): Promise<string | null> {
	if (!data.includes(NOTIFICATIONS_TASKS_STATUS)) return null;
	let parsed: unknown;
	try {
		parsed = JSON.parse(data);
	} catch (error) {
		if (error instanceof SyntaxError) return null;
		throw error;
	}
	const status = StatusNotificationSchema.safeParse(parsed);
	if (!status.success) return null;
	return JSON.stringify({
		...status.data,
		params: { ...status.data.params, taskId: await seal(status.data.params.taskId) },
	});
}
