import type {
	JSONRPCMessage,
	JSONRPCNotification,
	JSONRPCRequest,
	RequestId,
} from "@modelcontextprotocol/sdk/types.js";
import { failureReply } from "../mcp/failure-reply.ts";
import { describeError, GatewayError } from "../mcp/gateway-error.ts";
import { normalizeOutgoing } from "../mcp/outgoing.ts";
import { readCapped } from "../mcp/read-capped.ts";
import { relaySse } from "../mcp/sse-relay.ts";
import { once } from "../primitives/once.ts";
import type { Deadline } from "../upstream/deadline.ts";
import type { UpstreamConnection, UpstreamSession } from "../upstream/upstream-connection.ts";
import type { Breaker } from "./aggregate/breaker.ts";
import { type ReplyRoute, readMemberReply } from "./aggregate/member-reply.ts";
import type { Member } from "./binding.ts";
import { ClientAnswers, relayModern } from "./bridge/modern-rounds.ts";
import type { Timers } from "./clock.ts";
import { withCompletion } from "./streams/stream-completion.ts";

/** What forwarding needs from the SessionDO. */
export interface CallHost {
	readonly breaker: Breaker;
	connection(member: Member): UpstreamConnection;
	/** The member's upstream session, opened if needed; throws when none can be had (nothing was sent). */
	session(member: Member): Promise<UpstreamSession>;
	/** Retires `session` if it is still the member's current one (fenced against newer sessions). */
	retire(member: Member, session: UpstreamSession): Promise<void>;
	/** Whether the member listed this tool with `annotations.readOnlyHint === true`. */
	isReadOnlyTool(member: Member, name: string): Promise<boolean>;
	/**
	 * Aggregate sessions carry members' replies on streams of their own (returns
	 * how); transparent ones pass replies on unchanged (returns undefined).
	 */
	replyRoute(member: Member, request: JSONRPCRequest): ReplyRoute | undefined;
	timers(): Timers;
}

/**
 * Methods that only read, so repeating them after a failure that may have
 * reached the upstream changes nothing. Everything else (including methods the
 * gateway does not know, passed through a transparent endpoint) is sent at most
 * once; `tools/call` is repeated only for tools listed as read-only.
 */
const REPEATABLE_METHODS: ReadonlySet<string> = new Set([
	"tools/list",
	"prompts/list",
	"prompts/get",
	"resources/list",
	"resources/templates/list",
	"resources/read",
	"ping",
]);

/** Why a running request was aborted by the gateway rather than the client. */
class SessionEnded extends Error {}

/**
 * Sends client requests to an upstream and turns every way that can fail into
 * an exact answer, at most once: a request that may have reached the upstream
 * is repeated only when it cannot change anything (a read method on the
 * allowlist, or a tool listed as read-only); one that certainly was not sent
 * may be tried once more.
 */
export class UpstreamCalls {
	/** Requests being relayed, so a cancellation can end the wait for a reply that will not come. */
	private readonly running = new Map<RequestId, AbortController>();
	/** The client's answers to what 2026-07-28 upstreams asked it during calls (see relayModern). */
	readonly answers: ClientAnswers;

	constructor(private readonly host: CallHost) {
		this.answers = new ClientAnswers(() => host.timers());
	}

	/** Forwards a request; `done` is called once its reply has ended. */
	async request(member: Member, original: JSONRPCRequest, done: () => void): Promise<Response> {
		const message = normalizeOutgoing(original) as JSONRPCRequest;
		const cancelled = new AbortController();
		this.running.set(message.id, cancelled);
		const settle = once(() => {
			if (this.running.get(message.id) === cancelled) this.running.delete(message.id);
			done();
		});
		try {
			return await this.attempt(member, message, cancelled.signal, settle);
		} catch (error) {
			settle();
			throw error;
		}
	}

	/** Ends every running request: the session ended (`reason` says why) and their replies are not wanted. */
	abortAll(reason: string): void {
		for (const running of this.running.values()) running.abort(new SessionEnded(reason));
		this.running.clear();
		this.answers.clear();
	}

