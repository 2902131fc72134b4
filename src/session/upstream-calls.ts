import type {
	JSONRPCMessage,
	JSONRPCNotification,
	JSONRPCRequest,
	RequestId,
} from "@modelcontextprotocol/sdk/types.js";
import { notApproved } from "../governance/call-approval.ts";
import { callNoteOf, decideCallFor } from "../governance/decision-inputs.ts";
import { guardedReply } from "../governance/guards/guarded-call.ts";
import type { ClientNotification, ClientResponse, SessionRequest } from "../mcp/client-message.ts";
import { failureReply } from "../mcp/failure-reply.ts";
import { describeError, GatewayError } from "../mcp/gateway-error.ts";
import { callArguments } from "../mcp/message-accessors.ts";
import { NOTIFICATIONS_CANCELLED, TOOLS_CALL } from "../mcp/methods.ts";
import { normalizeOutgoing } from "../mcp/outgoing.ts";
import { REPEATABLE_METHODS } from "../mcp/repeatable-methods.ts";
import { withCallNote } from "../telemetry/tool-call.ts";
import type { Deadline } from "../upstream/deadline.ts";
import type { UpstreamConnection, UpstreamSession } from "../upstream/upstream-connection.ts";
import { ClientAnswers } from "./2026-07-28/rounds.ts";
import type { Breaker } from "./aggregate/breaker.ts";
import type { ReplyRoute } from "./aggregate/member-reply.ts";
import type { MemberSessions } from "./aggregate/member-sessions.ts";
import { SessionApprovals } from "./approvals.ts";
import type { Member } from "./binding.ts";
import {
	attempted,
	callerRefused,
	cancelledError,
	isFinal,
	mayHaveRun,
	notSent,
	paused,
	SessionEnded,
	whatLost,
} from "./call-failures.ts";
import { sendOnceConfirmed } from "./confirmed-call.ts";
import { type AnsweredCall, type RelayHost, relayReply } from "./reply-relay.ts";
import type { RunningCall } from "./running-call.ts";
import type { SessionDecisions } from "./session-decisions.ts";
import type { SessionState } from "./session-state.ts";
import type { UpstreamPool } from "./upstream-pool.ts";

/**
 * A request on its way to a member: what every try of it carries.
 */
type Sending = Pick<AnsweredCall, "member" | "request" | "message" | "cancelled" | "running" | "route">;

