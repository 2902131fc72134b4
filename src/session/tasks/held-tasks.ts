import type { JSONRPCMessage, JSONRPCRequest, RequestId } from "@modelcontextprotocol/sdk/types.js";
import type { SessionRequest, ToolCall } from "../../mcp/client-message.ts";
import { describeError, GatewayError } from "../../mcp/gateway-error.ts";
import { withRequestId } from "../../mcp/message-accessors.ts";
import { TOOLS_CALL } from "../../mcp/methods.ts";
import { splitNamespacedName } from "../../mcp/namespacing.ts";
import { randomToken } from "../../primitives/crypto.ts";
import { type InnerCallNote, innerCallsOf, withoutInnerCalls } from "../../telemetry/tool-call.ts";
import { mayHaveRun } from "../call-failures.ts";
import type { SessionLifecycle } from "../session-lifecycle.ts";
import { asGatewayError } from "../session-responses.ts";
import type { SessionState } from "../session-state.ts";
import type { SessionStore } from "../session-store.ts";
import type { UpstreamCalls } from "../upstream-calls.ts";
import { expiresAt, type HeldTask, isTerminal, type TaskStatus } from "./held-task.ts";
import { mintTaskId } from "./task-ids.ts";
import { answerIn, outcomeOf, resultTooLarge, type TaskOutcome } from "./task-outcome.ts";

export type { HeldTask, TaskStatus };

/** What a client is told to wait between two polls. */
const POLL_INTERVAL_MS = 2_000;
/** The shortest ttl a task is given, whatever the client asks: its result must outlive the answer that names it. */
const MIN_TTL_MS = 1_000;
/** Tasks per `list` page. */
const LIST_PAGE_SIZE = 20;
/** SQLite-backed Durable Object storage takes values up to 2 MB: a task's record stays under it. */
const MAX_STORED_TASK_BYTES = 1_900_000;

/** How held tasks reach their session: their calls go through its request path, as a client's messages would. */
export interface TaskSession {
	/**
	 * Runs a request through the session exactly as a client's request runs
	 * (policies, shaping, at-most-once, aggregate routing); resolves to the
	 * reply the client would have been sent.
	 */
	runAsClient(request: SessionRequest): Promise<Response>;
	/**
	 * Tells the upstream running `requestId` to stop, as a client's
	 * `notifications/cancelled` would (it ends the wait for the reply too).
	 * Reads the binding synchronously, so it still works as a session ends.
	 */
	cancelUpstream(requestId: RequestId, reason: string): Promise<void>;
	/**
	 * A held program's inner calls ran (code mode's `execute_code`, `within`):
	 * their `tool_call` events, accounted by the session as the edge would (decision 0139).
	 */
	innerCallsRan(within: string, notes: readonly InnerCallNote[], era: "2025" | "2026-07-28"): void;
	/** A task's status changed after it was created: a client that listens is told (status notifications). */
	taskChanged(task: HeldTask): void;
}

/** A call being read for a task in this instance. */
interface Runner {
	/** The id the call runs under in the session (never the client's: it has gone). */
	readonly requestId: RequestId;
	readonly stopDeadline: () => void;
	/** What the call asked the client (elicitation, sampling) and the client has not answered yet. */
	readonly questions: JSONRPCRequest[];
	/** Who is told of each new question (an open `tasks/result`). */
	readonly listeners: Set<(question: JSONRPCRequest) => void>;
}

/**
 * The tasks a session holds (src/session/tasks/README.md): calls it runs on
 * a client's behalf and keeps reading after the client has gone, their
 * outcomes kept in the session's storage, one key per task, written once per
 * state change, until their ttl passes. Era-neutral: each wire renders them.
 * A task id names a task only in this object; a request reaches it only
 * through the session's own authorization, so another session's id is unknown.
 */
export class HeldTasks {
	/** Every task held, by id, once loaded from storage (at most `maxPerSession`). */
	private tasks: Map<string, HeldTask> | null = null;
	private loading: Promise<Map<string, HeldTask>> | null = null;
	private readonly runners = new Map<string, Runner>();
	/** Tasks started with `unsaved` and not kept yet: in memory only, nothing of them written. */
	private readonly unsaved = new Set<string>();
	/** Who waits for a task to change (`settle`). */
	private readonly waiters = new Map<string, Set<() => void>>();