	private async attempt(
		member: Member,
		message: JSONRPCRequest,
		cancelled: AbortSignal,
		done: () => void,
	): Promise<Response> {
		const reply = (error: GatewayError) => {
			done();
			return Response.json(failureReply(message.method, message.id, error));
		};
		const connection = this.host.connection(member);
		for (let attempt = 1; ; attempt++) {
			const pausedFor = this.host.breaker.openFor(member.name);
			if (pausedFor > 0) {
				return reply(
					new GatewayError(
						"upstream_unavailable",
						`Upstream server '${member.name}' is unavailable: after repeated connection failures the gateway pauses requests to it for ${Math.ceil(pausedFor / 1000)} s. The request was not sent; retry later.`,
						{ server: member.name },
					),
				);
			}
			let session: UpstreamSession;
			try {
				session = await this.host.session(member);
			} catch (error) {
				// Nothing was sent: any request may be tried once more.
				if (attempt === 1 && !isFinal(error)) continue;
				return reply(notSent(member, error));
			}
			const deadline = connection.startCallDeadline(cancelled);
			let upstream: Response;
			try {
				upstream = await connection.post(session, message, deadline);
			} catch (error) {
				deadline.clear();
				if (cancelled.aborted) return reply(cancelledError(cancelled));
				if (error instanceof GatewayError && error.kind === "upstream_timeout") {
					this.cancelUpstream(connection, session, message);
					return reply(error);
				}
				// The upstream answered, but not as MCP (a redirect): nothing to retry or back off from.
				if (isFinal(error)) return reply(error as GatewayError);
				this.host.breaker.failure(member.name);
				if (attempt === 1 && (await this.mayRepeat(member, message))) continue;
				return reply(mayHaveRun(member, message, "the connection failed after the request was sent"));
			}
			if (upstream.status === 401) {
				deadline.clear();
				await upstream.body?.cancel();
				// Credentials were refused; the upstream session itself is fine and is kept.
				this.host.breaker.success(member.name);
				const challenge = upstream.headers.get("www-authenticate");
				console.warn(
					`upstream ${member.name}: credentials rejected (401)${challenge ? `; challenge: ${challenge}` : ""}`,
				);
				return reply(connection.statusError(401, message.method, challenge));
			}
			if (upstream.status === 404 && session.sessionId !== null) {
				deadline.clear();
				await upstream.body?.cancel();
				this.host.breaker.success(member.name);
				await this.host.retire(member, session);
				if (attempt === 1 && (await this.mayRepeat(member, message))) continue;
				return reply(mayHaveRun(member, message, "its upstream session had expired"));
			}
			if (!upstream.ok || !upstream.body) {
				deadline.clear();
				await upstream.body?.cancel();
				return reply(connection.statusError(upstream.status, message.method));
			}
			this.host.breaker.success(member.name);
			return this.relay(member, connection, session, message, upstream, deadline, cancelled, done);
		}
	}

	/** Forwards a notification or a response: 202 once the upstream accepted it. */
	async notify(member: Member, message: JSONRPCMessage): Promise<Response> {
		// An answer to a request the gateway asked on a 2026-07-28 upstream's behalf stays here.
		if (this.answers.answer(message)) return new Response(null, { status: 202 });
		if ("method" in message && message.method === "notifications/cancelled") {
			const requestId = (message.params as { requestId?: RequestId } | undefined)?.requestId;
			const running = requestId === undefined ? undefined : this.running.get(requestId);
			try {
				return await this.send(member, message);
			} finally {
				// The upstream has been told; stop waiting for a reply that will not come.
				running?.abort();
			}
		}
		return this.send(member, message);
	}

	private async send(member: Member, message: JSONRPCMessage): Promise<Response> {
		const connection = this.host.connection(member);
		const session = await this.host.session(member);
		const deadline = connection.startCallDeadline();
		try {
			const upstream = await connection.post(session, normalizeOutgoing(message), deadline);
			await upstream.body?.cancel();
			if (upstream.ok) return new Response(null, { status: 202 });
			if (upstream.status === 404 && session.sessionId !== null) await this.host.retire(member, session);
			throw connection.statusError(upstream.status, "a forwarded message");
		} finally {
			deadline.clear();
		}
	}

