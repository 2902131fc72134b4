import { DurableObject } from "cloudflare:workers";
import type { JSONRPCMessage, JSONRPCNotification, JSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";
import { type Settings, settingsFrom } from "../config.ts";
import type { Env } from "../env.ts";
import { describeError, GatewayError } from "../mcp/gateway-error.ts";
import type { ListItems, ListKind } from "../mcp/list-kinds.ts";
import type { ReplyIsolation } from "../mcp/sse-relay.ts";
import { keySessions } from "../registry/key-sessions-do.ts";
import { ActivityMeter } from "./activity-meter.ts";
import { AggregateRouter } from "./aggregate-router.ts";
import { type Member, type SessionBinding, type SessionScope, scopeMatches } from "./binding.ts";
import { Breaker } from "./breaker.ts";
import { Catalog } from "./catalog.ts";
import { ClientChannel, MAX_CLIENT_STREAMS } from "./client-channel.ts";
import { type Clock, systemClock, systemTimers, type Timers } from "./clock.ts";
import { MemberSessions } from "./member-sessions.ts";
import { MemberWatch } from "./member-watch.ts";
import { type RegistryClient, registryClient } from "./registry-client.ts";
import { SessionLifecycle } from "./session-lifecycle.ts";
import { type OpenSessionInput, openAggregate, openTransparent } from "./session-open.ts";
import {
	asGatewayError,
	notFound,
	once,
	passThrough,
	renderHttpFailure,
	renderRpcFailure,
} from "./session-responses.ts";
import { SessionStore } from "./session-store.ts";
import { withCompletion } from "./stream-completion.ts";
import { UpstreamCalls } from "./upstream-calls.ts";
import { UpstreamPool } from "./upstream-pool.ts";

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
	/** How long this object has been kept active (see ActivityMeter): every RPC entry and stream it returns. */
	private readonly activity = new ActivityMeter(() => this.clock);
	/** Swapped for counting or gated registries in tests. */
	registry: RegistryClient;
	readonly store: SessionStore;
	readonly catalog: Catalog;
	/** Reconnect backoff and circuit breaker per member, for this session. */
	readonly breaker = new Breaker(() => this.clock);
	private readonly settings: Settings;
	private readonly pool: UpstreamPool;
	private readonly lifecycle: SessionLifecycle;
	private readonly members: MemberSessions;
	private readonly router: AggregateRouter;
	private readonly calls: UpstreamCalls;
	/** The client's GET streams (aggregate sessions). */
	private readonly channel = new ClientChannel();
	/** The members' GET streams the DO holds while a client listens. */
	private readonly watch: MemberWatch;
	/** undefined: not loaded yet; null: no session here (never opened, expired or deleted). */
	private binding: SessionBinding | null | undefined;
	private loading: Promise<SessionBinding | null> | null = null;
	/** The transparent GET streams being relayed, oldest first; they end when the session does. */
	private readonly listeners: AbortController[] = [];
	/** Upstream sessions to close once the calls still running have drained. */
	private closeWhenDrained: SessionBinding | null = null;

	constructor(ctx: DurableObjectState, env: Env) {
		super(ctx, env);
		this.store = new SessionStore(ctx.storage);
		this.settings = settingsFrom(env);
		this.registry = registryClient(env);
		this.pool = new UpstreamPool(env, this.settings);
		this.catalog = new Catalog((server, kind) => this.fetchList(server, kind));
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
			streamsOpen: () => this.listeners.length > 0 || this.channel.open,
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
			// A member's configuration changed: nothing of the session keeps talking to its old URL.
			memberReset: (server) => {
				if (this.binding?.mode === "aggregate") {
					this.router.memberReset(server);
					if (this.channel.open) {
						this.watch.stop();
						this.watch.start(this.binding.members);
					}
					return;
				}
				this.catalog.forget(server);
				// The client's listening streams end; it reconnects, to the new configuration.
				for (const listening of this.listeners.splice(0)) listening.abort();
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
			isolation: (member) => (this.binding?.mode === "aggregate" ? this.isolation(member) : undefined),
		});
		this.watch = new MemberWatch({
			connection: (member) => this.pool.connection(member),
			session: (member) => this.members.session(member),
			notify: (member, message) => {
				const passOn = this.router.memberNotification(member.name, message);
				if (passOn) this.channel.send(passOn);
			},
			closed: async (member) => {
				const session = this.binding?.upstreams[member.name];
				if (session) await this.members.retire(member, session);
				this.router.memberReset(member.name);
			},
			maxEventBytes: this.settings.maxReplyBytes,
		});
		this.router = new AggregateRouter({
			members: () => this.binding?.members.map((member) => member.name) ?? [],
			catalog: this.catalog,
			forward: (server, message, done) => this.calls.request(this.members.member(server), message, done),
			notify: async (server, message) => {
				await this.calls.notify(this.members.member(server), message);
			},
			request: async (server, method, params) => {
				const member = this.members.member(server);
				return this.pool.connection(member).request(await this.members.session(member), method, params);
			},
			emit: (message) => this.channel.send(message),
		});
	}

	/**
	 * Opens the session: initializes the upstream session(s) and stores the
	 * binding. `opened` is false when a transparent upstream refused (its
	 * JSON-RPC error is the reply) or could not be reached; then nothing was
	 * stored.
	 */
	async open(input: OpenSessionInput): Promise<OpenSessionResult> {
		const leave = this.activity.enter();
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
			await this.store.writeBinding(binding);
			await this.lifecycle.opened(binding);
			return { opened: true, reply: opened.reply };
		} catch (error) {
			return {
				opened: false,
				reply: { jsonrpc: "2.0", id: input.request.id, error: asGatewayError(error).toJsonRpcError() },
			};
		} finally {
			leave();
		}
	}

	/** Forwards one client message (request, notification or response) into the session. */
	async post(scope: SessionScope, input: SessionMessage): Promise<Response> {
		const leave = this.activity.enter();
		try {
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
			// A streamed reply keeps the object active until it has ended.
			const replying = this.activity.enter();
			const done = once(() => {
				this.lifecycle.finish();
				replying();
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
				done();
				return new Response(null, { status: 202 });
			} catch (error) {
				done();
				return input.kind === "request" ? renderRpcFailure(error, input.message.id) : renderHttpFailure(error);
			}
		} finally {
			leave();
		}
	}

	/** Proxies the upstream's GET stream of server-initiated messages (transparent sessions). */
	async stream(scope: SessionScope, lastEventId: string | null): Promise<Response> {
		const leave = this.activity.enter();
		try {
			const binding = await this.authorize(scope);
			if (!binding) return notFound();
			if (binding.mode === "aggregate") return await this.aggregateStream(binding);
			// A listening stream is not a call: it does not hold expiry off, and it ends with the session.
			this.lifecycle.touch();
			const listening = new AbortController();
			this.listeners.push(listening);
			// A client holds at most MAX_CLIENT_STREAMS streams: opening one more ends the oldest.
			while (this.listeners.length > MAX_CLIENT_STREAMS) this.listeners.shift()?.abort();
			// The relayed stream keeps the object active until it has ended.
			const relaying = this.activity.enter();
			const done = once(() => {
				relaying();
				const index = this.listeners.indexOf(listening);
				if (index !== -1) this.listeners.splice(index, 1);
				this.lifecycle.touch();
				this.lifecycle.watchWhileBusy();
			});
			try {
				if (!(await this.lifecycle.recheckIfDue(binding))) {
					done();
					return notFound();
				}
				this.lifecycle.watchWhileBusy();
				const member = this.members.sole(this.binding ?? binding);
				const connection = this.pool.connection(member);
				let session = await this.members.session(member);
				let upstream = await connection.openStream(session, lastEventId, listening.signal);
				if (upstream.status === 404 && session.sessionId !== null) {
					// The upstream session expired: retire it and listen on a fresh one.
					await upstream.body?.cancel();
					await this.members.retire(member, session);
					session = await this.members.session(member);
					upstream = await connection.openStream(session, null, listening.signal);
				}
				if (upstream.status === 405) {
					await upstream.body?.cancel();
					done();
					return new Response(null, { status: 405, headers: { allow: "POST, DELETE" } });
				}
				if (!upstream.ok || !upstream.body) {
					await upstream.body?.cancel();
					throw connection.statusError(upstream.status, "its event stream");
				}
				// The upstream dropping its event stream is an ordinary end for the client,
				// which reconnects with Last-Event-ID: close cleanly instead of failing.
				return passThrough(
					upstream,
					withCompletion(upstream.body, done, () => new Uint8Array(0)),
				);
			} catch (error) {
				done();
				return renderHttpFailure(error);
			}
		} finally {
			leave();
		}
	}

	/** Ends the session at the client's request: upstream DELETE, storage cleared, 204. */
	async end(scope: SessionScope): Promise<Response> {
		const leave = this.activity.enter();
		try {
			const binding = await this.authorize(scope);
			if (!binding) return notFound();
			await this.terminate(binding, "deleted by the client");
			return new Response(null, { status: 204 });
		} finally {
			leave();
		}
	}

	/** Idle expiry, the unverified limit and the maximum age (see SessionLifecycle.alarm). */
	override async alarm(): Promise<void> {
		const leave = this.activity.enter();
		try {
			const binding = await this.load();
			if (binding) await this.lifecycle.alarm(binding);
		} finally {
			leave();
		}
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
	 * The client's GET stream of an aggregate session: carries the gateway's own
	 * list_changed notifications and members' resource updates, log messages and
	 * progress. While at least one is open, the DO listens on its members' GET streams.
	 */
	private async aggregateStream(binding: SessionBinding): Promise<Response> {
		this.lifecycle.touch();
		if (!(await this.lifecycle.recheckIfDue(binding))) return notFound();
		// The client's stream keeps the object active until it has ended.
		const listening = this.activity.enter();
		const body = this.channel.connect(
			once(() => {
				listening();
				this.lifecycle.touch();
				if (!this.channel.open) this.watch.stop();
				this.lifecycle.watchWhileBusy();
			}),
		);
		this.watch.start((this.binding ?? binding).members);
		this.lifecycle.watchWhileBusy();
		return new Response(body, { headers: { "content-type": "text/event-stream", "cache-control": "no-cache" } });
	}

	/** How an aggregate member's reply is kept to itself: its own response, and notifications it may send. */
	private isolation(member: Member): ReplyIsolation {
		return {
			keepNotification: (message) => this.router.memberNotification(member.name, message) !== null,
			onForeign: (message) => {
				const what = "method" in message ? `a ${message.method} request` : "a response to another request";
				console.warn(`member ${member.name}: dropped ${what} on its reply; it is not the member's to send`);
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
		this.watch.stop();
		this.channel.closeAll();
		for (const listening of this.listeners.splice(0)) listening.abort();
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

export interface SessionStats {
	storageReads: number;
	storageWrites: number;
	/** Rechecks made (each reads the registry's read path). */
	registryReads: number;
	/** Workers KV reads those rechecks made. */
	kvReads: number;
	upstreamRequests: number;
	inFlight: number;
	/** Wall time this object was kept active by the session's requests and open streams (what Cloudflare bills). */
	activeMs: number;
}
