import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env.ts";
import type { SubscriptionFilter } from "../mcp/2026-07-28/subscription-filter.ts";
import { type ModernTaskRequest, unknownTask } from "../mcp/2026-07-28/tasks-extension.ts";
import type { ClientResponse } from "../mcp/client-message.ts";
import { NOTIFICATIONS_ELICITATION_COMPLETE } from "../mcp/methods.ts";
import type { Clock, Timers } from "../primitives/clock.ts";
import type { ApprovalDecision } from "../registry/approval-records.ts";
import { telemetryFor } from "../telemetry/telemetry.ts";
import type { ModernBridge } from "./2026-07-28/bridge.ts";
import { answerModernTask } from "./2026-07-28/task-wire.ts";
import type { ServerRequests } from "./aggregate/server-requests.ts";
import type { SessionScope } from "./binding.ts";
import type { RegistryClient } from "./registry-client.ts";
import { Session } from "./session.ts";
import type { OpenSessionInput } from "./session-open.ts";
import type { SessionParts } from "./session-parts.ts";
import { notFound, renderHttpFailure, renderRpcFailure } from "./session-responses.ts";
import type { ModernSessionInput, OpenSessionResult, SessionMessage } from "./session-rpc.ts";
import { SessionState } from "./session-state.ts";
import type { SessionStats } from "./session-stats.ts";
import type { SessionStore } from "./session-store.ts";
import type { ClientStreams } from "./streams/client-streams.ts";
import type { WindowEnd } from "./streams/listen-windows.ts";
import type { ListenEvent, ListenFrames, Listening, ListenPlan } from "./streams/listening.ts";
import type { HeldTasks } from "./tasks/held-tasks.ts";

export { type Clock, systemClock, systemTimers, type Timers } from "../primitives/clock.ts";
export { sealedStatus } from "./2025-11-25/upstream-tasks.ts";
// The session's public surface: what the edge may use of it (scripts/check-imports.ts holds it to this).
export { type EndpointCheck, type Member, memberOf, type SessionScope } from "./binding.ts";
export { MAX_IN_FLIGHT } from "./client-messages.ts";
export type { OpenSessionInput } from "./session-open.ts";
export { asGatewayError } from "./session-responses.ts";
export type { ModernSessionInput, OpenSessionResult, SessionMessage } from "./session-rpc.ts";
export type { SessionStats } from "./session-stats.ts";
export type { WindowEnd } from "./streams/listen-windows.ts";
export type { ListenEvent, ListenFrames, ListenPlan } from "./streams/listening.ts";
export type { HeldTask, TaskStatus } from "./tasks/held-task.ts";
export { openUpstreamTaskId, parseTaskId, upstreamTaskSealer } from "./tasks/task-ids.ts";
export { UpstreamPool } from "./upstream-pool.ts";

/**
 * One instance per session digest (invariant "One session, one place"). Owns the binding and proxies
 * the session's messages to its upstreams: one upstream unchanged
 * (transparent), or the namespaced union of several (aggregate). This class
 * is the RPC surface, each method counted as the object's activity; the
 * session itself (its opening, its requests, its end) is `Session`'s, and
 * each concern a part of its own (see `session-parts.ts`): when the session
 * ends and what that costs is `SessionLifecycle`'s, its upstream sessions are
 * `MemberSessions`', its streams to the client `ClientStreams`', listening `Listening`'s.
 */
export class SessionDO extends DurableObject<Env> {
	private readonly state: SessionState;
	private readonly session: Session;
	private readonly parts: SessionParts;

	constructor(ctx: DurableObjectState, env: Env) {
		super(ctx, env);
		this.state = new SessionState(ctx, env);
		this.session = new Session(this.state);
		this.parts = this.session.parts;
	}

	/** Swapped for a controllable clock in tests. */
	get clock(): Clock {
		return this.state.clock;
	}
	set clock(clock: Clock) {
		this.state.clock = clock;
	}

	/** Swapped for timers fired by hand in tests. */
	get timers(): Timers {
		return this.state.timers;
	}
	set timers(timers: Timers) {
		this.state.timers = timers;
	}

	/** Swapped for counting or gated registries in tests. */
	get registry(): RegistryClient {
		return this.state.registry;
	}
	set registry(registry: RegistryClient) {
		this.state.registry = registry;
	}

	/** The binding's storage (tests count and inspect it). */
	get store(): SessionStore {
		return this.parts.store;
	}

	/** Members' requests to the client waiting for answers (tests). */
	get requests(): ServerRequests {
		return this.parts.requests;
	}