	/** Streams the upstream's reply to the client, ending it exactly when it breaks off. */
	private async relay(
		member: Member,
		connection: UpstreamConnection,
		session: UpstreamSession,
		message: JSONRPCRequest,
		upstream: Response,
		deadline: Deadline,
		cancelled: AbortSignal,
		done: () => void,
	): Promise<Response> {
		const finish = () => {
			deadline.clear();
			done();
		};
		const cap = connection.maxReplyBytes;
		const route = this.host.replyRoute(member, message);
		const failed = (error: unknown): JSONRPCMessage | null => {
			if (cancelled.aborted) {
				// The client cancelled: per the spec it expects no response. The session ended: say so.
				return cancelled.reason instanceof SessionEnded
					? failureReply(message.method, message.id, cancelledError(cancelled))
					: null;
			}
			if (deadline.signal.aborted) {
				this.cancelUpstream(connection, session, message);
				return failureReply(message.method, message.id, connection.midStreamError(error, true));
			}
			this.host.breaker.failure(member.name);
			const what = error === null ? "it closed the reply before answering" : "the connection broke before it answered";
			return failureReply(message.method, message.id, mayHaveRun(member, message, what));
		};
		// The reply gave the client an event id: ending before the response is how the upstream
		// polls (SEP-1699), and the client resumes from it with GET and Last-Event-ID. Only the
		// gateway's own reasons (deadline, session end) still end such a reply with an error.
		const resumable = (error: unknown): JSONRPCMessage | null => {
			if (cancelled.aborted || deadline.signal.aborted) return failed(error);
			if (error !== null) this.host.breaker.failure(member.name);
			return null;
		};
		let reply = upstream;
		if (session.era === "modern") {
			const call = {
				server: member.name,
				message: { ...message },
				send: (retry: JSONRPCRequest) => connection.post(session, retry, deadline),
				answers: this.answers,
				deadline,
				timeoutMs: connection.timeoutMs,
				maxReplyBytes: cap,
				done,
			};
			reply = relayModern(call, upstream);
			// A transparent client gets it as it is; an aggregate reads it like any member's SSE
			// reply, so the member's input requests reach the client under the session's own ids.
			if (!route) return reply;
		}
		const type = reply.headers.get("content-type") ?? "";
		const body = reply.body as ReadableStream<Uint8Array>;
		const sse = type.includes("text/event-stream");
		if (route) {
			const reply = await route.open();
			const task = readMemberReply(body, reply.stream, route, {
				requestId: message.id,
				sse,
				maxBytes: cap,
				failed,
				notAnAnswer: () =>
					failureReply(
						message.method,
						message.id,
						connection.protocolError("a JSON reply that does not answer the request it was sent"),
					),
				tooLarge: () => failureReply(message.method, message.id, tooLarge(member, cap)),
			}).finally(finish);
			route.reading(task, reply.stream);
			return reply.response;
		}
		if (sse) {
			const relayed = relaySse(body, {
				requestId: message.id,
				maxEventBytes: cap,
				onIncomplete: failed,
				onOversize: () => failureReply(message.method, message.id, tooLarge(member, cap)),
				onDone: finish,
				onIncompleteResumable: resumable,
			});
			return new Response(relayed, { headers: { "content-type": "text/event-stream", "cache-control": "no-cache" } });
		}
		const declared = Number(upstream.headers.get("content-length") ?? Number.NaN);
		if (Number.isFinite(declared) && declared > cap) {
			await body.cancel();
			finish();
			return Response.json(failureReply(message.method, message.id, tooLarge(member, cap)));
		}
		if (Number.isFinite(declared)) {
			// A transparent JSON reply of known, allowed size flows through as a stream.
			return new Response(withCompletion(body, finish), {
				status: upstream.status,
				headers: { "content-type": "application/json" },
			});
		}
		try {
			// Read (up to the cap) so that an over-size reply fails cleanly.
			const bytes = await readCapped(body, cap);
			if (bytes === null) return Response.json(failureReply(message.method, message.id, tooLarge(member, cap)));
			return new Response(bytes, { status: upstream.status, headers: { "content-type": "application/json" } });
		} catch (error) {
			return Response.json(failed(error) ?? failureReply(message.method, message.id, cancelledError(cancelled)));
		} finally {
			finish();
		}
	}

