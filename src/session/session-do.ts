import { DurableObject } from "cloudflare:workers";
import type { JSONRPCMessage, JSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";
import { settingsFrom } from "../config.ts";
import type { CredentialCaller } from "../credentials/credentials-for.ts";
import type { Env } from "../env.ts";
import type { SubscriptionFilter } from "../mcp/2026-07-28/subscription-filter.ts";
import { unknownTask } from "../mcp/2026-07-28/tasks-extension.ts";
import { describeError, GatewayError } from "../mcp/gateway-error.ts";
import { LIST_KIND_OF_METHOD, LIST_KINDS, type ListKind } from "../mcp/list-kinds.ts";
import { UnknownToolRefusal } from "../mcp/unknown-offers.ts";
import { keySessions } from "../registry/key-sessions-do.ts";
import { instrumentsOf } from "../telemetry/instruments.ts";
import { telemetryFor } from "../telemetry/telemetry.ts";
import { withCalledTool, withCallNote } from "../telemetry/tool-call.ts";
import { ActivityMeter } from "./activity-meter.ts";
import type { ServerRequests } from "./aggregate/server-requests.ts";
import { type Calling, type Member, type SessionBinding, type SessionScope, scopeMatches, scopeOf } from "./binding.ts";
import { ModernBridge } from "./bridge/modern-bridge.ts";
import { helloOf } from "./bridge/modern-discover.ts";
import { ModernSession } from "./bridge/modern-session.ts";
import { type Clock, systemClock, systemTimers, type Timers } from "./clock.ts";
import { type RegistryClient, registryClient } from "./registry-client.ts";
import { RunningCall } from "./running-call.ts";
import { type OpenSessionInput, openAggregate, openTransparent } from "./session-open.ts";
import { type SessionParts, sessionParts } from "./session-parts.ts";
import { asGatewayError, notFound, renderHttpFailure, renderRpcFailure } from "./session-responses.ts";
import type { ModernSessionInput, OpenSessionResult, SessionMessage } from "./session-rpc.ts";
import type { SessionStats } from "./session-stats.ts";
import type { SessionStore } from "./session-store.ts";
import type { ClientStreams } from "./streams/client-streams.ts";
import type { WindowEnd } from "./streams/listen-windows.ts";
import type { ListenEvent, ListenFrames, Listening, ListenPlan } from "./streams/listening.ts";
import type { HeldTasks } from "./tasks/held-tasks.ts";
import { withTasksCapability } from "./tasks/legacy-task-wire.ts";
import { answerModernTask } from "./tasks/modern-task-wire.ts";
import { routeTaskRequest } from "./tasks/task-requests.ts";

// The session's public surface: what the edge may use of it (scripts/check-imports.ts holds it to this).
export { type EndpointCheck, type Member, memberOf, type SessionScope } from "./binding.ts";
export { type Clock, systemClock, systemTimers, type Timers } from "./clock.ts";
export type { OpenSessionInput } from "./session-open.ts";
export { asGatewayError } from "./session-responses.ts";
export type { ModernSessionInput, OpenSessionResult, SessionMessage } from "./session-rpc.ts";
export type { SessionStats } from "./session-stats.ts";
export type { WindowEnd } from "./streams/listen-windows.ts";
export type { ListenEvent, ListenFrames, ListenPlan } from "./streams/listening.ts";
export type { HeldTask, TaskStatus } from "./tasks/held-task.ts";
export { placeOfTaskId } from "./tasks/task-ids.ts";
export { openUpstreamTaskId, sealUpstreamTaskId } from "./tasks/upstream-task-ids.ts";
export { sealedStatus } from "./tasks/upstream-tasks.ts";
export { UpstreamPool } from "./upstream-pool.ts";

/** Requests one session may have running at once; more get 429 (every map keyed by request id stays bounded). */
export const MAX_IN_FLIGHT = 100;

/**
 * One instance per session digest (invariant "One session, one place"). Owns the binding and proxies
 * the session's messages to its upstreams: one upstream unchanged
 * (transparent), or the namespaced union of several (aggregate). This class
 * is the RPC surface and the session's end; each concern is a part of its own
 * (see `session-parts.ts`): when the session ends and what that costs is
 * `SessionLifecycle`'s, its upstream sessions are `MemberSessions`', its
 * streams to the client `ClientStreams`', listening `Listening`'s.
 */
export class SessionDO extends DurableObject<Env> {
	/** Swapped for a controllable clock in tests. */
	clock: Clock = systemClock;
	/** Swapped for timers fired by hand in tests. */
	timers: Timers = systemTimers;
	/** Swapped for counting or gated registries in tests. */
	registry: RegistryClient;
	/** How long this object has been kept active (see ActivityMeter): every RPC, and each call until its reply is read. */
	private readonly activity = new ActivityMeter(() => this.clock);
	private readonly parts: SessionParts;
	/** undefined: not loaded yet; null: no session here (never opened, expired or deleted). */
	private binding: SessionBinding | null | undefined;
	/** Who the latest request was for: members' credentials are made for them (see `callingNow`). */
	private calling: Calling | null = null;
	private loading: Promise<SessionBinding | null> | null = null;
	/** Upstream sessions to close once the calls still running have drained. */
	private closeWhenDrained: SessionBinding | null = null;
	/** Serves 2026-07-28 clients from this 2025 session (see ModernBridge). */
	readonly bridge: ModernBridge;
	private readonly modernSession: ModernSession;

	constructor(ctx: DurableObjectState, env: Env) {
		super(ctx, env);
		this.registry = registryClient(env);
		this.parts = sessionParts({
			ctx,
			env,
			settings: settingsFrom(env),
			clock: () => this.clock,
			timers: () => this.timers,
			registry: () => this.registry,
			current: () => this.binding,
			calling: () => this.callingNow(),
			replace: (binding) => {
				this.binding = binding;
			},
			end: (binding, reason) => this.terminate(binding, reason),
			run: (message) => {
				const binding = this.binding;
				if (!binding) return Promise.resolve(notFound());
				return this.posting(scopeOf(binding), { kind: "request", message });
			},
			drained: () => {
				if (!this.closeWhenDrained) return;
				const ended = this.closeWhenDrained;
				this.closeWhenDrained = null;
				this.ctx.waitUntil(this.parts.pool.closeAll(ended.members, ended.upstreams));
			},
		});
		const settings = settingsFrom(env);
		this.bridge = new ModernBridge({
			post: (message) => {
				const binding = this.binding;
				if (!binding) return Promise.resolve(notFound());
				return this.posting(scopeOf(binding), message);
			},
			clock: () => this.clock,
			timers: () => this.timers,
			secret: settings.sessionSecret ?? "",
			maxEventBytes: settings.maxReplyBytes,
			roundTtlMs: settings.upstreamTimeoutMs,
		});
		this.modernSession = new ModernSession({
			load: () => this.load(),
			open: (input) => this.opening(input),
			current: () => this.binding ?? null,
			post: (scope, message) => this.posting(scope, message),
			ledger: (keyId) => keySessions(env, keyId),
			place: ctx.id.toString(),
			bridge: this.bridge,
			tasks: () => this.parts.tasks,
			promoteAfterMs: settings.tasks.promoteAfterMs,
		});
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

	/**
	 * Opens the session: initializes the upstream session(s) and stores the
	 * binding. `opened` is false when a transparent upstream refused (its
	 * JSON-RPC error is the reply) or could not be reached; then nothing was
	 * stored.
	 */
	async open(input: OpenSessionInput): Promise<OpenSessionResult> {
		return this.metered(() => this.opening(input));
	}

	private async opening(input: OpenSessionInput): Promise<OpenSessionResult> {
		this.heard(input.scope);
		try {
			// A fresh session ID has 192 random bits, so its Durable Object is new: no storage read
			// is needed to know it holds nothing. An instance already holding a session refuses.
			if (this.binding) throw new GatewayError("conflict", "A session with this ID already exists.");
			const opened =
				input.mode === "transparent"
					? await openTransparent(this.parts.pool, input)
					: await openAggregate(this.parts.pool, input);
			if (!opened.binding) return { opened: false, reply: opened.reply };
			// The client learns whether the gateway holds tasks for it (never an upstream's own tasks capability).
			const reply = withTasksCapability(opened.reply, input.params.capabilities);
			const now = this.clock.now();
			const binding: SessionBinding = {
				...opened.binding,
				server: helloOf(reply),
				createdAt: now,
				lastActivity: now,
				verifiedAt: now,
			};
			this.binding = binding;
			this.parts.buffer.startEmpty();
			await this.parts.store.writeBinding(binding);
			await this.parts.lifecycle.opened(binding);
			return { opened: true, reply };
		} catch (error) {
			return {
				opened: false,
				reply: { jsonrpc: "2.0", id: input.request.id, error: asGatewayError(error).toJsonRpcError() },
			};
		}
	}

	/**
	 * A 2026-07-28 client's request on an endpoint whose upstreams speak 2025:
	 * served from the 2025 session this object holds for its key, endpoint and
	 * capabilities (see ModernSession).
	 */
	async modern(input: ModernSessionInput): Promise<Response> {
		this.heard(input.scope);
		return this.metered(() => this.modernSession.request(input));
	}

	/** A 2026-07-28 client's `subscriptions/listen` (see ModernSession.listen). */
	async modernListen(input: ModernSessionInput): Promise<{ acknowledged: SubscriptionFilter } | Response> {
		this.heard(input.scope);
		return this.metered(() => this.modernSession.listen(input));
	}

	/**
	 * A 2026-07-28 client's `tasks/get`, `tasks/update` or `tasks/cancel` of a
	 * task this object holds (the edge routes by the id's place). Never opens
	 * a session: where none is, or it is another principal's, the task is
	 * unknown. A poll counts as the session's activity, as any request does.
	 */
	async modernTask(scope: SessionScope, message: JSONRPCRequest): Promise<Response> {
		return this.metered(async () => {
			const binding = await this.authorize(scope);
			if (!binding) return renderRpcFailure(unknownTask(String(message.params?.taskId ?? ""), message.id), message.id);
			this.parts.lifecycle.touch();
			// An answer to what a task's call asked goes into the session as the client's answer would.
			const respond = async (answer: JSONRPCMessage) => {
				await (await this.posting(scope, { kind: "response", message: answer })).body?.cancel();
			};
			return answerModernTask(this.parts.tasks, message, respond);
		});
	}

	/** Forwards one client message (request, notification or response) into the session. */
	async post(scope: SessionScope, input: SessionMessage): Promise<Response> {
		return this.metered(() => this.posting(scope, input));
	}

	private async posting(scope: SessionScope, input: SessionMessage): Promise<Response> {
		const binding = await this.authorize(scope);
		if (!binding) return notFound();
		// The gateway already completed the upstream handshake when the session opened.
		if (input.kind === "notification" && input.message.method === "notifications/initialized") {
			return new Response(null, { status: 202 });
		}
		if (input.kind === "request" && this.parts.lifecycle.inFlight >= MAX_IN_FLIGHT) {
			return new GatewayError(
				"too_many_in_flight",
				`Too Many Requests: this session already has ${MAX_IN_FLIGHT} requests running; wait for some to finish.`,
			).toResponse(input.message.id);
		}
		// A call keeps the object active until its reply has ended, connected client or not; it ends itself.
		const call = RunningCall.begin(this.parts.lifecycle, this.activity);
		/** The tool a `call_tool` named (search mode): the call is that tool's, and the edge accounts it so. */
		let calledTool: string | null = null;
		try {
			if (!(await this.parts.lifecycle.recheckIfDue(binding))) return call.answered(notFound());
			// In search mode a `call_tool` is, from here on, the call of the tool it names: tasks, shaping,
			// policies, pinning and at-most-once hold for it as for the direct call it stands for.
			const inner =
				input.kind === "request" && (this.binding ?? binding).mode === "aggregate"
					? this.parts.router.innerCall(input.message)
					: null;
			if (inner) {
				input = { kind: "request", message: inner };
				calledTool = String(inner.params?.name);
			}
			const reply = await this.routed(binding, input, call);
			return call.leave(calledTool === null ? reply : withCalledTool(reply, calledTool));
		} catch (error) {
			call.end();
			if (input.kind !== "request") return renderHttpFailure(error);
			const failure = renderRpcFailure(error, input.message.id);
			// The edge accounts a name the endpoint does not offer as an unknown tool, not as any invalid params.
			const noted =
				error instanceof UnknownToolRefusal
					? withCallNote(failure, input.message.method, { refused: "unknown_tool" })
					: failure;
			return calledTool === null ? noted : withCalledTool(noted, calledTool);
		}
	}

	/** A client message of a session it belongs to, after the recheck: where it goes, and its reply. */
	private async routed(binding: SessionBinding, input: SessionMessage, call: RunningCall): Promise<Response> {
		let holder: Member | null = null;
		if (input.kind === "request") {
			const route = await routeTaskRequest(
				this.parts.holdsTasks(),
				this.parts.tasks,
				this.parts.upstreamTasks,
				input.message,
				call,
			);
			if ("answered" in route) return route.answered;
			input = { kind: "request", message: route.message };
			holder = route.holder;
		}
		// An answer to what a held task's call asked settles that question; it goes on as any answer.
		if (input.kind === "response") await this.parts.tasks.answered(input.message);
		// The task's id in the reply becomes the gateway's; the call still ends with the upstream's reply.
		const created = async (reply: Response) =>
			holder ? call.carriedOn(reply, await this.parts.upstreamTasks.created(holder, reply)) : reply;
		const current = this.binding ?? binding;
		if (current.mode === "transparent") {
			const member = this.parts.members.sole(current);
			// The list of a server that is shaped, pinned under `block` or governed by a policy is rewritten
			// (and only it): the session answers it from its catalog, shaped, filtered, all in one page.
			const kind = input.kind === "request" ? await this.answeredHere(member, input.message.method) : null;
			if (input.kind === "request" && kind) {
				// Fetched afresh, as the upstream's own list would be: its list_changed reached the client directly.
				this.parts.catalog.invalidate(member.name, [kind]);
				const items = await this.parts.visible(member.name, kind, await this.parts.catalog.get(member.name, kind));
				return call.answered(
					Response.json({ jsonrpc: "2.0", id: input.message.id, result: { [LIST_KINDS[kind].field]: items } }),
				);
			}
			if (input.kind === "request") {
				const reply = await this.parts.calls.request(member, input.message, call);
				// A list not rewritten reaches the client as it came; its tools are recorded and flagged beside it.
				return input.message.method === "tools/list"
					? call.carriedOn(reply, this.parts.watched(member, input.message, reply))
					: created(reply);
			}
			return this.parts.calls.notify(member, input.message);
		}
		if (input.kind === "request") return created(await this.parts.router.handle(input.message, call));
		if (input.kind === "notification") await this.parts.router.notify(input.message);
		else await this.parts.router.clientResponse(input.message);
		return new Response(null, { status: 202 });
	}

	/**
	 * The list a transparent session answers itself rather than pass on, if
	 * `method` is one: one the governance decision makes (see `reachOf`), and
	 * tools for a client the session holds tasks for.
	 */
	private async answeredHere(member: Member, method: string): Promise<ListKind | null> {
		const kind = LIST_KIND_OF_METHOD.get(method);
		if (kind === undefined) return null;
		// A client the session holds tasks for sees each tool's task support as the gateway honours it.
		if (kind === "tools" && this.parts.holdsTasks()) return kind;
		return (await this.parts.decidesList(member, kind)) ? kind : null;
	}

	/**
	 * A client's GET: resumes a stream it lost (Last-Event-ID), or plans a
	 * listening window the edge Worker carries (see Listening), so a client
	 * that only listens keeps this object busy for milliseconds, not minutes.
	 */
	async listen(scope: SessionScope, lastEventId: string | null): Promise<ListenPlan | Response> {
		return this.metered(() => this.planListening(scope, lastEventId));
	}

	private async planListening(scope: SessionScope, lastEventId: string | null): Promise<ListenPlan | Response> {
		const binding = await this.authorize(scope);
		if (!binding) return notFound();
		// Listening is not a call: it does not hold expiry off, but each window counts as activity.
		this.parts.lifecycle.touch();
		try {
			if (!(await this.parts.lifecycle.recheckIfDue(binding))) return notFound();
			return await this.parts.listening.plan(this.binding ?? binding, lastEventId);
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
		return this.metered(async () => {
			if (!(await this.authorize(scope))) return { frames: null, refreshing: false };
			// An upstream's task status names its task by the id the client was given.
			return this.parts.listening.events(window, await this.parts.upstreamTasks.sealedEvents(events));
		});
	}

	/** What waits for the client in an aggregate listening window once list refreshes are over. */
	async listenCollect(scope: SessionScope, window: string): Promise<ListenFrames> {
		return this.metered(async () => {
			if (!(await this.authorize(scope))) return { frames: null, refreshing: false };
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
		return this.metered(async () => {
			const binding = await this.authorize(scope);
			if (!binding || (end.by === "time" && !(await this.parts.lifecycle.recheckIfDue(binding)))) {
				return { frames: null, refreshing: false };
			}
			return this.parts.listening.ended(window, end);
		});
	}

	/** A member's GET stream found its upstream session gone (404): it is retired and reopened on next use. */
	async listenExpired(scope: SessionScope, window: string, server: string, sessionId: string | null): Promise<void> {
		return this.metered(async () => {
			const binding = await this.authorize(scope);
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
		return this.metered(async () => {
			const binding = await this.load();
			const member = binding?.members.find((candidate) => candidate.name === server);
			if (!binding || !member) return;
			const session = binding.upstreams[server];
			if (session) await this.parts.members.retire(member, session);
			if (binding.mode === "aggregate") this.parts.router.memberReset(server);
			if (elicitationId !== null) {
				this.parts.streams.listening()?.send({
					jsonrpc: "2.0",
					method: "notifications/elicitation/complete",
					params: { elicitationId },
				});
			}
		});
	}

	/** Ends the session at the client's request: upstream DELETE, storage cleared, 204. */
	async end(scope: SessionScope): Promise<Response> {
		return this.metered(async () => {
			const binding = await this.authorize(scope);
			if (!binding) return notFound();
			await this.terminate(binding, "deleted by the client");
			return new Response(null, { status: 204 });
		});
	}

	/** Idle expiry, the unverified limit and the maximum age (see SessionLifecycle.alarm). */
	override async alarm(): Promise<void> {
		// A session's end: the isolate's queued spans go now, due or not (no timer holds them).
		return this.metered(async () => {
			const binding = await this.load();
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
			kvReads: this.registry.kvReads,
			upstreamRequests: this.parts.pool.requests,
			inFlight: this.parts.lifecycle.inFlight,
			eventBufferWrites: this.parts.buffer.writes,
			activeMs: this.activity.activeMs,
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
	private async metered<T>(work: () => Promise<T>, drainTelemetry = false): Promise<T> {
		const leave = this.activity.enter();
		try {
			return await work();
		} finally {
			leave();
			// What this RPC recorded (spans, counters) goes out after it, in the background.
			telemetryFor(this.env).flush((promise) => this.ctx.waitUntil(promise), drainTelemetry);
		}
	}

	private async authorize(scope: SessionScope): Promise<SessionBinding | null> {
		const binding = await this.load();
		// A request from another key, user path or endpoint learns nothing and changes nothing.
		if (!binding || !scopeMatches(binding, scope)) return null;
		this.heard(scope);
		return binding;
	}

	/** A request of the session's own principal says who calls now (its exchangeable token, if any). */
	private heard(scope: SessionScope): void {
		if (scope.calling) this.calling = scope.calling;
	}

	/**
	 * Who members' requests are made for: the latest request's caller, or the
	 * one the binding keeps (after an eviction, for work no request started).
	 * Both are the session's one principal: a session is bound to it.
	 */
	private callingNow(): CredentialCaller | null {
		if (this.calling) return this.calling;
		const stored = this.binding?.caller;
		return stored ? { ...stored, subjectToken: null } : null;
	}

	/** The conventions' `mcp.server.session.duration`, from its opening to its end (deleted, expired or revoked). */
	private recordSessionDuration(binding: SessionBinding): void {
		const telemetry = telemetryFor(this.env);
		if (!telemetry.enabled) return;
		instrumentsOf(telemetry).serverSessionDuration.record((this.clock.now() - binding.createdAt) / 1000, {
			"network.transport": "tcp",
			"network.protocol.name": "http",
		});
	}

	private load(): Promise<SessionBinding | null> {
		if (this.binding !== undefined) return Promise.resolve(this.binding);
		this.loading ??= this.parts.store.readBinding().then((binding) => {
			if (this.binding === undefined) {
				this.binding = binding;
				if (binding) this.parts.lifecycle.restored(binding);
			}
			return this.binding;
		});
		return this.loading;
	}

	/**
	 * Ends the session: forgotten first, so concurrent and later requests get
	 * 404 and nothing writes it back; running calls and streams ended; storage
	 * cleared; the key's place given back; upstream sessions closed, after the
	 * calls still running have drained.
	 */
	private async terminate(binding: SessionBinding, reason: string): Promise<void> {
		if (this.binding === null) return;
		console.log(`session ended: ${reason}`);
		this.recordSessionDuration(binding);
		// Before the binding goes: cancelling running tasks upstream needs their upstream sessions.
		this.parts.tasks.end(reason);
		this.binding = null;
		this.parts.lifecycle.stop();
		this.parts.calls.abortAll(reason);
		this.parts.streams.closeAll();
		this.parts.buffer.discard();
		this.parts.requests.clear();
		this.parts.listening.clear();
		this.bridge.clear();
		this.modernSession.clear();
		this.ctx.waitUntil(
			keySessions(this.env, binding.keyId)
				.release(this.ctx.id.toString())
				.catch((error: unknown) => console.warn(`session place not released: ${describeError(error)}`)),
		);
		await this.parts.store.clear();
		if (this.parts.lifecycle.inFlight > 0) this.closeWhenDrained = binding;
		else await this.parts.pool.closeAll(binding.members, binding.upstreams);
	}
}