	/** The session's streams to its client (tests). */
	get streams(): ClientStreams {
		return this.parts.streams;
	}

	/** The calls this session holds as tasks (the 2026-07-28 side builds on it; tests). */
	get tasks(): HeldTasks {
		return this.parts.tasks;
	}

	/** The session's listening windows and their pacing (tests). */
	get listening(): Listening {
		return this.parts.listening;
	}

	/** Serves 2026-07-28 clients from this 2025 session (see ModernBridge; tests). */
	get bridge(): ModernBridge {
		return this.parts.bridge;
	}

	/** Opens the session (see Session.openSession). */
	async open(input: OpenSessionInput): Promise<OpenSessionResult> {
		return this.whileActive(() => this.session.openSession(input));
	}

	/**
	 * A 2026-07-28 client's request on an endpoint whose upstreams speak 2025:
	 * served from the 2025 session this object holds for its key, endpoint and
	 * capabilities (see ModernSession).
	 */
	async modern(input: ModernSessionInput): Promise<Response> {
		this.state.noteCaller(input.scope);
		return this.whileActive(() => this.parts.modernSession.request(input));
	}

	/** A 2026-07-28 client's `subscriptions/listen` (see ModernSession.listen). */
	async modernListen(input: ModernSessionInput): Promise<{ acknowledged: SubscriptionFilter } | Response> {
		this.state.noteCaller(input.scope);
		return this.whileActive(() => this.parts.modernSession.listen(input));
	}

	/**
	 * A 2026-07-28 client's `tasks/get`, `tasks/update` or `tasks/cancel` of a
	 * task this object holds (the edge routes by the id's place). Never opens
	 * a session: where none is, or it is another principal's, the task is
	 * unknown. A poll counts as the session's activity, as any request does.
	 */
	async modernTask(scope: SessionScope, request: ModernTaskRequest): Promise<Response> {
		return this.whileActive(async () => {
			const { message } = request;
			const binding = await this.session.authorize(scope);
			if (!binding) return renderRpcFailure(unknownTask(message.params.taskId, message.id), message.id);
			this.parts.lifecycle.touch();
			// An answer to what a task's call asked goes into the session as the client's answer would.
			const respond = async (answer: ClientResponse) => {
				await (await this.session.handleClientMessage(scope, answer)).body?.cancel();
			};
			return answerModernTask(this.parts.tasks, request, respond);
		});
	}

	/** Forwards one client message (request, notification or response) into the session. */
	async post(scope: SessionScope, input: SessionMessage): Promise<Response> {
		return this.whileActive(() => this.session.handleClientMessage(scope, input));
	}

	/**
	 * A client's GET: resumes a stream it lost (Last-Event-ID), or plans a
	 * listening window the edge Worker carries (see Listening), so a client
	 * that only listens keeps this object busy for milliseconds, not minutes.
	 */
	async listen(scope: SessionScope, lastEventId: string | null): Promise<ListenPlan | Response> {
		return this.whileActive(() => this.planListening(scope, lastEventId));
	}

	private async planListening(scope: SessionScope, lastEventId: string | null): Promise<ListenPlan | Response> {
		const binding = await this.session.authorize(scope);
		if (!binding) return notFound();
		// Listening is not a call: it does not hold expiry off, but each window counts as activity.
		this.parts.lifecycle.touch();
		try {
			if (!(await this.parts.lifecycle.recheckIfDue(binding))) return notFound();
			return await this.parts.listening.plan(this.state.binding ?? binding, lastEventId);
		} catch (error) {
			return renderHttpFailure(error);
		}
	}

	/**
	 * Events from members' GET streams the edge listens to in `window` (a
	 * listening window of one stream): the frames for the client (null: that
	 * window is over here).
	 */
	async listenEvents(scope: SessionScope, window: string, events: ListenEvent[]): Promise<ListenFrames> {
		return this.whileActive(async () => {
			if (!(await this.session.authorize(scope))) return { frames: null, refreshing: false };
			// An upstream's task status names its task by the id the client was given.
			return this.parts.listening.events(window, await this.parts.upstreamTasks.sealedEvents(events));
		});
	}

	/** What waits for the client in an aggregate listening window once list refreshes are over. */
	async listenCollect(scope: SessionScope, window: string): Promise<ListenFrames> {
		return this.whileActive(async () => {
			if (!(await this.session.authorize(scope))) return { frames: null, refreshing: false };
			return this.parts.listening.collect(window);
		});
	}

