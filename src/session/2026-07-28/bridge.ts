import {
	isJSONRPCRequest,
	type JSONRPCMessage,
	JSONRPCMessageSchema,
	type JSONRPCRequest,
	type RequestId,
} from "@modelcontextprotocol/sdk/types.js";
import { INPUT_RESULT_SCHEMAS } from "../../mcp/2026-07-28/input-results.ts";
import { withoutEnvelope } from "../../mcp/2026-07-28/modern-request.ts";
import { modernReply, requestName } from "../../mcp/2026-07-28/modern-results.ts";
import type { ClientResponse, SessionRequest } from "../../mcp/client-message.ts";
import { describeError, GatewayError } from "../../mcp/gateway-error.ts";
import { isNotification, parseJsonRpcMessage } from "../../mcp/jsonrpc.ts";
import { callArguments } from "../../mcp/message-accessors.ts";
import { PING, TOOLS_CALL } from "../../mcp/methods.ts";
import { SseMessageReader, sseMessage } from "../../mcp/sse.ts";
import { stableJson } from "../../mcp/stable-json.ts";
import { randomToken } from "../../primitives/crypto.ts";
import { isJsonObject } from "../../primitives/json-object.ts";
import { CALL_NOTE_HEADER } from "../../telemetry/tool-call.ts";
import type { SessionMessage } from "../session-rpc.ts";
import type { SessionState } from "../session-state.ts";
import { openRequestState, type RoundOwner, signRequestState } from "./request-state.ts";

/** Where the bridge sends what it takes from a 2026-07-28 client: into its session, as a 2025 client's POST would. */
export interface BridgedSession {
	/** A message into the session under the session's own scope (404 where none is). */
	postAsClient(message: SessionMessage): Promise<Response>;
}

/**
 * A call parked at a peer's request to the client: the reply stream is kept,
 * unread, until the client retries with the answers (or the round is abandoned).
 */
interface Round {
	reader: SseMessageReader;
	/** The id the call went into the session under: its response carries it, the client gets the retry's. */
	callId: RequestId;
	owner: RoundOwner;
	/** Input key → the peer's request, answered under its own id. */
	requests: Map<string, JSONRPCRequest>;
	expiresAt: number;
	cancelTimer: () => void;
}

/** A bridged call's id in the session, and the id of the client request being answered now. */
interface CallIds {
	callId: RequestId;
	clientId: RequestId;
}

/**
 * Serves a 2026-07-28 client from a 2025 session (its upstream, or an
 * aggregate's members, speak 2025). Each request goes into the session with
 * its envelope taken off; the reply comes back with what the modern era
 * requires. A peer's request to the client during a call (elicitation,
 * sampling, roots) ends the client's exchange with an `input_required`
 * result: the call itself stays open here, its reply unread, and the client's
 * retry with `inputResponses` answers the peer and reads on. `requestState`
 * names the round under a MAC that binds it to the key, the endpoint, the
 * method and the name (a call's arguments too), with an expiry; a round is
 * answered once.
 */
export class ModernBridge {
	private readonly rounds = new Map<string, Round>();

	/** The gateway's secret, for the MAC of `requestState`. */
	private readonly secret: string;
	private readonly maxEventBytes: number;
	/** How long a round waits for the client's retry before it is abandoned. */
	private readonly roundTtlMs: number;

	constructor(
		private readonly state: SessionState,
		private readonly session: BridgedSession,
	) {
		this.secret = state.settings.sessionSecret ?? "";
		this.maxEventBytes = state.settings.maxReplyBytes;
		this.roundTtlMs = state.settings.upstreamTimeoutMs;
	}

	/** Rounds waiting for a client's retry (tests). */
	get waiting(): number {
		return this.rounds.size;
	}

	async request(request: SessionRequest, owner: Omit<RoundOwner, "method" | "name">): Promise<Response> {
		const { message } = request;
		const full: RoundOwner = { ...owner, method: message.method, name: requestName(request) };
		if (request.method === TOOLS_CALL) full.arguments = stableJson(callArguments(request));
		const state = message.params?.requestState;
		if (state !== undefined) return this.retry(message, state, full);
		const response = await this.session.postAsClient(withoutEnvelope(request));
		return withNoteOf(response, await this.answer(response, message.id, full));
	}

