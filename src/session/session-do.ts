import { DurableObject } from "cloudflare:workers";
import type { JSONRPCMessage, JSONRPCNotification, JSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";
import { type Settings, settingsFrom } from "../config.ts";
import type { Env } from "../env.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import { AggregateRouter } from "./aggregate-router.ts";
import { type Member, type SessionBinding, type SessionScope, scopeMatches } from "./binding.ts";
import { Breaker } from "./breaker.ts";
import { Catalog, INVALIDATED_BY, LIST_KINDS, type ListKind } from "./catalog.ts";
import { ClientChannel } from "./client-channel.ts";
import { type Clock, systemClock } from "./clock.ts";
import { MemberWatch } from "./member-watch.ts";
import { type RegistryClient, registryClient } from "./registry-client.ts";
import { memberInitParams, type OpenSessionInput, openAggregate, openTransparent } from "./session-open.ts";
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

const SESSION_NOT_FOUND =
	"Session not found: it expired, was deleted, or belongs to another client. Initialize a new session.";

/**
 * One instance per session digest (invariant 1). Owns the binding, the idle
 * expiry alarm, the in-flight count and the upstream sessions, and proxies
 * the session's messages to its upstreams: one upstream unchanged
 * (transparent), or the namespaced union of several (aggregate).
 *
 * Expiry: the alarm fires at last activity + idle timeout. Activity is kept in
 * memory and written at most once per touch interval; when the alarm fires
 * early because activity moved the deadline, it is rescheduled. A request in
 * flight pauses expiry; its end restarts the idle clock.
 */
export class SessionDO extends DurableObject<Env> {
	/** Swapped for a controllable clock in tests. */
	clock: Clock = systemClock;
	readonly store: SessionStore;
	readonly catalog: Catalog;
	private readonly settings: Settings;
	private readonly pool: UpstreamPool;
	private readonly router: AggregateRouter;
	private readonly calls: UpstreamCalls;
	/** Reconnect backoff and circuit breaker per member. */
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
	/** The transparent GET streams being relayed; they end when the session does. */
	private readonly listeners = new Set<AbortController>();
	/** Upstream sessions to close once the calls still running have drained. */
	private closeWhenDrained: SessionBinding | null = null;
	/** Swapped for counting or gated registries in tests. */
	registry: RegistryClient;

	constructor(ctx: DurableObjectState, env: Env) {
		super(ctx, env);
		this.store = new SessionStore(ctx.storage);
		this.settings = settingsFrom(env);
		this.registry = registryClient(env);
		this.pool = new UpstreamPool(env, this.settings);
		this.catalog = new Catalog((server, kind, onInvalidate) => this.fetchList(server, kind, onInvalidate));
		this.calls = new UpstreamCalls({
			breaker: this.breaker,
			maxReplyBytes: this.settings.maxReplyBytes,
			connection: (member) => this.pool.connection(member),
			session: (member) => this.upstreamSession(member),
			retire: (member, session) => this.retire(member, session),
			isReadOnlyTool: async (member, name) => {
				const tools = (await this.catalog.get(member.name, "tools")) as Array<{
					name?: unknown;
					annotations?: { readOnlyHint?: unknown };
				}>;
				return tools.some((tool) => tool.name === name && tool.annotations?.readOnlyHint === true);
			},
			notificationFilter: (member) =>
				this.binding?.mode === "aggregate"
					? (message) => this.router.memberNotification(member.name, message) !== null
					: undefined,
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
			await this.store.scheduleAlarm(now + this.settings.idleTimeoutMs);
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
		this.begin();
		const done = once(() => this.finish());
		try {
			if (!(await this.recheckIfDue(binding))) {
				done();
				return notFound();
			}
			if (binding.mode === "transparent") {
				const member = this.soleMember(binding);
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
		this.listeners.add(listening);
		const done = once(() => {
			this.listeners.delete(listening);
			this.touch();
		});
		try {
			if (!(await this.recheckIfDue(binding))) {
				done();
				return notFound();
			}
			const member = this.soleMember(binding);
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
	 * list_changed notifications and members' resource updates and log messages.
	 * While at least one is open, the DO listens on its members' GET streams.
	 */
	private async aggregateStream(binding: SessionBinding): Promise<Response> {
		this.touch();
		if (!(await this.recheckIfDue(binding))) return notFound();
		const body = this.channel.connect(
			once(() => {
				this.touch();
				if (!this.channel.open) this.watch.stop();
			}),
		);
		this.watch.start(binding.members);
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
	 * Idle expiry and the unverified limit. Reschedules itself when activity
	 * moved the deadline or a call is running; a session past its unverified
	 * limit ends even while a call runs, unless a last recheck succeeds.
	 */
	override async alarm(): Promise<void> {
		const binding = await this.load();
		if (!binding) return;
		const now = this.clock.now();
		if (this.unverified && now >= this.verifiedAt + this.settings.unverifiedLimitMs) {
			const outcome = await this.recheck(binding);
			if (outcome !== "verified") {
				if (outcome === "unreadable") await this.terminate(binding, "unverified for too long");
				return;
			}
		}
		if (this.inFlight > 0) {
			await this.store.scheduleAlarm(Math.min(now + this.settings.idleTimeoutMs, this.limitAt()));
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
	 * last activity, and, while the registry cannot be read, no later than the
	 * unverified limit after the last successful recheck.
	 */
	deadline(): number {
		const idle = Math.max(this.lastActivity, this.restoredActivityBound) + this.settings.idleTimeoutMs;
		return Math.min(idle, this.limitAt());
	}

	private limitAt(): number {
		return this.unverified ? this.verifiedAt + this.settings.unverifiedLimitMs : Number.POSITIVE_INFINITY;
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

	/** Fetches a whole list from a member, reporting list_changed notifications seen meanwhile. */
	private async fetchList(
		server: string,
		kind: ListKind,
		onInvalidate: (kinds: readonly ListKind[]) => void,
	): Promise<unknown[]> {
		const member = this.member(server);
		const { method, field } = LIST_KINDS[kind];
		try {
			return await this.pool
				.connection(member)
				.listAll(await this.upstreamSession(member), method, field, (notification) => {
					const kinds = INVALIDATED_BY[notification.method];
					if (kinds) onInvalidate(kinds);
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
	 * unverified limit has passed. Returns false when the session has ended.
	 */
	private async recheckIfDue(binding: SessionBinding): Promise<boolean> {
		const now = this.clock.now();
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
						// A transparent session's one member is its endpoint, checked above.
						members:
							binding.mode === "aggregate"
								? binding.members.map((member) => ({ name: member.name, generation: member.generation }))
								: undefined,
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
				return "verified";
			} catch (error) {
				console.warn(`session recheck failed, serving unverified: ${describe(error)}`);
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
	}

	private finish(): void {
		this.inFlight--;
		this.lastActivity = this.clock.now();
		this.touchIfDue();
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
			console.error(`session touch failed: ${error instanceof Error ? error.message : String(error)}`);
		});
	}

	/**
	 * Ends the session: forgotten first, so concurrent and later requests get
	 * 404 and nothing writes it back; storage cleared; upstream sessions closed,
	 * after the calls still running have drained.
	 */
	private async terminate(binding: SessionBinding, reason: string): Promise<void> {
		if (this.binding === null) return;
		console.log(`session ended: ${reason}`);
		this.binding = null;
		this.watch.stop();
		this.channel.closeAll();
		for (const listening of this.listeners) listening.abort();
		this.listeners.clear();
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

type RecheckOutcome = "verified" | "unreadable" | "ended";

/** A registry that does not answer within this is treated as unreadable for this recheck. */
const REGISTRY_TIMEOUT_MS = 5_000;

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
	let timer: ReturnType<typeof setTimeout> | undefined;
	const timeout = new Promise<never>((_, reject) => {
		timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
	});
	return Promise.race([promise, timeout]).finally(() => {
		if (timer !== undefined) clearTimeout(timer);
	});
}

function describe(error: unknown): string {
	return error instanceof Error ? error.message : String(error);
}

/** The upstream's response with only the headers a client may see: no upstream session id. */
function passThrough(upstream: Response, body: ReadableStream<Uint8Array>): Response {
	const headers = new Headers();
	const type = upstream.headers.get("content-type");
	if (type) headers.set("content-type", type);
	if (type?.includes("text/event-stream")) headers.set("cache-control", "no-cache");
	return new Response(body, { status: upstream.status, headers });
}

/** A reconnect backoff up to this long is waited out by the request; a longer one fails it fast. */
const MAX_RECONNECT_WAIT_MS = 1_000;

function once(action: () => void): () => void {
	let called = false;
	return () => {
		if (!called) {
			called = true;
			action();
		}
	};
}

function notFound(): Response {
	return new GatewayError("session_not_found", SESSION_NOT_FOUND).toResponse();
}

function renderRpcFailure(error: unknown, id: JSONRPCRequest["id"]): Response {
	return asGatewayError(error).toRpcResponse(id);
}

function renderHttpFailure(error: unknown): Response {
	return asGatewayError(error).toResponse();
}

function asGatewayError(error: unknown): GatewayError {
	if (error instanceof GatewayError) return error;
	console.error("session: unexpected failure", error);
	return new GatewayError("internal", "The gateway failed unexpectedly while handling this session.", { cause: error });
}
