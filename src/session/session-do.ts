import { DurableObject } from "cloudflare:workers";
import type { JSONRPCMessage, JSONRPCNotification, JSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";
import { type Settings, settingsFrom } from "../config.ts";
import type { Env } from "../env.ts";
import { describeError, GatewayError } from "../mcp/gateway-error.ts";
import type { ListItems, ListKind } from "../mcp/list-kinds.ts";
import type { ReplyIsolation } from "../mcp/sse-relay.ts";
import { keySessions } from "../registry/key-sessions-do.ts";
import type { ServerRecord } from "../registry/schemas.ts";
import { AggregateRouter } from "./aggregate-router.ts";
import { type Member, memberOf, type SessionBinding, type SessionScope, scopeMatches } from "./binding.ts";
import { Breaker } from "./breaker.ts";
import { Catalog } from "./catalog.ts";
import { ClientChannel, MAX_CLIENT_STREAMS } from "./client-channel.ts";
import { type Clock, systemClock, systemTimers, type Timers } from "./clock.ts";
import { MemberWatch } from "./member-watch.ts";
import { type RegistryClient, registryClient } from "./registry-client.ts";
import { memberInitParams, type OpenSessionInput, openAggregate, openTransparent } from "./session-open.ts";
import {
	asGatewayError,
	notFound,
	once,
	passThrough,
	renderHttpFailure,
	renderRpcFailure,
	SESSION_NOT_FOUND,
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

/** A registry that does not answer within this is treated as unreadable for this recheck. */
const REGISTRY_TIMEOUT_MS = 5_000;

/** A reconnect backoff up to this long is waited out by the request; a longer one fails it fast. */
const MAX_RECONNECT_WAIT_MS = 1_000;

type RecheckOutcome = "verified" | "unreadable" | "ended";

/**
 * One instance per session digest (invariant 1). Owns the binding, the idle
 * expiry alarm, the in-flight count and the upstream sessions, and proxies
 * the session's messages to its upstreams: one upstream unchanged
 * (transparent), or the namespaced union of several (aggregate).
 *
 * Expiry: the alarm fires at last activity + idle timeout (or earlier: the
 * unverified limit, the maximum age). Activity is kept in memory and written
 * at most once per touch interval; when the alarm fires early because activity
 * moved the deadline, it is rescheduled. A request in flight pauses idle
 * expiry; its end restarts the idle clock. While a call or stream is open, a
 * timer rechecks the session every recheck interval, so revocation reaches it.
 */
export class SessionDO extends DurableObject<Env> {
	/** Swapped for a controllable clock in tests. */
	clock: Clock = systemClock;
	/** Swapped for timers fired by hand in tests. */
	timers: Timers = systemTimers;
	readonly store: SessionStore;
	readonly catalog: Catalog;
	private readonly settings: Settings;
	private readonly pool: UpstreamPool;
	private readonly router: AggregateRouter;
	private readonly calls: UpstreamCalls;
	/** Reconnect backoff and circuit breaker per member, for this session. */
	readonly breaker = new Breaker(() => this.clock);
	/** The client's GET streams (aggregate sessions). */
	private readonly channel = new ClientChannel();
	/** The members' GET streams the DO holds while a client listens. */
	private readonly watch: MemberWatch;

	/** undefined: not loaded yet; null: no session here (never opened, expired or deleted). */
	private binding: SessionBinding | null | undefined;
	private loading: Promise<SessionBinding | null> | null = null;
	private lastActivity = 0;
	private persistedActivity = 0;
	/**
	 * Latest activity that may have happened before this instance started and
	 * was never written (at most one touch interval after the stored value), so
	 * an evicted session is never expired early.
	 */
	private restoredActivityBound = 0;
	private inFlight = 0;
	/** Last successful registry recheck: the unverified limit counts from here. */
	private verifiedAt = 0;
	/** Last recheck attempt, successful or not: registry reads are bounded by the interval from here. */
	private recheckedAt = 0;
	/** The last recheck attempt failed (registry unreadable): activity does not extend the session. */
	private unverified = false;
	private rechecking: Promise<RecheckOutcome> | null = null;
	private registryReads = 0;
	/** The transparent GET streams being relayed, oldest first; they end when the session does. */
	private readonly listeners: AbortController[] = [];
	/** Upstream sessions to close once the calls still running have drained. */
	private closeWhenDrained: SessionBinding | null = null;
	/** Cancels the recheck timer of a busy session; null while none is set. */
	private cancelBusyRecheck: (() => void) | null = null;
	/** Swapped for counting or gated registries in tests. */
	registry: RegistryClient;

	constructor(ctx: DurableObjectState, env: Env) {
		super(ctx, env);
		this.store = new SessionStore(ctx.storage);
		this.settings = settingsFrom(env);
		this.registry = registryClient(env);
		this.pool = new UpstreamPool(env, this.settings);
		this.catalog = new Catalog((server, kind) => this.fetchList(server, kind));
		this.calls = new UpstreamCalls({
			breaker: this.breaker,
			connection: (member) => this.pool.connection(member),
			session: (member) => this.upstreamSession(member),
			retire: (member, session) => this.retire(member, session),
			isReadOnlyTool: async (member, name) =>
				(await this.catalog.get(member.name, "tools")).some(
					(tool) => tool.name === name && tool.annotations?.readOnlyHint === true,
				),
			isolation: (member) => (this.binding?.mode === "aggregate" ? this.isolation(member) : undefined),
		});
		this.watch = new MemberWatch({
			connection: (member) => this.pool.connection(member),
			session: (member) => this.upstreamSession(member),
			notify: (member, message) => {
				const passOn = this.router.memberNotification(member.name, message);
				if (passOn) this.channel.send(passOn);
			},
			closed: async (member) => {
				const session = this.binding?.upstreams[member.name];
				if (session) await this.retire(member, session);
				this.router.memberReset(member.name);
			},
			maxEventBytes: this.settings.maxReplyBytes,
		});
		this.router = new AggregateRouter({
			members: () => this.binding?.members.map((member) => member.name) ?? [],
			catalog: this.catalog,
			forward: (server, message, done) => this.calls.request(this.member(server), message, done),
			notify: async (server, message) => {
				await this.calls.notify(this.member(server), message);
			},
			request: async (server, method, params) => {
				const member = this.member(server);
				return this.pool.connection(member).request(await this.upstreamSession(member), method, params);
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
			this.lastActivity = now;
			this.persistedActivity = now;
			this.verifiedAt = now;
			this.recheckedAt = now;
			await this.store.writeBinding(binding);
			await this.store.scheduleAlarm(Math.min(now + this.settings.idleTimeoutMs, this.ageLimitAt()));
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
		const binding = await this.authorize(scope);
		if (!binding) return notFound();
		// The gateway already completed the upstream handshake when the session opened.
		if (input.kind === "notification" && input.message.method === "notifications/initialized") {
			return new Response(null, { status: 202 });
		}
		if (input.kind === "request" && this.inFlight >= MAX_IN_FLIGHT) {
			return new GatewayError(
				"too_many_in_flight",
				`Too Many Requests: this session already has ${MAX_IN_FLIGHT} requests running; wait for some to finish.`,
			).toResponse(input.message.id);
		}
		this.begin();
		const done = once(() => this.finish());
		try {
			if (!(await this.recheckIfDue(binding))) {
				done();
				return notFound();
			}
			const current = this.binding ?? binding;
			if (current.mode === "transparent") {
				const member = this.soleMember(current);
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
	}

	/** Proxies the upstream's GET stream of server-initiated messages (transparent sessions). */
	async stream(scope: SessionScope, lastEventId: string | null): Promise<Response> {
		const binding = await this.authorize(scope);
		if (!binding) return notFound();
		if (binding.mode === "aggregate") return this.aggregateStream(binding);
		// A listening stream is not a call: it does not hold expiry off, and it ends with the session.
		this.touch();
		const listening = new AbortController();
		this.listeners.push(listening);
		// A client holds at most MAX_CLIENT_STREAMS streams: opening one more ends the oldest.
		while (this.listeners.length > MAX_CLIENT_STREAMS) this.listeners.shift()?.abort();
		const done = once(() => {
			const index = this.listeners.indexOf(listening);
			if (index !== -1) this.listeners.splice(index, 1);
			this.touch();
			this.watchWhileBusy();
		});
		try {
			if (!(await this.recheckIfDue(binding))) {
				done();
				return notFound();
			}
			this.watchWhileBusy();
			const member = this.soleMember(this.binding ?? binding);
			const connection = this.pool.connection(member);
			let session = await this.upstreamSession(member);
			let upstream = await connection.openStream(session, lastEventId, listening.signal);
			if (upstream.status === 404 && session.sessionId !== null) {
				// The upstream session expired: retire it and listen on a fresh one.
				await upstream.body?.cancel();
				await this.retire(member, session);
				session = await this.upstreamSession(member);
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
	}

	/**
	 * The client's GET stream of an aggregate session: carries the gateway's own
	 * list_changed notifications and members' resource updates, log messages and
	 * progress. While at least one is open, the DO listens on its members' GET streams.
	 */
	private async aggregateStream(binding: SessionBinding): Promise<Response> {
		this.touch();
		if (!(await this.recheckIfDue(binding))) return notFound();
		const body = this.channel.connect(
			once(() => {
				this.touch();
				if (!this.channel.open) this.watch.stop();
				this.watchWhileBusy();
			}),
		);
		this.watch.start((this.binding ?? binding).members);
		this.watchWhileBusy();
		return new Response(body, { headers: { "content-type": "text/event-stream", "cache-control": "no-cache" } });
	}

	/** Ends the session at the client's request: upstream DELETE, storage cleared, 204. */
	async end(scope: SessionScope): Promise<Response> {
		const binding = await this.authorize(scope);
		if (!binding) return notFound();
		await this.terminate(binding, "deleted by the client");
		return new Response(null, { status: 204 });
	}

	/**
	 * Idle expiry, the unverified limit and the maximum age. Reschedules itself
	 * when activity moved the deadline or a call is running; a session past its
	 * maximum age, or past its unverified limit without a successful last
	 * recheck, ends even while a call runs.
	 */
	override async alarm(): Promise<void> {
		const binding = await this.load();
		if (!binding) return;
		const now = this.clock.now();
		if (now >= this.ageLimitAt()) {
			await this.terminate(binding, "reached its maximum age");
			return;
		}
		if (this.unverified && now >= this.verifiedAt + this.settings.unverifiedLimitMs) {
			const outcome = await this.recheck(binding);
			if (outcome !== "verified") {
				if (outcome === "unreadable") await this.terminate(binding, "unverified for too long");
				return;
			}
		}
		if (this.inFlight > 0) {
			await this.store.scheduleAlarm(Math.min(now + this.settings.idleTimeoutMs, this.limitAt(), this.ageLimitAt()));
			return;
		}
		const deadline = this.deadline();
		if (now < deadline) {
			await this.store.scheduleAlarm(deadline);
			return;
		}
		await this.terminate(binding, "idle");
	}

	/**
	 * What this session has cost so far, since this instance started: storage
	 * operations, registry reads and upstream requests (benchmarks, operators).
	 */
	stats(): SessionStats {
		return {
			storageReads: this.store.reads,
			storageWrites: this.store.writes,
			registryReads: this.registryReads,
			upstreamRequests: this.pool.requests,
			inFlight: this.inFlight,
		};
	}

	/** Resolves once pending catalog refreshes have finished (tests). */
	settled(): Promise<void> {
		return this.router.settled();
	}

	/**
	 * When the session ends if nothing else happens: one idle timeout after the
	 * last activity; while the registry cannot be read, no later than the
	 * unverified limit after the last successful recheck; never after its maximum age.
	 */
	deadline(): number {
		const idle = Math.max(this.lastActivity, this.restoredActivityBound) + this.settings.idleTimeoutMs;
		return Math.min(idle, this.limitAt(), this.ageLimitAt());
	}

	private limitAt(): number {
		return this.unverified ? this.verifiedAt + this.settings.unverifiedLimitMs : Number.POSITIVE_INFINITY;
	}

	private ageLimitAt(): number {
		const createdAt = this.binding?.createdAt;
		return createdAt === undefined ? Number.POSITIVE_INFINITY : createdAt + this.settings.maxSessionAgeMs;
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

	/** The member's upstream session, opening one if the member was unavailable so far. */
	private async upstreamSession(member: Member): Promise<SessionBinding["upstreams"][string]> {
		const binding = this.binding;
		if (!binding) throw new GatewayError("session_not_found", SESSION_NOT_FOUND);
		const existing = binding.upstreams[member.name];
		if (existing) return existing;
		const params =
			binding.mode === "aggregate"
				? memberInitParams(binding.protocolVersion, binding.clientInfo)
				: {
						protocolVersion: binding.protocolVersion,
						capabilities: binding.clientCapabilities,
						clientInfo: binding.clientInfo,
					};
		const wait = this.breaker.reconnectWait(member.name);
		if (wait > MAX_RECONNECT_WAIT_MS) {
			throw new GatewayError(
				"upstream_unavailable",
				`the gateway is backing off after connection failures and reconnects in ${Math.ceil(wait / 1000)} s`,
				{ server: member.name },
			);
		}
		// A short backoff is waited out inside this request: no timer outlives it.
		if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
		let session: SessionBinding["upstreams"][string];
		try {
			({ session } = await this.pool.open(member, params));
		} catch (error) {
			this.breaker.failure(member.name);
			throw error;
		}
		this.breaker.success(member.name);
		const current = this.binding;
		if (current && current.upstreams[member.name]?.sessionId !== session.sessionId) {
			// A new upstream session is rare (a member came back or expired): worth one write.
			const updated = { ...current, upstreams: { ...current.upstreams, [member.name]: session } };
			this.binding = updated;
			this.catalog.forget(member.name);
			await this.store.writeBinding(updated);
		}
		return session;
	}

	/**
	 * Retires an upstream session that expired or closed, exactly once: only if
	 * it is still the member's current session, so a late failure from an old
	 * session never retires a newer one. The next use opens a fresh session
	 * (sent without the old id) and refetches the member's catalog.
	 */
	private async retire(member: Member, session: SessionBinding["upstreams"][string]): Promise<void> {
		const binding = this.binding;
		const current = binding?.upstreams[member.name];
		if (!binding || !current || current.sessionId !== session.sessionId) return;
		const { [member.name]: _retired, ...rest } = binding.upstreams;
		const updated = { ...binding, upstreams: rest };
		this.binding = updated;
		this.catalog.forget(member.name);
		console.log(`upstream ${member.name}: session retired; the next request opens a new one`);
		this.ctx.waitUntil(this.pool.connection(member).close(session));
		await this.store.writeBinding(updated);
	}

	/**
	 * A recheck found members whose configuration (URL, headers, timeout)
	 * changed: the session takes the new configuration and reopens those
	 * upstream sessions on it, so it never talks to an old URL with current
	 * secrets. An old session on an unchanged URL is closed there; one on a URL
	 * that changed gets nothing more, not even a DELETE carrying credentials.
	 */
	private async applyConfigChanges(changed: readonly ServerRecord[]): Promise<void> {
		const binding = this.binding;
		if (!binding || changed.length === 0) return;
		const upstreams = { ...binding.upstreams };
		let members = binding.members;
		for (const server of changed) {
			const old = members.find((member) => member.name === server.name);
			if (!old) continue;
			const member = memberOf(server);
			members = members.map((candidate) => (candidate.name === server.name ? member : candidate));
			const session = upstreams[server.name];
			delete upstreams[server.name];
			this.pool.replace(member);
			this.breaker.success(member.name);
			if (session && old.url === member.url) this.ctx.waitUntil(this.pool.connection(member).close(session));
			console.log(`upstream ${server.name}: configuration changed; this session reconnects with the new one`);
		}
		this.binding = { ...binding, members, upstreams };
		for (const server of changed) {
			if (binding.mode === "aggregate") this.router.memberReset(server.name);
			else this.catalog.forget(server.name);
		}
		await this.store.writeBinding(this.binding);
	}

	/**
	 * Fetches a whole list from a member. list_changed notifications seen on
	 * the way go through the router, which applies them at most once per window.
	 */
	private async fetchList<K extends ListKind>(server: string, kind: K): Promise<Array<ListItems[K]>> {
		const member = this.member(server);
		try {
			return await this.pool.connection(member).listAll(await this.upstreamSession(member), kind, (notification) => {
				this.router.memberNotification(server, notification);
			});
		} catch (error) {
			// A member that does not offer this list has an empty one.
			if (error instanceof GatewayError && error.upstreamCode === -32601) return [];
			throw error;
		}
	}

	private member(server: string): Member {
		const member = this.binding?.members.find((candidate) => candidate.name === server);
		if (!member) throw new GatewayError("invalid_params", `Unknown server '${server}' in this session.`);
		return member;
	}

	private soleMember(binding: SessionBinding): Member {
		const member = binding.members[0];
		if (!member) throw new GatewayError("internal", "This session has no upstream server.");
		return member;
	}

	/**
	 * Verifies the session with the registry at most once per recheck interval
	 * (invariant 5). The request that finds a recheck due waits for it, so a
	 * revoked or deleted session is refused at once; requests arriving while it
	 * runs are served on the previous verification and do not wait, unless the
	 * unverified limit has passed. A session past its maximum age ends here.
	 * Returns false when the session has ended.
	 */
	private async recheckIfDue(binding: SessionBinding): Promise<boolean> {
		const now = this.clock.now();
		if (now >= this.ageLimitAt()) {
			await this.terminate(binding, "reached its maximum age");
			return false;
		}
		const pastLimit = now >= this.verifiedAt + this.settings.unverifiedLimitMs;
		if (this.rechecking && !pastLimit) return this.binding !== null;
		if (!this.rechecking && now - this.recheckedAt < this.settings.recheckIntervalMs && !pastLimit) return true;
		const outcome = await this.recheck(binding);
		if (outcome === "ended") return false;
		if (outcome === "unreadable" && this.clock.now() >= this.verifiedAt + this.settings.unverifiedLimitMs) {
			await this.terminate(binding, "unverified for too long");
			return false;
		}
		return this.binding !== null;
	}

	/** One registry check, shared by everyone who asks while it runs (single-flight). */
	private recheck(binding: SessionBinding): Promise<RecheckOutcome> {
		this.rechecking ??= (async (): Promise<RecheckOutcome> => {
			this.recheckedAt = this.clock.now();
			this.registryReads++;
			try {
				const check = await withTimeout(
					this.registry.checkSession({
						keyId: binding.keyId,
						userPath: binding.userPath,
						endpoint: binding.endpointCheck,
						members: binding.members.map((member) => ({
							name: member.name,
							generation: member.generation,
							configDigest: member.configDigest,
						})),
					}),
					REGISTRY_TIMEOUT_MS,
				);
				if (!check.ok) {
					await this.terminate(binding, check.reason);
					return "ended";
				}
				// The latest success counts, whoever started it: the unverified limit runs from here.
				this.verifiedAt = this.clock.now();
				this.unverified = false;
				await this.applyConfigChanges(check.changed);
				return "verified";
			} catch (error) {
				console.warn(`session recheck failed, serving unverified: ${describeError(error)}`);
				if (!this.unverified) {
					this.unverified = true;
					// End the session at the limit even if no request comes, or a call keeps running.
					if (this.binding) await this.store.scheduleAlarm(this.limitAt());
				}
				return "unreadable";
			} finally {
				this.rechecking = null;
			}
		})();
		return this.rechecking;
	}

	/** A call or a client stream is open: nothing else would make the session recheck. */
	private get busy(): boolean {
		return this.inFlight > 0 || this.listeners.length > 0 || this.channel.open;
	}

	/**
	 * While the session is busy, a timer rechecks it every recheck interval, so
	 * a revoked key or a deleted endpoint ends an open stream or a long call
	 * within one interval even when no new request arrives. A timer costs no
	 * storage write (the alarm would cost one per call), and a busy Durable
	 * Object is awake anyway; it is cancelled as soon as the session is idle.
	 */
	private watchWhileBusy(): void {
		if (!this.busy || !this.binding) {
			this.cancelBusyRecheck?.();
			this.cancelBusyRecheck = null;
			return;
		}
		if (this.cancelBusyRecheck) return;
		const due = Math.min(this.recheckedAt + this.settings.recheckIntervalMs, this.ageLimitAt());
		this.cancelBusyRecheck = this.timers.set(Math.max(0, due - this.clock.now()), () => {
			this.cancelBusyRecheck = null;
			const binding = this.binding;
			if (!binding || !this.busy) return;
			this.recheckIfDue(binding)
				.catch((error: unknown) => console.error(`busy session recheck failed: ${describeError(error)}`))
				.finally(() => this.watchWhileBusy());
		});
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
				if (binding) {
					this.lastActivity = binding.lastActivity;
					this.persistedActivity = binding.lastActivity;
					this.restoredActivityBound = binding.lastActivity + this.settings.touchIntervalMs;
					this.verifiedAt = binding.verifiedAt;
					this.recheckedAt = binding.verifiedAt;
				}
			}
			return this.binding;
		});
		return this.loading;
	}

	/** Activity that is not a call (a stream opened or closed): moves the idle clock only. */
	private touch(): void {
		this.lastActivity = this.clock.now();
		this.touchIfDue();
	}

	private begin(): void {
		this.inFlight++;
		this.lastActivity = this.clock.now();
		this.touchIfDue();
		this.watchWhileBusy();
	}

	private finish(): void {
		this.inFlight--;
		this.lastActivity = this.clock.now();
		this.touchIfDue();
		this.watchWhileBusy();
		if (this.inFlight === 0 && this.closeWhenDrained) {
			const ended = this.closeWhenDrained;
			this.closeWhenDrained = null;
			this.ctx.waitUntil(this.pool.closeAll(ended.members, ended.upstreams));
		}
	}

	/**
	 * Writes the activity time, at most once per touch interval however many
	 * requests arrive: the check and the update of `persistedActivity` happen
	 * synchronously, so concurrent requests share one write.
	 */
	private touchIfDue(): void {
		const binding = this.binding;
		// An ended session is never written back; an unverified one is not extended.
		if (!binding || this.unverified) return;
		const now = this.clock.now();
		if (now - this.persistedActivity < this.settings.touchIntervalMs) return;
		this.persistedActivity = now;
		const touched = { ...binding, lastActivity: now, verifiedAt: this.verifiedAt };
		this.binding = touched;
		this.store.writeBinding(touched).catch((error: unknown) => {
			console.error(`session touch failed: ${describeError(error)}`);
		});
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
		this.cancelBusyRecheck?.();
		this.cancelBusyRecheck = null;
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
		if (this.inFlight > 0) this.closeWhenDrained = binding;
		else await this.pool.closeAll(binding.members, binding.upstreams);
	}
}

export interface SessionStats {
	storageReads: number;
	storageWrites: number;
	registryReads: number;
	upstreamRequests: number;
	inFlight: number;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
	let timer: ReturnType<typeof setTimeout> | undefined;
	const timeout = new Promise<never>((_, reject) => {
		timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
	});
	return Promise.race([promise, timeout]).finally(() => {
		if (timer !== undefined) clearTimeout(timer);
	});
}