	/** Ends every round: the session ended. */
	clear(): void {
		for (const [id, round] of this.rounds) {
			this.rounds.delete(id);
			round.cancelTimer();
			void round.reader.cancel();
		}
	}

	/** The session's reply as the modern client's: JSON as it is (made modern), SSE read message by message. */
	private async answer(response: Response, id: RequestId, owner: RoundOwner): Promise<Response> {
		const type = response.headers.get("content-type") ?? "";
		if (type.startsWith("text/event-stream") && response.body) {
			const reader = new SseMessageReader(response.body, this.maxEventBytes, parseJsonRpcMessage);
			return this.stream(reader, { callId: id, clientId: id }, owner);
		}
		if (!type.startsWith("application/json")) return response;
		const parsed = JSONRPCMessageSchema.safeParse(await response.json());
		if (!parsed.success) return response;
		return Response.json(modernReply(owner.method, parsed.data, { uri: owner.name }), { status: response.status });
	}

	/**
	 * The call's events for the client until its response, or until the peer
	 * asks the client something: then the exchange ends with `input_required`
	 * and the reader is parked for the retry. Closing the stream (the client
	 * went away) cancels the call, as 2026-07-28 defines it.
	 */
	private stream(reader: SseMessageReader, ids: CallIds, owner: RoundOwner): Response {
		const id = ids.clientId;
		let parked = false;
		const body = new ReadableStream<Uint8Array>({
			pull: async (controller) => {
				try {
					const frame = await this.nextFrame(reader, ids, owner, () => {
						parked = true;
					});
					if (frame.bytes) controller.enqueue(frame.bytes);
					if (frame.last) controller.close();
				} catch (error) {
					controller.enqueue(sseMessage(failure(id, error)));
					controller.close();
				}
			},
			cancel: () => {
				if (!parked) void reader.cancel();
			},
		});
		return new Response(body, {
			headers: { "content-type": "text/event-stream", "cache-control": "no-cache", "x-accel-buffering": "no" },
		});
	}

	private async nextFrame(
		reader: SseMessageReader,
		ids: CallIds,
		owner: RoundOwner,
		park: () => void,
	): Promise<{ bytes?: Uint8Array; last: boolean }> {
		const id = ids.clientId;
		for (;;) {
			const message = await reader.next();
			if (message === null) {
				const gone = new GatewayError("upstream_error", "The upstream ended its reply without an answer.");
				return { bytes: sseMessage(failure(id, gone)), last: true };
			}
			if (isNotification(message)) return { bytes: sseMessage(message), last: false };
			if (isJSONRPCRequest(message)) {
				// A peer's ping needs no person: the bridge answers it and reads on.
				if (message.method === PING) {
					await this.session.postAsClient({
						kind: "response",
						message: { jsonrpc: "2.0", id: message.id, result: {} },
					});
					continue;
				}
				park();
				const result = await this.openRound(reader, ids.callId, owner, message);
				return { bytes: sseMessage({ jsonrpc: "2.0", id, result }), last: true };
			}
			if ("id" in message && message.id === ids.callId) {
				return { bytes: sseMessage(modernReply(owner.method, { ...message, id }, { uri: owner.name })), last: true };
			}
		}
	}

	private async openRound(
		reader: SseMessageReader,
		callId: RequestId,
		owner: RoundOwner,
		request: JSONRPCRequest,
	): Promise<Record<string, unknown>> {
		const roundId = randomToken(16);
		const expiresAt = this.state.clock.now() + this.roundTtlMs;
		const requests = new Map([["input-1", request]]);
		const cancelTimer = this.state.timers.set(this.roundTtlMs, () => {
			void this.abandon(roundId);
		});
		this.rounds.set(roundId, { reader, callId, owner, requests, expiresAt, cancelTimer });
		return inputRequired(requests, await this.requestState(roundId, expiresAt, owner));
	}

