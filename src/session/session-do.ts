import { DurableObject } from "cloudflare:workers";
import type { JSONRPCMessage, JSONRPCNotification, JSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";
import { type Settings, settingsFrom } from "../config.ts";
import type { Env } from "../env.ts";
import { describeError, GatewayError } from "../mcp/gateway-error.ts";
import type { ListItems, ListKind } from "../mcp/list-kinds.ts";
import { keySessions } from "../registry/key-sessions-do.ts";
import { ActivityMeter } from "./activity-meter.ts";
import { AggregateRouter } from "./aggregate-router.ts";
import { type Member, type SessionBinding, type SessionScope, scopeMatches } from "./binding.ts";
import { Breaker } from "./breaker.ts";
import { Catalog } from "./catalog.ts";
import { ClientStreams } from "./client-streams.ts";
import { type Clock, systemClock, systemTimers, type Timers } from "./clock.ts";
import { EventBuffer } from "./event-buffer.ts";
import { type ListenEvent, type ListenFrames, Listening, type ListenPlan, SSE_HEADERS } from "./listening.ts";
import { MemberSessions } from "./member-sessions.ts";
import { type RegistryClient, registryClient } from "./registry-client.ts";
import { ServerRequests } from "./server-requests.ts";
import { SessionLifecycle } from "./session-lifecycle.ts";
import { type OpenSessionInput, openAggregate, openTransparent } from "./session-open.ts";
import { asGatewayError, notFound, once, renderHttpFailure, renderRpcFailure } from "./session-responses.ts";
import { SessionStore } from "./session-store.ts";
import { type ReplyRoute, UpstreamCalls } from "./upstream-calls.ts";
import { UpstreamPool } from "./upstream-pool.ts";

export type { ListenEvent, ListenFrames, ListenPlan } from "./listening.ts";
export type { OpenSessionInput } from "./session-open.ts";

export interface OpenSessionResult {
	opened: boolean;
	reply: JSONRPCMessage;
}

/** Client messages forwarded into a live session. */
export type SessionMessage =
	| { kind: "request"; message: JSONRPCRequest }
	| { kind: "notification"; message: JSONRPCNotification }
	| { kind: "response"; message: JSONRPCMessage };

/** Requests one session may have running at once; more get 429 (every map keyed by request id stays bounded). */
export const MAX_IN_FLIGHT = 100;

/**
 * One instance per session digest (invariant 1). Owns the binding and proxies
 * the session's messages to its upstreams: one upstream unchanged
 * (transparent), or the namespaced union of several (aggregate). When the
 * session ends and what that costs is `SessionLifecycle`'s; its upstream
 * sessions are `MemberSessions`'.
 */
export class SessionDO extends DurableObject<Env> {
	/** Swapped for a controllable clock in tests. */
	clock: Clock = systemClock;
	/** Swapped for timers fired by hand in tests. */
	timers: Timers = systemTimers;
	/** How long this object has been kept active (see ActivityMeter): every RPC, and each reply it streams. */
	private readonly activity = new ActivityMeter(() => this.clock);
	/** Swapped for counting or gated registries in tests. */
	registry: RegistryClient;
	readonly store: SessionStore;
	readonly catalog: Catalog;
	/** Reconnect backoff and circuit breaker per member, for this session. */
	readonly breaker = new Breaker(() => this.clock);
	readonly settings: Settings;
	/** The session's recent stream events, for resumption. */
	readonly buffer: EventBuffer;
	/** The session's SSE streams to its client (aggregate sessions). */
	readonly streams: ClientStreams;
	/** Members' requests to the client waiting for answers (aggregate sessions). */
	readonly requests: ServerRequests;
	private readonly pool: UpstreamPool;
	private readonly lifecycle: SessionLifecycle;
	readonly members: MemberSessions;
	readonly router: AggregateRouter;
	private readonly calls: UpstreamCalls;
	private readonly listening: Listening;
	/** undefined: not loaded yet; null: no session here (never opened, expired or deleted). */
	private binding: SessionBinding | null | undefined;
	private loading: Promise<SessionBinding | null> | null = null;
	/** Upstream sessions to close once the calls still running have drained. */
	private closeWhenDrained: SessionBinding | null = null;

	constructor(ctx: DurableObjectState, env: Env) {
		super(ctx, env);
		this.store = new SessionStore(ctx.storage);
		this.settings = settingsFrom(env);
		this.registry = registryClient(env);
		this.pool = new UpstreamPool(env, this.settings);
		this.catalog = new Catalog((server, kind) => this.fetchList(server, kind));
		this.buffer = new EventBuffer(ctx.storage, this.settings.eventBuffer, () => this.clock);
		this.streams = new ClientStreams(this.buffer, {
			retryMs: this.settings.sseRetryMs,
			primes: () => primingExpected(this.binding?.protocolVersion),
		});
		this.requests = new ServerRequests({
			max: this.settings.maxPendingClientRequests,
			ttlMs: this.settings.upstreamTimeoutMs,
			clock: () => this.clock,
		});
		const state = {
			current: () => this.binding,
			replace: (binding: SessionBinding) => {
				this.binding = binding;
			},
		};
		this.lifecycle = new SessionLifecycle({
			...state,
			settings: this.settings,
			store: this.store,
			clock: () => this.clock,
			timers: () => this.timers,
			registry: () => this.registry,
			end: (binding, reason) => this.terminate(binding, reason),
			configChanged: (changed) => this.members.configChanged(changed),
			drained: () => {
				if (!this.closeWhenDrained) return;
				const ended = this.closeWhenDrained;
				this.closeWhenDrained = null;
				this.ctx.waitUntil(this.pool.closeAll(ended.members, ended.upstreams));
			},
		});
		this.members = new MemberSessions({
			...state,
			store: this.store,
			pool: this.pool,
			catalog: this.catalog,
			breaker: this.breaker,
			waitUntil: (promise) => this.ctx.waitUntil(promise),
			// A member's configuration changed: nothing of the session keeps talking to its old URL
			// (listening windows end by the next recheck, and resume on the new configuration).
			memberReset: (server) => {
				if (this.binding?.mode === "aggregate") this.router.memberReset(server);
				else this.catalog.forget(server);
			},
		});
		this.calls = new UpstreamCalls({
			breaker: this.breaker,
			connection: (member) => this.pool.connection(member),
			session: (member) => this.members.session(member),
			retire: (member, session) => this.members.retire(member, session),
			isReadOnlyTool: async (member, name) =>
				(await this.catalog.get(member.name, "tools")).some(
					(tool) => tool.name === name && tool.annotations?.readOnlyHint === true,
				),
			replyRoute: (member) => (this.binding?.mode === "aggregate" ? this.replyRoute(member) : undefined),
		});
		this.router = new AggregateRouter({
			members: () => this.binding?.members.map((member) => member.name) ?? [],
			catalog: this.catalog,
			forward: (server, message, done) => this.calls.request(this.members.member(server), message, done),
			notify: async (server, message) => {
				await this.calls.notify(this.members.member(server), message);
			},
			requests: this.requests,
			request: async (server, method, params) => {
				const member = this.members.member(server);
				return this.pool.connection(member).request(await this.members.session(member), method, params);
			},
			emit: (message) => this.streams.listening()?.send(message),
		});
		this.listening = new Listening({
			settings: this.settings,
			streams: this.streams,
			router: this.router,
			members: this.members,
			current: () => this.binding,
			untilRecheck: (binding) => this.lifecycle.untilRecheck(binding),
		});
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
		try {
			// A fresh session ID has 192 random bits, so its Durable Object is new: no storage read
			// is needed to know it holds nothing. An instance already holding a session refuses.
			if (this.binding) throw new GatewayError("conflict", "A session with this ID already exists.");
			const opened =
				input.mode === "transparent" ? await openTransparent(this.pool, input) : await openAggregate(this.pool, input);
			if (!opened.binding) return { opened: false, reply: opened.reply };
			const now = this.clock.now();
			const binding: SessionBinding = { ...opened.binding, createdAt: now, lastActivity: now, verifiedAt: now };
			this.binding = binding;
			this.buffer.startEmpty();
			await this.store.writeBinding(binding);
			await this.lifecycle.opened(binding);
			return { opened: true, reply: opened.reply };
		} catch (error) {
			return {
				opened: false,
				reply: { jsonrpc: "2.0", id: input.request.id, error: asGatewayError(error).toJsonRpcError() },
			};
		}
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
		if (input.kind === "request" && this.lifecycle.inFlight >= MAX_IN_FLIGHT) {
			return new GatewayError(
				"too_many_in_flight",
				`Too Many Requests: this session already has ${MAX_IN_FLIGHT} requests running; wait for some to finish.`,
			).toResponse(input.message.id);
		}
		this.lifecycle.begin();
		// A call keeps the object active until its reply has ended, connected client or not.
		const calling = this.activity.enter();
		const done = once(() => {
			this.lifecycle.finish();
			calling();
		});
		try {
			if (!(await this.lifecycle.recheckIfDue(binding))) {
				done();
				return notFound();
			}
			const current = this.binding ?? binding;
			if (current.mode === "transparent") {
				const member = this.members.sole(current);
				if (input.kind === "request") return await this.calls.request(member, input.message, done);
				const accepted = await this.calls.notify(member, input.message);
				done();
				return accepted;
			}
			if (input.kind === "request") return await this.router.handle(input.message, done);
			if (input.kind === "notification") await this.router.notify(input.message);
			else await this.router.clientResponse(input.message);
			done();
			return new Response(null, { status: 202 });
		} catch (error) {
			done();
			return input.kind === "request" ? renderRpcFailure(error, input.message.id) : renderHttpFailure(error);
		}
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
		this.lifecycle.touch();
		try {
			if (!(await this.lifecycle.recheckIfDue(binding))) return notFound();
			return await this.listening.plan(this.binding ?? binding, lastEventId);
		} catch (error) {
			return renderHttpFailure(error);
		}
	}

	/**
	 * Events from members' GET streams the edge listens to for `stream`:
	 * the frames for the client (null: that stream is over here).
	 */
	async listenEvents(scope: SessionScope, stream: string, events: ListenEvent[]): Promise<ListenFrames> {
		return this.metered(async () => {
			if (!(await this.authorize(scope))) return { frames: null, refreshing: false };
			return this.listening.events(stream, events);
		});
	}

	/**
	 * What waits for the client on a listening stream (`stream` null: a
	 * transparent one) once list refreshes are over. At a window's end
	 * (`windowEnd`) the session is rechecked first: the window ended because
	 * a recheck was due, and a revoked session ends now, not at the client's return.
	 */
	async listenCollect(scope: SessionScope, stream: string | null, windowEnd = false): Promise<ListenFrames> {
		return this.metered(async () => {
			const binding = await this.authorize(scope);
			if (!binding || (windowEnd && !(await this.lifecycle.recheckIfDue(binding)))) {
				return { frames: null, refreshing: false };
			}
			return stream === null ? { frames: "", refreshing: false } : this.listening.collect(stream);
		});
	}

	/** A member's GET stream found its upstream session gone (404): it is retired and reopened on next use. */
	async listenExpired(scope: SessionScope, server: string, sessionId: string | null): Promise<void> {
		return this.metered(async () => {
			const binding = await this.authorize(scope);
			if (binding) await this.listening.expired(binding, server, sessionId);
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
		return this.metered(async () => {
			const binding = await this.load();
			if (binding) await this.lifecycle.alarm(binding);
		});
	}

	/**
	 * What this session has cost so far, since this instance started: storage
	 * operations, registry reads, upstream requests and active time (benchmarks, operators).
	 */
	stats(): SessionStats {
		return {
			storageReads: this.store.reads,
			storageWrites: this.store.writes,
			registryReads: this.lifecycle.registryReads,
			kvReads: this.registry.kvReads,
			upstreamRequests: this.pool.requests,
			inFlight: this.lifecycle.inFlight,
			eventBufferWrites: this.buffer.writes,
			activeMs: this.activity.activeMs,
		};
	}

	/** Resolves once pending catalog refreshes have finished (tests). */
	settled(): Promise<void> {
		return this.router.settled();
	}

	/** When the session ends if nothing else happens (tests). */
	deadline(): number {
		return this.lifecycle.deadline();
	}

	/**
	 * How an aggregate member's reply reaches the client: on a resumable
	 * stream of its own, carrying the response, the member's progress and log
	 * messages, and its requests to the client under gateway-minted ids.
	 */
	private replyRoute(member: Member): ReplyRoute {
		return {
			open: async () => {
				const stream = await this.streams.open("p");
				const response = new Response(stream.connect(this.streams.priming(stream)), { headers: SSE_HEADERS });
				return { stream, response };
			},
			route: (message, stream) => this.router.memberMessage(member.name, message, stream.id),
			reading: (task, stream) => {
				// The call goes on if the client's connection drops: its result waits in the buffer.
				this.ctx.waitUntil(task.finally(() => this.requests.callEnded(stream.id)));
			},
		};
	}

	/**
	 * Fetches a whole list from a member. list_changed notifications seen on
	 * the way go through the router (invalidation and refresh).
	 */
	private async fetchList<K extends ListKind>(server: string, kind: K): Promise<Array<ListItems[K]>> {
		const member = this.members.member(server);
		try {
			return await this.pool.connection(member).listAll(await this.members.session(member), kind, (notification) => {
				this.router.memberNotification(server, notification);
			});
		} catch (error) {
			// A member that does not offer this list has an empty one.
			if (error instanceof GatewayError && error.upstreamCode === -32601) return [];
			throw error;
		}
	}

	/** Runs one RPC's work with the object counted as active meanwhile. */
	private async metered<T>(work: () => Promise<T>): Promise<T> {
		const leave = this.activity.enter();
		try {
			return await work();
		} finally {
			leave();
		}
	}

	private async authorize(scope: SessionScope): Promise<SessionBinding | null> {
		const binding = await this.load();
		// A request from another key, user path or endpoint learns nothing and changes nothing.
		return binding && scopeMatches(binding, scope) ? binding : null;
	}

	private load(): Promise<SessionBinding | null> {
		if (this.binding !== undefined) return Promise.resolve(this.binding);
		this.loading ??= this.store.readBinding().then((binding) => {
			if (this.binding === undefined) {
				this.binding = binding;
				if (binding) this.lifecycle.restored(binding);
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
		this.binding = null;
		this.lifecycle.stop();
		this.calls.abortAll(reason);
		this.streams.closeAll();
		this.requests.clear();
		this.listening.clear();
		this.ctx.waitUntil(
			keySessions(this.env, binding.keyId)
				.release(this.ctx.id.toString())
				.catch((error: unknown) => console.warn(`session place not released: ${describeError(error)}`)),
		);
		await this.store.clear();
		if (this.lifecycle.inFlight > 0) this.closeWhenDrained = binding;
		else await this.pool.closeAll(binding.members, binding.upstreams);
	}
}

/** Priming events (an id and no data) came with the 2025-11-25 transport; older clients may not expect them. */
function primingExpected(version: string | undefined): boolean {
	return version !== undefined && version >= "2025-11-25";
}

export interface SessionStats {
	storageReads: number;
	storageWrites: number;
	/** Rechecks made (each reads the registry's read path). */
	registryReads: number;
	/** Workers KV reads those rechecks made. */
	kvReads: number;
	upstreamRequests: number;
	inFlight: number;
	/** Storage writes of the event buffer (stream events kept for resumption, and their pruning). */
	eventBufferWrites: number;
	/** Wall time this object was kept active (an RPC running, or a call's reply being read). */
	activeMs: number;
}