	/**
	 * The edge saw a listening window end (its time was up, or its client
	 * left), or a member's GET stream in it end early: the window's place is
	 * given back, the member's next stream is paced (see ListenWindows), and
	 * what waits for the client comes back (frames null: the window is over).
	 * At a window's end by time the session is rechecked first: the window
	 * ended because a recheck was due, and a revoked session ends now, not at
	 * the client's return.
	 */
	async listenEnded(scope: SessionScope, window: string, end: WindowEnd): Promise<ListenFrames> {
		return this.whileActive(async () => {
			const binding = await this.session.authorize(scope);
			if (!binding || (end.by === "time" && !(await this.parts.lifecycle.recheckIfDue(binding)))) {
				return { frames: null, refreshing: false };
			}
			return this.parts.listening.ended(window, end);
		});
	}

	/** A member's GET stream found its upstream session gone (404): it is retired and reopened on next use. */
	async listenExpired(scope: SessionScope, window: string, server: string, sessionId: string | null): Promise<void> {
		return this.whileActive(async () => {
			const binding = await this.session.authorize(scope);
			if (binding) await this.parts.listening.expired(binding, window, server, sessionId);
		});
	}

	/**
	 * The session's person connected or disconnected their account at
	 * `server` (the connect page, the connections page, an operator): the
	 * member's upstream session, opened with the old credential or none, is
	 * retired; an aggregate refetches its lists and tells the client of what
	 * really changed (the server's tools appear or go); a client that asked
	 * for the connection (`elicitationId`) is told it completed.
	 */
	async connectionChanged(server: string, elicitationId: string | null): Promise<void> {
		return this.whileActive(async () => {
			const binding = await this.session.load();
			const member = binding?.members.find((candidate) => candidate.name === server);
			if (!binding || !member) return;
			const session = binding.upstreams[server];
			if (session) await this.parts.members.retire(member, session);
			if (binding.mode === "aggregate") this.parts.router.memberReset(server);
			if (elicitationId !== null) {
				this.parts.streams.listening()?.send({
					jsonrpc: "2.0",
					method: NOTIFICATIONS_ELICITATION_COMPLETE,
					params: { elicitationId },
				});
			}
		});
	}

	/**
	 * An approver's decision on a call this object holds for one (decision
	 * 0117): true when it settled the wait, false when nothing waits under
	 * `id` here (decided already, timed out, or gone with a restart).
	 */
	async decideApproval(id: string, decision: ApprovalDecision): Promise<boolean> {
		return this.whileActive(async () => this.parts.calls.approvals.decide(id, decision));
	}

	/** Ends the session at the client's request: upstream DELETE, storage cleared, 204. */
	async end(scope: SessionScope): Promise<Response> {
		return this.whileActive(async () => {
			const binding = await this.session.authorize(scope);
			if (!binding) return notFound();
			await this.session.endSession(binding, "deleted by the client");
			return new Response(null, { status: 204 });
		});
	}

	/** Idle expiry, the unverified limit and the maximum age (see SessionLifecycle.alarm). */
	override async alarm(): Promise<void> {
		// A session's end: the isolate's queued spans go now, due or not (no timer holds them).
		return this.whileActive(async () => {
			const binding = await this.session.load();
			if (!binding) return;
			// Expired tasks go first; the lifecycle then sets the one alarm for whichever comes next.
			await this.parts.tasks.sweep();
			await this.parts.lifecycle.alarm(binding);
		}, true);
	}

	/**
	 * What this session has cost so far, since this instance started: storage
	 * operations, registry reads, upstream requests and active time (benchmarks, operators).
	 */
	stats(): SessionStats {
		return {
			storageReads: this.parts.store.reads,
			storageWrites: this.parts.store.writes,
			registryReads: this.parts.lifecycle.registryReads,
			kvReads: this.state.registry.kvReads,
			upstreamRequests: this.parts.pool.requests,
			inFlight: this.parts.lifecycle.inFlight,
			eventBufferWrites: this.parts.buffer.writes,
			activeMs: this.parts.activity.activeMs,
		};
	}

	/** Resolves once pending catalog refreshes have finished (tests). */
	settled(): Promise<void> {
		return this.parts.router.settled();
	}

	/** When the session ends if nothing else happens (tests). */
	deadline(): number {
		return this.parts.lifecycle.deadline();
	}

	/** Runs one RPC's work with the object counted as active meanwhile. */
	private async whileActive<T>(work: () => Promise<T>, drainTelemetry = false): Promise<T> {
		const leave = this.parts.activity.enter();
		try {
			return await work();
		} finally {
			leave();
			// What this RPC recorded (spans, counters) goes out after it, in the background.
			telemetryFor(this.env).flush((promise) => this.ctx.waitUntil(promise), drainTelemetry);
		}
	}
}