	constructor(
		private readonly state: SessionState,
		private readonly store: SessionStore,
		/** The alarm: it must fire by each task's expiry. */
		private readonly lifecycle: SessionLifecycle,
		/** A task's call may run past the server's own call timeout, up to its ttl. */
		private readonly calls: UpstreamCalls,
		private readonly session: TaskSession,
	) {}

	/**
	 * Holds a tools/call (`call` without params.task) as a task: runs it
	 * through the session exactly as a call runs, keeps reading its reply
	 * after the client has gone, stores the outcome. Resolves once the task
	 * is stored. Throws a GatewayError over `maxPerSession` (nothing stored).
	 * `ttlMs`: the client's ask, clamped to settings.tasks.ttlMs.
	 * `unsaved`: nothing is written until `keep` (a call that may finish
	 * before anyone learns of its task, then `forget`: it costs no write).
	 */
	async start(
		call: ToolCall,
		ttlMs: number | undefined,
		options: { unsaved?: boolean; era?: "2026-07-28" } = {},
	): Promise<HeldTask> {
		const tasks = await this.loaded();
		const { maxPerSession, ttlMs: maxTtlMs } = this.state.settings.tasks;
		const now = this.state.clock.now();
		await this.sweep(now);
		if (tasks.size >= maxPerSession) {
			throw new GatewayError(
				"too_many_in_flight",
				`Too many tasks: this session already holds ${maxPerSession} (MAX_TASKS_PER_SESSION). A task is held until its ttl passes; wait for one to expire, or call without a task.`,
			);
		}
		const tool = call.message.params.name;
		const task: HeldTask = {
			taskId: mintTaskId(this.state.place),
			status: "working",
			createdAt: now,
			lastUpdatedAt: now,
			ttlMs: Math.max(MIN_TTL_MS, Math.min(ttlMs ?? maxTtlMs, maxTtlMs)),
			pollIntervalMs: POLL_INTERVAL_MS,
			tool,
			...(options.era ? { era: options.era } : {}),
		};
		tasks.set(task.taskId, task);
		// The call runs under an id of the gateway's: the client's id answered the task's creation.
		const requestId = `task-${randomToken(12)}`;
		const runner: Runner = {
			requestId,
			stopDeadline: this.calls.extendDeadline(requestId, expiresAt(task) - now),
			questions: [],
			listeners: new Set(),
		};
		this.runners.set(task.taskId, runner);
		if (options.unsaved) this.unsaved.add(task.taskId);
		else {
			try {
				await this.save(task);
			} catch (error) {
				tasks.delete(task.taskId);
				this.runners.delete(task.taskId);
				runner.stopDeadline();
				throw error;
			}
		}
		this.state.waitUntil(this.run(task.taskId, withRequestId(call, requestId), runner));
		return task;
	}

	/** The task, or null: unknown here, expired, or another session's. */
	async get(taskId: string): Promise<HeldTask | null> {
		const task = (await this.loaded()).get(taskId);
		if (!task || this.state.clock.now() >= expiresAt(task)) return null;
		return task;
	}

	/** The task once terminal, or as it is after `withinMs` (Infinity: until terminal); null as `get`. */
	async settle(taskId: string, withinMs: number): Promise<HeldTask | null> {
		let over = false;
		// The session's timers, so tests decide when `withinMs` has passed.
		const cancelTimer = Number.isFinite(withinMs)
			? this.state.timers.set(withinMs, () => {
					over = true;
					this.wake(taskId);
				})
			: () => {};
		try {
			for (;;) {
				const task = await this.get(taskId);
				if (!task || isTerminal(task.status) || over) return task;
				await this.changeOf(taskId);
			}
		} finally {
			cancelTimer();
		}
	}

	/**
	 * Cancels a running task: its status is cancelled (stored before this
	 * returns), and the upstream is told with `notifications/cancelled`. A
	 * terminal task is returned unchanged; null as `get`.
	 */
	async cancel(taskId: string): Promise<HeldTask | null> {
		const task = await this.get(taskId);
		if (!task || isTerminal(task.status)) return task;
		const cancelled = await this.update(task, {
			status: "cancelled",
			statusMessage: "The task was cancelled by request.",
		});
		const runner = this.runners.get(taskId);
		if (runner) {
			this.runners.delete(taskId);
			await this.session
				.cancelUpstream(runner.requestId, "The task was cancelled.")
				.catch((error: unknown) => console.warn(`task cancellation not delivered upstream: ${describeError(error)}`));
		}
		return cancelled;
	}