	/** Read methods on the allowlist may always be repeated; a tool call only when the tool is listed as read-only. */
	private async mayRepeat(member: Member, message: JSONRPCRequest): Promise<boolean> {
		if (REPEATABLE_METHODS.has(message.method)) return true;
		if (message.method !== "tools/call") return false;
		const name = (message.params as { name?: unknown } | undefined)?.name;
		return typeof name === "string" && (await this.host.isReadOnlyTool(member, name).catch(() => false));
	}

	/** Tells the upstream to stop working on a request the gateway gave up on. Best effort. */
	private cancelUpstream(connection: UpstreamConnection, session: UpstreamSession, message: JSONRPCRequest): void {
		const cancelled: JSONRPCNotification = {
			jsonrpc: "2.0",
			method: "notifications/cancelled",
			params: { requestId: message.id, reason: "The gateway's deadline for this request passed." },
		};
		const deadline = connection.startCallDeadline();
		connection
			.post(session, cancelled, deadline)
			.then((response) => response.body?.cancel())
			.catch((error: unknown) =>
				console.warn(`upstream ${connection.serverName}: cancellation not delivered: ${describeError(error)}`),
			)
			.finally(() => deadline.clear());
	}
}

/** Failures that are an answer, not a transport problem: retrying or backing off would not help. */
function isFinal(error: unknown): boolean {
	return (
		error instanceof GatewayError &&
		(error.kind === "upstream_error" || error.kind === "upstream_auth_required" || error.kind === "misconfigured")
	);
}

function notSent(member: Member, error: unknown): GatewayError {
	if (error instanceof GatewayError && (error.kind === "misconfigured" || error.kind === "upstream_auth_required")) {
		return error;
	}
	return new GatewayError(
		"upstream_unavailable",
		`Upstream server '${member.name}' is unavailable, so the request was not sent: ${describeError(error)}. It is safe to retry later.`,
		{ server: member.name, cause: error },
	);
}

function mayHaveRun(member: Member, message: JSONRPCRequest, what: string): GatewayError {
	if (REPEATABLE_METHODS.has(message.method)) {
		return new GatewayError("upstream_unavailable", `Upstream server '${member.name}' failed: ${what}.`, {
			server: member.name,
		});
	}
	if (message.method !== "tools/call") {
		return new GatewayError(
			"outcome_uncertain",
			`The request ${message.method} to upstream server '${member.name}' may or may not have taken effect: ${what}. It was not repeated, because only reads are. Check before sending it again; the gateway reconnects to '${member.name}' on the next request.`,
			{ server: member.name },
		);
	}
	const tool = String((message.params as { name?: unknown } | undefined)?.name ?? "the tool");
	return new GatewayError(
		"outcome_uncertain",
		`The call to '${tool}' on upstream server '${member.name}' may or may not have taken effect: ${what}. It was not retried, because the tool is not known to be read-only. Check its effect with a read before retrying; the gateway reconnects to '${member.name}' on the next request.`,
		{ server: member.name },
	);
}

function cancelledError(signal: AbortSignal): GatewayError {
	if (signal.reason instanceof SessionEnded) {
		return new GatewayError(
			"session_not_found",
			`The session ended while this request was running (${signal.reason.message}). Initialize a new session.`,
		);
	}
	return new GatewayError("cancelled", "Request cancelled by the client.");
}

function tooLarge(member: Member, limit: number): GatewayError {
	return new GatewayError(
		"reply_too_large",
		`Upstream server '${member.name}' sent a reply larger than ${limit} bytes, which the gateway does not relay.`,
		{ server: member.name },
	);
}