/** What one try of a request came to. */
type Tried =
	/** The upstream answered with a body: its reply is relayed (see reply-relay.ts). */
	| { kind: "answered"; call: AnsweredCall }
	/** This failure is the answer. */
	| { kind: "failed"; error: GatewayError }
	/** Certainly not sent: the request may be tried once more, else this failure is the answer. */
	| { kind: "not-sent"; error: GatewayError }
	/** It may have reached the upstream: tried once more only when repeating it changes nothing. */
	| { kind: "may-have-run"; error: GatewayError };

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
	/** Calls held as tasks, by request id: how long each may run upstream (see `extendDeadline`). */
	private readonly longer = new Map<RequestId, number>();
	/** The client's answers to what 2026-07-28 upstreams asked it during calls (see relayModern). */
	readonly answers: ClientAnswers;
	/** Calls an `approve` policy holds, waiting for an approver (decision 0117). */
	readonly approvals: SessionApprovals;
	private readonly relaying: RelayHost;

	constructor(
		private readonly state: SessionState,
		private readonly pool: UpstreamPool,
		private readonly members: MemberSessions,
		private readonly breaker: Breaker,
		/** What the governance decision on a request reads in this session (see decision-inputs.ts). */
		private readonly decisions: SessionDecisions,
	) {
		this.answers = new ClientAnswers(() => state.timers);
		this.approvals = new SessionApprovals(state);
		this.relaying = {
			breaker,
			answers: this.answers,
			cancelUpstream: (call) => this.cancelUpstream(call.connection, call.session, call.message),
		};
	}

	/**
	 * Forwards a request of `call`, which ends once its reply has (see
	 * RunningCall); `route`: how an aggregate member's reply reaches the
	 * client (none: a transparent reply passes on as it came). A tool call's
	 * reply carries the object's note on it for the edge's accounting (see
	 * CALL_NOTE_HEADER), which the edge takes off.
	 */
	async request(member: Member, original: SessionRequest, call: RunningCall, route?: ReplyRoute): Promise<Response> {
		const { method, id } = original.message;
		// The governance decision: refused before anything is sent, or sent, a tool call under the upstream's own name.
		const decision = await decideCallFor(this.decisions, member, original);
		const note = callNoteOf(member, decision);
		if ("refused" in decision) {
			return withCallNote(call.answered(decision.refused.toRpcResponse(id)), method, note);
		}
		const { send, confirm, approve } = decision;
		const { responseGuards: guards = [], responseRun } = decision;
		const forwarded = async (): Promise<Response> => {
			const reply = await this.forward(member, send, call, route);
			if (guards.length === 0 || responseRun === undefined) return reply;
			// The response-stage guards read the reply on its way out; its end still ends the call (see RunningCall).
			const maxBytes = this.pool.connection(member).maxReplyBytes;
			const guarded = await guardedReply(reply, { id, method }, guards, maxBytes, responseRun);
			return call.carriedOn(reply, guarded);
		};
		if (approve !== undefined && original.method === TOOLS_CALL) {
			// An `approve` policy holds the call: sent once, and only if an approver approves it in time.
			const principal = this.decisions.asker().principal.id;
			const outcome = await this.approvals.wait(id, approve, callArguments(original), principal);
			if (outcome.decision !== "approve") {
				return withCallNote(
					call.answered(notApproved(approve, outcome, this.decisions.telemetry).toRpcResponse(id)),
					method,
					note,
				);
			}
			return withCallNote(await forwarded(), method, note);
		}
		if (confirm !== undefined && original.method === TOOLS_CALL) {
			// A `confirm` policy holds the call: nothing is sent until the caller confirms it.
			const held = {
				confirmation: confirm,
				message: original.message,
				arguments: callArguments(original),
				clientCapabilities: this.state.binding?.clientCapabilities,
				answers: this.answers,
				waitMs: this.pool.connection(member).timeoutMs,
				running: call,
				telemetry: this.decisions.telemetry,
			};
			return withCallNote(sendOnceConfirmed(held, forwarded), method, note);
		}
		return withCallNote(await forwarded(), method, note);
	}

	private forward(member: Member, request: SessionRequest, call: RunningCall, route?: ReplyRoute): Promise<Response> {
		const message = normalizeOutgoing(request.message);
		const cancelled = new AbortController();
		this.running.set(message.id, cancelled);
		call.onEnd(() => {
			if (this.running.get(message.id) === cancelled) this.running.delete(message.id);
		});
		return this.attempt({ member, request, message, cancelled: cancelled.signal, running: call, route });
	}

	/**
	 * Lets the request `id` run up to `ms` upstream, reply included, however
	 * short the server's call timeout: a call held as a task runs as long as
	 * its task may (its ttl), since no client waits on an open response. The
	 * returned function ends the extension.
	 */
	extendDeadline(id: RequestId, ms: number): () => void {
		this.longer.set(id, ms);
		return () => {
			if (this.longer.get(id) === ms) this.longer.delete(id);
		};
	}

	/** Ends every running request: the session ended (`reason` says why) and their replies are not wanted. */
	abortAll(reason: string): void {
		for (const running of this.running.values()) running.abort(new SessionEnded(reason));
		this.running.clear();
		this.answers.clear();
	}

	/**
	 * Tries the request, and once more when that cannot change anything: any
	 * request that certainly was not sent, and one that may have been only when
	 * repeating it is harmless (see `mayRepeat`).
	 */
	private async attempt(sending: Sending): Promise<Response> {
		const { member, request, message, running } = sending;
		const connection = this.pool.connection(member);
		for (let attempt = 1; ; attempt++) {
			const tried = await this.tryOnce(sending, connection);
			if (tried.kind === "answered") return relayReply(this.relaying, tried.call);
			const again =
				attempt === 1 &&
				(tried.kind === "not-sent" || (tried.kind === "may-have-run" && (await this.mayRepeat(member, request))));
			if (!again) {
				const capabilities = this.state.binding?.clientCapabilities;
				return running.answered(Response.json(failureReply(message.method, message.id, tried.error, capabilities)));
			}
		}
	}

	/** One try: an upstream session, the request sent, and what the upstream's answer means. */
	private async tryOnce(sending: Sending, connection: UpstreamConnection): Promise<Tried> {
		const { member, request, message, cancelled } = sending;
		const pausedFor = this.breaker.openFor(member.name);
		if (pausedFor > 0) return { kind: "failed", error: paused(member, pausedFor) };
		let session: UpstreamSession;
		try {
			session = await this.members.session(member);
		} catch (error) {
			// Nothing was sent: any request may be tried once more, unless the failure is an answer.
			return { kind: isFinal(error) ? "failed" : "not-sent", error: notSent(member, error) };
		}
		const longer = this.longer.get(message.id);
		const deadline = connection.startCallDeadline(
			cancelled,
			longer === undefined ? undefined : Math.max(longer, connection.timeoutMs),
		);
		let reply: Response;
		try {
			reply = await connection.post(session, message, deadline);
		} catch (error) {
			deadline.clear();
			return this.sendFailed(member, connection, session, request, cancelled, error);
		}
		return this.answerOf({ ...sending, connection, session, deadline }, reply);
	}

	/** What a send that threw means: the client's or the deadline's abort, an answer, or a broken connection. */
	private sendFailed(
		member: Member,
		connection: UpstreamConnection,
		session: UpstreamSession,
		request: SessionRequest,
		cancelled: AbortSignal,
		error: unknown,
	): Tried {
		if (cancelled.aborted) return { kind: "failed", error: cancelledError(cancelled) };
		if (error instanceof GatewayError && error.kind === "upstream_timeout") {
			this.cancelUpstream(connection, session, request.message);
			return { kind: "failed", error };
		}
		// The upstream answered, but not as MCP (a redirect): nothing to retry or back off from.
		if (isFinal(error)) return { kind: "failed", error };
		this.breaker.failure(member.name);
		return {
			kind: "may-have-run",
			error: mayHaveRun(
				member,
				attempted(request),
				whatLost(error, "the connection failed after the request was sent"),
			),
		};
	}

	/** What the upstream's HTTP answer means: a reply to relay, refused credentials, an expired session, or an error status. */
	private async answerOf(call: Omit<AnsweredCall, "reply" | "body">, reply: Response): Promise<Tried> {
		const { member, connection, session, message, request } = call;
		const body = reply.body;
		if (reply.status === 401) {
			await this.discard(call, reply);
			// Credentials were refused; the upstream session itself is fine and is kept.
			this.breaker.success(member.name);
			const challenge = reply.headers.get("www-authenticate");
			console.warn(
				`upstream ${member.name}: credentials rejected (401)${challenge ? `; challenge: ${challenge}` : ""}`,
			);
			const operator = (member.auth?.type ?? "operator") === "operator";
			return {
				kind: "failed",
				error: operator ? connection.statusError(401, message.method, challenge) : callerRefused(member, message),
			};
		}
		if (reply.status === 404 && session.sessionId !== null) {
			await this.discard(call, reply);
			this.breaker.success(member.name);
			await this.members.retire(member, session);
			return {
				kind: "may-have-run",
				error: mayHaveRun(member, attempted(request), "its upstream session had expired"),
			};
		}
		if (!reply.ok || !body) {
			call.deadline.clear();
			return { kind: "failed", error: await connection.failureOf(reply, message.method) };
		}
		this.breaker.success(member.name);
		return { kind: "answered", call: { ...call, reply, body } };
	}

	/** An answer that is not relayed: its deadline stops and its body is not read. */
	private async discard(call: { deadline: Deadline }, reply: Response): Promise<void> {
		call.deadline.clear();
		await reply.body?.cancel();
	}

	/** Forwards a notification or a response: 202 once the upstream accepted it. */
	async notify(member: Member, client: ClientNotification | ClientResponse): Promise<Response> {
		const { message } = client;
		// An answer to a request the gateway asked on a 2026-07-28 upstream's behalf stays here.
		if (this.answers.answer(message)) return new Response(null, { status: 202 });
		if (client.kind === "notification" && client.method === NOTIFICATIONS_CANCELLED) {
			const { requestId } = client.message.params;
			const running = requestId === undefined ? undefined : this.running.get(requestId);
			// A call still waiting for an approver is never sent now.
			if (requestId !== undefined) this.approvals.cancel(requestId);
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
		const connection = this.pool.connection(member);
		const session = await this.members.session(member);
		const deadline = connection.startCallDeadline();
		try {
			const upstream = await connection.post(session, normalizeOutgoing(message), deadline);
			await upstream.body?.cancel();
			if (upstream.ok) return new Response(null, { status: 202 });
			if (upstream.status === 404 && session.sessionId !== null) await this.members.retire(member, session);
			throw connection.statusError(upstream.status, "a forwarded message");
		} finally {
			deadline.clear();
		}
	}

	/** Read methods on the allowlist may always be repeated; a tool call only when the tool is listed as read-only. */
	private async mayRepeat(member: Member, request: SessionRequest): Promise<boolean> {
		if (REPEATABLE_METHODS.has(request.message.method)) return true;
		if (request.method !== TOOLS_CALL) return false;
		return this.decisions.isReadOnlyTool(member, request.message.params.name).catch(() => false);
	}

	/** Tells the upstream to stop working on a request the gateway gave up on. Best effort. */
	private cancelUpstream(connection: UpstreamConnection, session: UpstreamSession, message: JSONRPCRequest): void {
		const cancelled: JSONRPCNotification = {
			jsonrpc: "2.0",
			method: NOTIFICATIONS_CANCELLED,
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