	/** This session's tasks, oldest first, a page at a time (`cursor`: the last page's `nextCursor`). */
	async list(cursor: string | undefined): Promise<{ tasks: HeldTask[]; nextCursor?: string }> {
		const now = this.state.clock.now();
		const all = [...(await this.loaded()).values()]
			.filter((task) => now < expiresAt(task))
			.sort((a, b) => a.createdAt - b.createdAt || (a.taskId < b.taskId ? -1 : 1));
		let from = 0;
		if (cursor !== undefined) {
			const after = all.findIndex((task) => task.taskId === cursor);
			if (after < 0) {
				throw new GatewayError(
					"invalid_params",
					"Invalid params: the cursor is not one this session gave, or the task it marks has expired; list from the start.",
				);
			}
			from = after + 1;
		}
		const tasks = all.slice(from, from + LIST_PAGE_SIZE);
		const last = tasks[tasks.length - 1];
		return from + LIST_PAGE_SIZE < all.length && last ? { tasks, nextCursor: last.taskId } : { tasks };
	}

	/**
	 * What the task's call asks the client and waits for (the spec's
	 * `input_required`): the requests so far, and each later one as it comes
	 * to `listener` until the returned function is called.
	 */
	questions(
		taskId: string,
		listener: (question: JSONRPCRequest) => void,
	): { asked: JSONRPCRequest[]; stop: () => void } {
		const runner = this.runners.get(taskId);
		if (!runner) return { asked: [], stop: () => {} };
		runner.listeners.add(listener);
		return { asked: [...runner.questions], stop: () => runner.listeners.delete(listener) };
	}

	/**
	 * The client answered a request (`message` is its response): if a task's
	 * call asked it, that question is settled, and a task with none left is
	 * working again. The answer itself goes on its way as any answer does.
	 */
	async answered(message: JSONRPCMessage): Promise<void> {
		if (!("id" in message) || "method" in message) return;
		for (const [taskId, runner] of this.runners) {
			const at = runner.questions.findIndex((question) => question.id === message.id);
			if (at < 0) continue;
			runner.questions.splice(at, 1);
			const task = this.tasks?.get(taskId);
			if (runner.questions.length === 0 && task?.status === "input_required") {
				await this.update(task, { status: "working" });
			}
			return;
		}
	}

	/**
	 * Stores a task started `unsaved`, as it is now (one write): from here on
	 * it is as durable as any (a 2026-07-28 call promoted to a task). Null as `get`.
	 */
	async keep(taskId: string): Promise<HeldTask | null> {
		const found = await this.get(taskId);
		if (!found || !this.unsaved.delete(taskId)) return found;
		// A call that ended as it was promoted: its program's inner calls are the task's to account now.
		const task = found.result ? { ...found, result: this.accounted(found, found.result) } : found;
		this.tasks?.set(taskId, task);
		await this.save(task);
		return task;
	}

	/** Forgets a task at once (a 2026-07-28 call that finished before its promotion); one never kept costs no write. */
	async forget(taskId: string): Promise<void> {
		const tasks = await this.loaded();
		if (!tasks.delete(taskId)) return;
		this.runners.get(taskId)?.stopDeadline();
		this.runners.delete(taskId);
		this.wake(taskId);
		if (!this.unsaved.delete(taskId)) await this.store.deleteTasks([taskId]);
	}

	/**
	 * Deletes the tasks whose ttl has passed (one write for all of them; a
	 * running one is cancelled upstream first). Returns when the next one
	 * expires (Infinity: none held).
	 */
	async sweep(now = this.state.clock.now()): Promise<number> {
		const tasks = await this.loaded();
		const expired = [...tasks.values()].filter((task) => now >= expiresAt(task));
		for (const task of expired) {
			tasks.delete(task.taskId);
			this.stopRunner(task.taskId, "The task's ttl passed.");
			this.wake(task.taskId);
		}
		const stored = expired.filter((task) => !this.unsaved.delete(task.taskId));
		await this.store.deleteTasks(stored.map((task) => task.taskId));
		return this.nextExpiry();
	}

	/** When the next held task expires, as known in memory (Infinity: none, or not loaded yet). */
	nextExpiry(): number {
		let next = Number.POSITIVE_INFINITY;
		for (const task of this.tasks?.values() ?? []) next = Math.min(next, expiresAt(task));
		return next;
	}

