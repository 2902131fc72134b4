import type { JSONRPCMessage, JSONRPCRequest, RequestId } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { GatewayError } from "../../mcp/gateway-error.ts";
import { sseMessage } from "../../mcp/sse.ts";
import type { Timers } from "../../primitives/clock.ts";
import { randomToken } from "../../primitives/crypto.ts";
import type { Deadline } from "../../upstream/deadline.ts";
import { readUpstreamReply } from "../../upstream/upstream-reply.ts";
import { upstreamFailureOf } from "../../upstream/upstream-status.ts";
import type { RunningCall } from "../running-call.ts";

/** A 2026-07-28 result that needs the client's input before the request can finish (MRTR). */
const InputRequiredSchema = z.looseObject({
	resultType: z.literal("input_required"),
	inputRequests: z
		.record(z.string(), z.object({ method: z.string(), params: z.record(z.string(), z.unknown()).optional() }))
		.optional(),
	requestState: z.string().optional(),
});

/**
 * Answers a 2025 client owes to requests the gateway sent it on behalf of a
 * 2026-07-28 upstream: by the id the gateway minted, each with a deadline.
 */
export class ClientAnswers {
	private readonly waiting = new Map<RequestId, { resolve: (reply: JSONRPCMessage) => void; cancel: () => void }>();

	constructor(private readonly timers: () => Timers) {}

	/** Waits for the answer to `id`; an error reply when none comes within `ms`. */
	expect(id: RequestId, ms: number): Promise<JSONRPCMessage> {
		return new Promise((resolve) => {
			const cancel = this.timers().set(ms, () => {
				this.waiting.delete(id);
				resolve({ jsonrpc: "2.0", id, error: { code: -32001, message: "The client did not answer in time." } });
			});
			this.waiting.set(id, { resolve, cancel });
		});
	}

	/** Takes a client's response when it answers one of these requests (then true). */
	answer(message: JSONRPCMessage): boolean {
		if (!("id" in message) || "method" in message || message.id === undefined) return false;
		const id = message.id;
		const waiting = this.waiting.get(id);
		if (!waiting) return false;
		this.waiting.delete(id);
		waiting.cancel();
		waiting.resolve(message);
		return true;
	}

	/** Ends every wait: the session ended. */
	clear(): void {
		for (const [id, waiting] of this.waiting) {
			waiting.cancel();
			waiting.resolve({ jsonrpc: "2.0", id, error: { code: -32001, message: "The session ended." } });
		}
		this.waiting.clear();
	}
}

export interface ModernCall {
	/** The upstream server, named in failures. */
	server: string;
	message: JSONRPCRequest;
	/** Sends a (retried) request to the upstream. */
	send(message: JSONRPCRequest): Promise<Response>;
	answers: ClientAnswers;
	deadline: Deadline;
	timeoutMs: number;
	maxReplyBytes: number;
	/** The client's request: it ends once the exchange has, however it ended. */
	running: RunningCall;
}

/**
 * A 2025 client's request to a 2026-07-28 upstream. Notifications of the
 * reply go to the client as they come; an `input_required` result becomes
 * real requests to the client on the call's stream (sampling, elicitation,
 * roots, under gateway-minted ids), and once all are answered the request is
 * sent again with `inputResponses` and the upstream's `requestState` echoed
 * byte for byte, until a final result, which reaches the client under its
 * own id.
 */
export function relayModern(call: ModernCall, first: Response): Response {
	const { message } = call;
	const body = new ReadableStream<Uint8Array>({
		start: async (controller) => {
			try {
				let reply = first;
				let expected = message.id;
				for (;;) {
					const final = await readReply(call, reply, expected, (notification) =>
						controller.enqueue(sseMessage(notification)),
					);
					const round = "result" in final ? InputRequiredSchema.safeParse(final.result) : null;
					if (!round?.success) {
						controller.enqueue(sseMessage({ ...final, id: message.id } as JSONRPCMessage));
						break;
					}
					const inputResponses: Record<string, unknown> = {};
					await Promise.all(
						Object.entries(round.data.inputRequests ?? {}).map(async ([key, request]) => {
							const id = `gw-${randomToken(16)}`;
							const answer = call.answers.expect(id, call.timeoutMs);
							controller.enqueue(sseMessage({ jsonrpc: "2.0", id, method: request.method, params: request.params }));
							const answered = await answer;
							if ("result" in answered) inputResponses[key] = answered.result;
						}),
					);
					const params: Record<string, unknown> = { ...message.params, inputResponses };
					if (round.data.requestState !== undefined) params.requestState = round.data.requestState;
					// Each attempt is a request of its own, with an id of its own (2026-07-28 MRTR).
					expected = `${String(message.id)}~${randomToken(6)}`;
					reply = await call.send({ ...message, id: expected, params });
				}
			} catch (error) {
				const failure =
					error instanceof GatewayError
						? error
						: new GatewayError("upstream_error", "The upstream's reply could not be read.");
				controller.enqueue(sseMessage({ jsonrpc: "2.0", id: message.id, error: failure.toJsonRpcError() }));
			} finally {
				call.deadline.clear();
				call.running.end();
				controller.close();
			}
		},
	});
	return new Response(call.running.endsWith(body), {
		headers: { "content-type": "text/event-stream", "cache-control": "no-cache" },
	});
}

/** Reads one reply (JSON or SSE) to its response for `id`; notifications on the way go to `onNotification`. */
async function readReply(
	call: ModernCall,
	response: Response,
	id: RequestId,
	onNotification: (message: JSONRPCMessage) => void,
): Promise<JSONRPCMessage> {
	if (!response.ok || !response.body) {
		throw await upstreamFailureOf(call.server, response, call.message.method, response.headers.get("www-authenticate"));
	}
	const reading = { server: call.server, maxBytes: call.maxReplyBytes, onNotification };
	return (await readUpstreamReply(response, id, reading)).message;
}