	/**
	 * A retry carrying `requestState`: checked (MAC, owner, expiry, not yet
	 * answered) and its `inputResponses` validated before anything is sent to
	 * the peer, so a refused retry changes nothing.
	 */
	private async retry(message: JSONRPCRequest, state: unknown, owner: RoundOwner): Promise<Response> {
		const refuse = (why: string) =>
			new GatewayError("invalid_params", `Invalid params: ${why}`, { id: message.id }).toRpcResponse(message.id);
		const round = typeof state === "string" ? await this.verify(state, owner) : undefined;
		if (typeof state !== "string" || !round) {
			return refuse(
				"requestState was not issued by this gateway for this request, has expired, or was already answered; send the request again without it.",
			);
		}
		const answers = message.params?.inputResponses;
		if (!isJsonObject(answers)) {
			return refuse("a retry with requestState must carry inputResponses, an object keyed like inputRequests.");
		}
		const missing = new Map([...round.requests].filter(([key]) => answers[key] === undefined));
		if (missing.size > 0) {
			// Per the spec, missing answers are asked for again rather than refused.
			const result = inputRequired(missing, state);
			return Response.json({ jsonrpc: "2.0", id: message.id, result });
		}
		const replies: ClientResponse[] = [];
		for (const [key, request] of round.requests) {
			const answer = answers[key];
			const parsed = INPUT_RESULT_SCHEMAS[request.method]?.safeParse(answer);
			// Sent as the client wrote it: the schema's parse would drop what it does not know.
			if (!parsed?.success || !isJsonObject(answer)) {
				return refuse(`inputResponses.${key} is not a valid ${request.method} result.`);
			}
			replies.push({ kind: "response", message: { jsonrpc: "2.0", id: request.id, result: answer } });
		}
		// Another retry of the same round may have passed every check above while this one awaited
		// them: only the retry that takes the round answers it, so the peer is answered once.
		if (!this.release(stateRoundId(state))) {
			return refuse("this round was already answered by another retry; send the request again without requestState.");
		}
		for (const reply of replies) await this.session.postAsClient(reply);
		return this.stream(round.reader, { callId: round.callId, clientId: message.id }, owner);
	}

	private async requestState(roundId: string, expiresAt: number, owner: RoundOwner): Promise<string> {
		return signRequestState(this.secret, roundId, expiresAt, owner);
	}

	private async verify(state: string, owner: RoundOwner): Promise<Round | undefined> {
		const roundId = await openRequestState(this.secret, state, owner, this.state.clock.now());
		return roundId === null ? undefined : this.rounds.get(roundId);
	}

	private release(roundId: string): Round | undefined {
		const round = this.rounds.get(roundId);
		if (!round) return undefined;
		this.rounds.delete(roundId);
		round.cancelTimer();
		return round;
	}

	/** The client never came back: the peer is told no, and the call's reply is dropped. */
	private async abandon(roundId: string): Promise<void> {
		const round = this.release(roundId);
		if (!round) return;
		console.log(`input round abandoned: ${round.owner.method} ${round.owner.name}: the client did not retry in time`);
		for (const request of round.requests.values()) {
			const error = { code: -32603, message: "The client did not answer this request in time." };
			await this.session
				.postAsClient({ kind: "response", message: { jsonrpc: "2.0", id: request.id, error } })
				.catch((failed: unknown) => {
					// The peer's request then ends with its own timeout or the upstream session: nothing to retry.
					console.warn(
						`input round abandoned on ${round.owner.endpoint}: telling the upstream that the client did not answer its ${request.method} failed: ${describeError(failed)}`,
					);
				});
		}
		await round.reader.cancel();
	}
}

function inputRequired(requests: Map<string, JSONRPCRequest>, requestState: string): Record<string, unknown> {
	const inputRequests = Object.fromEntries(
		[...requests].map(([key, request]) => [key, { method: request.method, params: request.params ?? {} }]),
	);
	return { resultType: "input_required", inputRequests, requestState };
}

function stateRoundId(state: string): string {
	return state.split(".")[0] ?? "";
}

function failure(id: RequestId, error: unknown): JSONRPCMessage {
	const gatewayError =
		error instanceof GatewayError ? error : new GatewayError("upstream_error", "The reply could not be read.");
	return { jsonrpc: "2.0", id, error: gatewayError.toJsonRpcError() };
}

/** The session's note on a call (see CALL_NOTE_HEADER) kept on the modern reply made of it, for the edge to read. */
function withNoteOf(session: Response, modern: Response): Response {
	const note = session.headers.get(CALL_NOTE_HEADER);
	if (note === null || modern.headers.get(CALL_NOTE_HEADER) === note) return modern;
	const headers = new Headers(modern.headers);
	headers.set(CALL_NOTE_HEADER, note);
	return new Response(modern.body, { status: modern.status, statusText: modern.statusText, headers });
}