	/** When the last held task expires, as known in memory (0: none, or not loaded yet): the session keeps them until then. */
	lastExpiry(): number {
		let last = 0;
		for (const task of this.tasks?.values() ?? []) last = Math.max(last, expiresAt(task));
		return last;
	}

	/**
	 * The session ended (`reason`): its running tasks are cancelled upstream
	 * and everything is forgotten (its storage is cleared with the session's).
	 * Starts the cancellations synchronously, while the session's upstream
	 * sessions are still known.
	 */
	end(reason: string): void {
		for (const taskId of [...this.runners.keys()]) this.stopRunner(taskId, `The session ended (${reason}).`);
		this.tasks = new Map();
		this.loading = null;
		this.unsaved.clear();
		for (const taskId of [...this.waiters.keys()]) this.wake(taskId);
	}

	/** Tasks this instance is reading a call for (tests, the edge's promotion). */
	get running(): number {
		return this.runners.size;
	}

	/** The tasks in storage, loaded once per instance. A task found unfinished had its runner in an instance that is gone. */
	private loaded(): Promise<Map<string, HeldTask>> {
		if (this.tasks) return Promise.resolve(this.tasks);
		this.loading ??= this.store.readTasks().then(async (stored) => {
			const tasks = new Map(stored.map((task) => [task.taskId, task]));
			this.tasks ??= tasks;
			for (const task of stored) {
				if (isTerminal(task.status)) continue;
				// Never replayed: the call may have reached the upstream before the object restarted.
				await this.finish(task.taskId, {
					error: this.mayHaveRun(task.tool ?? "the tool", "the gateway restarted while it ran").toJsonRpcError(),
				});
			}
			return this.tasks;
		});
		// A failed read is tried again by the next request, not kept.
		this.loading.catch(() => {
			this.loading = null;
		});
		return this.loading;
	}

	/** Reads the call's reply to its answer and stores the outcome. */
	private async run(taskId: string, call: ToolCall, runner: Runner): Promise<void> {
		const { message } = call;
		const tool = message.params.name;
		const limit = Math.min(this.state.settings.maxReplyBytes, MAX_STORED_TASK_BYTES);
		let outcome: TaskOutcome;
		try {
			const answer = await answerIn(
				await this.session.runAsClient(call),
				message.id,
				this.state.settings.maxReplyBytes,
				(question) => this.asked(taskId, runner, question),
			);
			outcome = (answer && outcomeOf(answer)) ?? {
				error: this.mayHaveRun(tool, "its reply ended before it answered").toJsonRpcError(),
			};
			if ("result" in outcome && new TextEncoder().encode(JSON.stringify(outcome.result)).byteLength > limit) {
				outcome = { error: resultTooLarge(tool, limit).toJsonRpcError() };
			}
		} catch (error) {
			outcome = {
				error: (error instanceof RangeError ? resultTooLarge(tool, limit) : asGatewayError(error)).toJsonRpcError(),
			};
		} finally {
			runner.stopDeadline();
		}
		// A task cancelled, forgotten or expired meanwhile has no runner any more, and stays as it is; a
		// cancelled program's inner calls were made all the same, and are accounted (a forgotten one's by the edge).
		if (this.runners.get(taskId) !== runner) {
			const task = this.tasks?.get(taskId);
			if (task && "result" in outcome) this.accounted(task, outcome.result);
			return;
		}
		this.runners.delete(taskId);
		await this.finish(taskId, outcome).catch((error: unknown) =>
			console.error(`task outcome not stored: ${describeError(error)}`),
		);
	}

	/** The call asked the client something: the task waits for input until it is answered. */
	private asked(taskId: string, runner: Runner, question: JSONRPCRequest): void {
		if (this.runners.get(taskId) !== runner) return;
		runner.questions.push(question);
		for (const listener of runner.listeners) listener(question);
		const task = this.tasks?.get(taskId);
		if (task?.status !== "working") return;
		this.update(task, {
			status: "input_required",
			statusMessage: "The call waits for the client's answer; tasks/result delivers what it asks.",
		}).catch((error: unknown) => console.error(`task input_required not stored: ${describeError(error)}`));
	}

