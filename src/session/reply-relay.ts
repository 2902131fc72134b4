import type { JSONRPCMessage, JSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";
import type { SessionRequest } from "../mcp/client-message.ts";
import { failureReply } from "../mcp/failure-reply.ts";
import { readCapped } from "../mcp/read-capped.ts";
import { relaySse } from "../mcp/sse-relay.ts";
import type { Deadline } from "../upstream/deadline.ts";
import type { UpstreamConnection, UpstreamSession } from "../upstream/upstream-connection.ts";
import { type ClientAnswers, type ModernCall, relayModern } from "./2026-07-28/rounds.ts";
import type { Breaker } from "./aggregate/breaker.ts";
import { type ReplyRoute, readMemberReply } from "./aggregate/member-reply.ts";
import type { Member } from "./binding.ts";
import { attempted, cancelledError, mayHaveRun, SessionEnded, tooLarge, whatLost } from "./call-failures.ts";
import type { RunningCall } from "./running-call.ts";
import { withCompletion } from "./streams/stream-completion.ts";

/** A forwarded request the upstream answered with a body: what relaying that reply needs. */
export interface AnsweredCall {
	readonly member: Member;
	readonly connection: UpstreamConnection;
	readonly session: UpstreamSession;
	/** The request as the decision let it go (a tool call under the upstream's own name). */
	readonly request: SessionRequest;
	/** That request as it was sent (`normalizeOutgoing`). */
	readonly message: JSONRPCRequest;
	/** The call's deadline, still running while its reply is read. */
	readonly deadline: Deadline;
	/** Aborted when the client cancels the request or the session ends. */
	readonly cancelled: AbortSignal;
	/** The client's request this reply answers: it ends when the reply has (hooked below, where the reply is read). */
	readonly running: RunningCall;
	/** How an aggregate member's reply reaches the client; undefined: a transparent reply, passed on. */
	readonly route: ReplyRoute | undefined;
	readonly reply: Response;
	readonly body: ReadableStream<Uint8Array>;
}

/** What relaying needs from the calls it relays for. */
export interface RelayHost {
	readonly breaker: Breaker;
	readonly answers: ClientAnswers;
	/** Tells the upstream to stop working on a request the gateway gave up on. */
	cancelUpstream(call: AnsweredCall): void;
}

/** The four ways a reply reaches the client, decided once per reply. */
export type ReplyMode =
	/** A 2026-07-28 upstream on a transparent endpoint: the bridge's rounds are the client's reply. */
	| { kind: "bridged" }
	/** An aggregate member (its reply the bridge's for a 2026-07-28 upstream): read onto a stream of the session's. */
	| { kind: "member"; route: ReplyRoute; bridged: boolean }
	/** A transparent SSE reply: passed on event by event, as the upstream wrote it. */
	| { kind: "sse" }
	/** A transparent JSON reply: streamed when its size is declared, else read under the cap. */
	| { kind: "json" };

const SSE_HEADERS = { "content-type": "text/event-stream", "cache-control": "no-cache" } as const;
const JSON_HEADERS = { "content-type": "application/json" } as const;

/** How this call's reply reaches the client. */
export function replyMode(call: AnsweredCall, route: ReplyRoute | undefined): ReplyMode {
	const bridged = call.session.era === "modern";
	if (route) return { kind: "member", route, bridged };
	if (bridged) return { kind: "bridged" };
	return isEventStream(call.reply) ? { kind: "sse" } : { kind: "json" };
}

/** Streams the upstream's reply to the client, ending it exactly when it breaks off. */
export async function relayReply(host: RelayHost, call: AnsweredCall): Promise<Response> {
	const mode = replyMode(call, call.route);
	switch (mode.kind) {
		case "bridged":
			return relayModern(modernCall(host, call), call.reply);
		case "member":
			// A member's 2026-07-28 reply is read like any member's SSE reply, so its input
			// requests reach the client under the session's own ids.
			return readForMember(
				host,
				call,
				mode.bridged ? relayModern(modernCall(host, call), call.reply) : call.reply,
				mode.route,
			);
		case "sse":
			return relayEvents(host, call);
		case "json":
			return relayJson(host, call);
	}
}

/** Reads a member's reply onto a stream of the session's own, which is what the client gets. */
async function readForMember(
	host: RelayHost,
	call: AnsweredCall,
	reply: Response,
	route: ReplyRoute,
): Promise<Response> {
	const { message, connection } = call;
	const cap = connection.maxReplyBytes;
	const body = reply.body ?? emptyBody();
	const sse = isEventStream(reply);
	const opened = await route.open();
	// The call ends when the member's reply has been read (below), whether or not the client still reads its stream.
	call.running.endsWith(opened.response.body);
	const task = readMemberReply(body, opened.stream, route, {
		requestId: message.id,
		sse,
		maxBytes: cap,
		failed: (error) => brokenOff(host, call, error),
		notAnAnswer: () =>
			failureReply(
				message.method,
				message.id,
				connection.protocolError("a JSON reply that does not answer the request it was sent"),
			),
		tooLarge: () => tooLargeReply(call),
	}).finally(() => finish(call));
	route.reading(task, opened.stream);
	return opened.response;
}

/** A transparent SSE reply, passed on as it arrives. */
function relayEvents(host: RelayHost, call: AnsweredCall): Response {
	const relayed = relaySse(call.body, {
		requestId: call.message.id,
		maxEventBytes: call.connection.maxReplyBytes,
		onIncomplete: (error) => brokenOff(host, call, error),
		onOversize: () => tooLargeReply(call),
		onDone: () => finish(call),
		onIncompleteResumable: (error) => brokenOffResumable(host, call, error),
	});
	return new Response(call.running.endsWith(relayed), { headers: SSE_HEADERS });
}

/** A transparent JSON reply: over the cap is an error, a declared size flows through, an undeclared one is read. */
async function relayJson(host: RelayHost, call: AnsweredCall): Promise<Response> {
	const { reply, body, message } = call;
	const cap = call.connection.maxReplyBytes;
	const declared = Number(reply.headers.get("content-length") ?? Number.NaN);
	if (Number.isFinite(declared) && declared > cap) {
		await body.cancel();
		finish(call);
		return Response.json(tooLargeReply(call));
	}
	if (Number.isFinite(declared)) {
		// A transparent JSON reply of known, allowed size flows through as a stream.
		return new Response(call.running.endsWith(withCompletion(body, () => finish(call))), {
			status: reply.status,
			headers: JSON_HEADERS,
		});
	}
	try {
		// Read (up to the cap) so that an over-size reply fails cleanly.
		const bytes = await readCapped(body, cap);
		if (bytes === null) return Response.json(tooLargeReply(call));
		return new Response(bytes, { status: reply.status, headers: JSON_HEADERS });
	} catch (error) {
		return Response.json(
			brokenOff(host, call, error) ?? failureReply(message.method, message.id, cancelledError(call.cancelled)),
		);
	} finally {
		finish(call);
	}
}

/** The call as the 2026-07-28 bridge runs its rounds. */
function modernCall(host: RelayHost, call: AnsweredCall): ModernCall {
	const { connection, session, deadline } = call;
	return {
		server: call.member.name,
		message: { ...call.message },
		send: (retry) => connection.post(session, retry, deadline),
		answers: host.answers,
		deadline,
		timeoutMs: connection.timeoutMs,
		maxReplyBytes: connection.maxReplyBytes,
		running: call.running,
	};
}

/**
 * The message that ends a reply which ended (`error` null) or broke off before
 * its response; null sends nothing (the client cancelled: per the spec it
 * expects no response).
 */
function brokenOff(host: RelayHost, call: AnsweredCall, error: unknown): JSONRPCMessage | null {
	const { member, message, cancelled, deadline } = call;
	if (cancelled.aborted) {
		// The session ended: say so.
		return cancelled.reason instanceof SessionEnded
			? failureReply(message.method, message.id, cancelledError(cancelled))
			: null;
	}
	if (deadline.signal.aborted) {
		host.cancelUpstream(call);
		return failureReply(message.method, message.id, call.connection.midStreamError(error, true));
	}
	host.breaker.failure(member.name);
	const what =
		error === null
			? "it closed the reply before answering"
			: whatLost(error, "the connection broke before it answered");
	return failureReply(message.method, message.id, mayHaveRun(member, attempted(call.request), what));
}

/**
 * The reply gave the client an event id: ending before the response is how the
 * upstream polls (SEP-1699), and the client resumes from it with GET and
 * Last-Event-ID. Only the gateway's own reasons (deadline, session end) still
 * end such a reply with an error.
 */
function brokenOffResumable(host: RelayHost, call: AnsweredCall, error: unknown): JSONRPCMessage | null {
	if (call.cancelled.aborted || call.deadline.signal.aborted) return brokenOff(host, call, error);
	if (error !== null) host.breaker.failure(call.member.name);
	return null;
}

function tooLargeReply(call: AnsweredCall): JSONRPCMessage {
	return failureReply(call.message.method, call.message.id, tooLarge(call.member, call.connection.maxReplyBytes));
}

/** The reply is over: its deadline stops, and the call ends. */
function finish(call: AnsweredCall): void {
	call.deadline.clear();
	call.running.end();
}

function isEventStream(response: Response): boolean {
	return (response.headers.get("content-type") ?? "").includes("text/event-stream");
}

function emptyBody(): ReadableStream<Uint8Array> {
	return new ReadableStream<Uint8Array>({ start: (controller) => controller.close() });
}
