import { DurableObject } from "cloudflare:workers";
import type {
	InitializeRequest,
	JSONRPCMessage,
	JSONRPCNotification,
	JSONRPCRequest,
} from "@modelcontextprotocol/sdk/types.js";
import { type Settings, settingsFrom } from "../config.ts";
import type { Env } from "../env.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import { isSupportedSessionVersion } from "../mcp/protocol-version.ts";
import { UpstreamConnection, type UpstreamSession } from "../upstream/upstream-connection.ts";
import { resolveTarget } from "../upstream/upstream-target.ts";
import { type SessionBinding, type SessionScope, scopeMatches } from "./binding.ts";
import { type Clock, systemClock } from "./clock.ts";
import { SessionStore } from "./session-store.ts";
import { withCompletion } from "./stream-completion.ts";

/** What the edge hands over when a client initializes. */
export interface OpenSessionInput {
	scope: SessionScope;
	request: JSONRPCRequest;
	clientCapabilities: InitializeRequest["params"]["capabilities"];
	server: SessionBinding["server"];
}

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
 * expiry alarm, the in-flight count and the upstream session, and proxies the
 * session's messages to its upstream.
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
	private readonly settings: Settings;

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

	constructor(ctx: DurableObjectState, env: Env) {
		super(ctx, env);
		this.store = new SessionStore(ctx.storage);
		this.settings = settingsFrom(env);
	}

	/**
	 * Opens the session: initializes the upstream session and stores the
	 * binding. `opened` is false when the upstream refused (its JSON-RPC error
	 * is the reply) or could not be reached; then nothing was stored.
	 */
	async open(input: OpenSessionInput): Promise<OpenSessionResult> {
		try {
			if ((await this.load()) !== null) {
				throw new GatewayError("conflict", "A session with this ID already exists.");
			}
			const connection = this.upstreamFor(input.server);
			const { reply, session } = await connection.initialize(input.request);
			if (!session) return { opened: false, reply };
			if (!isSupportedSessionVersion(session.protocolVersion)) {
				await connection.close(session);
				throw new GatewayError(
					"upstream_error",
					`Upstream server '${input.server.name}' negotiated protocol version ${session.protocolVersion}, which this gateway does not support.`,
					{ server: input.server.name },
				);
			}
			const now = this.clock.now();
			const binding: SessionBinding = {
				...input.scope,
				protocolVersion: session.protocolVersion,
				clientCapabilities: input.clientCapabilities,
				server: input.server,
				upstream: session,
				createdAt: now,
				lastActivity: now,
			};
			this.binding = binding;
			this.lastActivity = now;
			this.persistedActivity = now;
			await this.store.writeBinding(binding);
			await this.store.scheduleAlarm(now + this.settings.idleTimeoutMs);
			return { opened: true, reply };
		} catch (error) {
			const failure = asGatewayError(error);
			return {
				opened: false,
				reply: { jsonrpc: "2.0", id: input.request.id, error: failure.toJsonRpcError() },
			};
		}
	}

	/** Forwards one client message (request, notification or response) to the upstream. */
	async post(scope: SessionScope, input: SessionMessage): Promise<Response> {
		const binding = await this.authorize(scope);
		if (!binding) return notFound();
		// The gateway already completed the upstream handshake when the session opened.
		if (input.kind === "notification" && input.message.method === "notifications/initialized") {
			return new Response(null, { status: 202 });
		}
		this.begin();
		let streaming = false;
		const connection = this.upstreamFor(binding.server);
		const deadline = connection.startCallDeadline();
		const done = () => {
			deadline.clear();
			this.finish();
		};
		try {
			const upstream = await connection.post(binding.upstream, input.message, deadline);
			if (input.kind !== "request") {
				await upstream.body?.cancel();
				if (upstream.ok) return new Response(null, { status: 202 });
				throw connection.statusError(upstream.status, "a forwarded message");
			}
			if (!upstream.ok || !upstream.body) {
				await upstream.body?.cancel();
				throw connection.statusError(upstream.status, input.message.method);
			}
			streaming = true;
			const id = input.message.id;
			const isSse = upstream.headers.get("content-type")?.includes("text/event-stream") === true;
			// An SSE reply that breaks off (deadline passed, upstream gone) ends with a
			// JSON-RPC error event for the call, so the client is not left waiting.
			const tail = (error: unknown) =>
				isSse ? sseErrorEvent(id, connection.midStreamError(error, deadline.signal.aborted)) : null;
			return passThrough(upstream, withCompletion(upstream.body, done, tail));
		} catch (error) {
			return input.kind === "request" ? renderRpcFailure(error, input.message.id) : renderHttpFailure(error);
		} finally {
			if (!streaming) done();
		}
	}

	/** Proxies the upstream's GET stream of server-initiated messages. */
	async stream(scope: SessionScope, lastEventId: string | null): Promise<Response> {
		const binding = await this.authorize(scope);
		if (!binding) return notFound();
		this.begin();
		let streaming = false;
		try {
			const connection = this.upstreamFor(binding.server);
			const upstream = await connection.openStream(binding.upstream, lastEventId);
			if (upstream.status === 405) {
				await upstream.body?.cancel();
				return new Response(null, { status: 405, headers: { allow: "POST, DELETE" } });
			}
			if (!upstream.ok || !upstream.body) {
				await upstream.body?.cancel();
				throw connection.statusError(upstream.status, "its event stream");
			}
			streaming = true;
			return passThrough(
				upstream,
				withCompletion(
					upstream.body,
					() => this.finish(),
					// The upstream dropping its event stream is an ordinary end for the client,
					// which reconnects with Last-Event-ID: close cleanly instead of failing.
					() => new Uint8Array(0),
				),
			);
		} catch (error) {
			return renderHttpFailure(error);
		} finally {
			if (!streaming) this.finish();
		}
	}

	/** Ends the session at the client's request: upstream DELETE, storage cleared, 204. */
	async end(scope: SessionScope): Promise<Response> {
		const binding = await this.authorize(scope);
		if (!binding) return notFound();
		await this.terminate(binding);
		return new Response(null, { status: 204 });
	}

	/** Idle expiry. Reschedules itself when activity moved the deadline or a call is running. */
	override async alarm(): Promise<void> {
		const binding = await this.load();
		if (!binding) return;
		const now = this.clock.now();
		if (this.inFlight > 0) {
			await this.store.scheduleAlarm(now + this.settings.idleTimeoutMs);
			return;
		}
		const deadline = this.deadline();
		if (now < deadline) {
			await this.store.scheduleAlarm(deadline);
			return;
		}
		await this.terminate(binding);
	}

	/** When the session expires if nothing else happens. */
	deadline(): number {
		return Math.max(this.lastActivity, this.restoredActivityBound) + this.settings.idleTimeoutMs;
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
				}
			}
			return this.binding;
		});
		return this.loading;
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
	}

	/**
	 * Writes the activity time, at most once per touch interval however many
	 * requests arrive: the check and the update of `persistedActivity` happen
	 * synchronously, so concurrent requests share one write.
	 */
	private touchIfDue(): void {
		const binding = this.binding;
		if (!binding) return;
		const now = this.clock.now();
		if (now - this.persistedActivity < this.settings.touchIntervalMs) return;
		this.persistedActivity = now;
		const touched = { ...binding, lastActivity: now };
		this.binding = touched;
		this.store.writeBinding(touched).catch((error: unknown) => {
			console.error(`session touch failed: ${error instanceof Error ? error.message : String(error)}`);
		});
	}

	private async terminate(binding: SessionBinding): Promise<void> {
		// Forget first, so concurrent and later requests get 404 and nothing writes the session back.
		this.binding = null;
		await this.store.clear();
		await this.upstreamFor(binding.server).close(binding.upstream as UpstreamSession);
	}

	private upstreamFor(server: SessionBinding["server"]): UpstreamConnection {
		return new UpstreamConnection(resolveTarget(server, this.env, this.settings.upstreamTimeoutMs));
	}
}

/** The upstream's response with only the headers a client may see: no upstream session id. */
function passThrough(upstream: Response, body: ReadableStream<Uint8Array>): Response {
	const headers = new Headers();
	const type = upstream.headers.get("content-type");
	if (type) headers.set("content-type", type);
	if (type?.includes("text/event-stream")) headers.set("cache-control", "no-cache");
	return new Response(body, { status: upstream.status, headers });
}

function sseErrorEvent(id: JSONRPCRequest["id"], error: GatewayError): Uint8Array {
	const message = { jsonrpc: "2.0", id, error: error.toJsonRpcError() };
	return new TextEncoder().encode(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
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