	/**
	 * The call running under `requestId` waits for an approver (decision
	 * 0117), or (`sentence` null) no longer does: a task's status message
	 * says so while it is `working`; the spec's `input_required` is for what
	 * the client itself must answer, which an approval is not.
	 */
	approvalWait(requestId: RequestId, sentence: string | null): void {
		for (const [taskId, runner] of this.runners) {
			if (runner.requestId !== requestId) continue;
			const task = this.tasks?.get(taskId);
			if (task?.status !== "working") return;
			const change =
				sentence === null ? { status: "working" as const } : { status: "working" as const, statusMessage: sentence };
			this.update(task, change).catch((error: unknown) =>
				console.error(`task status message not stored: ${describeError(error)}`),
			);
			return;
		}
	}

	/** A call's outcome, once: completed with its result, or failed with its error. */
	private async finish(taskId: string, outcome: TaskOutcome): Promise<void> {
		const task = this.tasks?.get(taskId);
		if (!task || isTerminal(task.status)) return;
		await this.update(
			task,
			"result" in outcome
				? { status: "completed", result: this.accounted(task, outcome.result) }
				: { status: "failed", error: outcome.error, statusMessage: outcome.error.message },
		);
	}

	/**
	 * A held program's result, its inner calls accounted by the session and
	 * taken out of its `_meta`: the edge accounts a call from its `tools/call`
	 * answer, which for a task is the task, so a read of the result (as often
	 * as the client reads it, or never) accounts nothing. A task not kept yet
	 * (a 2026-07-28 call within its promotion delay) keeps them: answered as
	 * the call itself, the edge accounts them; promoted, `keep` does.
	 */
	private accounted(task: HeldTask, result: Record<string, unknown>): Record<string, unknown> {
		if (this.unsaved.has(task.taskId)) return result;
		const notes = innerCallsOf(result._meta);
		if (notes.length === 0) return result;
		this.session.innerCallsRan(task.tool ?? "", notes, task.era ?? "2025");
		return withoutInnerCalls(result);
	}

	/** One state change: kept, written once, told to whoever waits and to the client. A status message describes its own state only. */
	private async update(task: HeldTask, change: Partial<HeldTask> & { status: TaskStatus }): Promise<HeldTask> {
		const { statusMessage: _previous, ...unchanged } = task;
		const updated: HeldTask = { ...unchanged, ...change, lastUpdatedAt: this.state.clock.now() };
		this.tasks?.set(task.taskId, updated);
		this.wake(task.taskId);
		if (!this.unsaved.has(task.taskId)) await this.store.writeTask(updated);
		this.session.taskChanged(updated);
		return updated;
	}

	/** The task's first write, and the alarm by its expiry. */
	private async save(task: HeldTask): Promise<void> {
		await this.store.writeTask(task);
		await this.lifecycle.wakeAt(expiresAt(task));
	}

	/** Stops reading a task's call and tells the upstream to stop it. */
	private stopRunner(taskId: string, reason: string): void {
		const runner = this.runners.get(taskId);
		if (!runner) return;
		this.runners.delete(taskId);
		runner.stopDeadline();
		this.session
			.cancelUpstream(runner.requestId, reason)
			.catch((error: unknown) => console.warn(`task cancellation not delivered upstream: ${describeError(error)}`));
	}

	/** The sentence a call of `tool` (as the client named it) gets when it may have taken effect before `what` happened. */
	private mayHaveRun(tool: string, what: string): GatewayError {
		const binding = this.state.binding;
		const routed = binding?.mode === "aggregate" ? splitNamespacedName(tool) : null;
		const server = routed?.server ?? binding?.members[0]?.name ?? "the upstream";
		return mayHaveRun({ name: server }, { method: TOOLS_CALL, tool: routed?.name ?? tool }, what);
	}

	/** Resolves when the task changes (or a `settle` of it times out). */
	private changeOf(taskId: string): Promise<void> {
		return new Promise((resolve) => {
			let waiting = this.waiters.get(taskId);
			if (!waiting) {
				waiting = new Set();
				this.waiters.set(taskId, waiting);
			}
			const done = () => {
				waiting.delete(done);
				if (waiting.size === 0 && this.waiters.get(taskId) === waiting) this.waiters.delete(taskId);
				resolve();
			};
			waiting.add(done);
		});
	}

	private wake(taskId: string): void {
		for (const done of [...(this.waiters.get(taskId) ?? [])]) done();
	}
}
