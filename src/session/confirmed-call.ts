import {
	type JSONRPCMessage,
	JSONRPCMessageSchema,
	type JSONRPCRequest,
	type RequestId,
} from "@modelcontextprotocol/sdk/types.js";
import {
	acceptsFormElicitation,
	cannotConfirm,
	confirmationRequest,
	isConfirmed,
	notConfirmed,
} from "../governance/call-confirmation.ts";
import type { Confirmation } from "../governance/decision.ts";
import { failureReply } from "../mcp/failure-reply.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import { ELICITATION_CREATE } from "../mcp/methods.ts";
import { SSE_HEADERS, sseMessage } from "../mcp/sse.ts";
import { randomToken } from "../primitives/crypto.ts";
import { GATEWAY_ATTRIBUTES, instrumentsOf, type RefusalKind } from "../telemetry/instruments.ts";
import type { Telemetry } from "../telemetry/telemetry.ts";
import type { RunningCall } from "./running-call.ts";

/** Where the client's answer to a request the session sent it arrives (the calls' `ClientAnswers`). */
export interface AnswerWaits {
	/** Waits for the answer to `id`; an error reply when none comes within `ms`. */
	expect(id: RequestId, ms: number): Promise<JSONRPCMessage>;
}

/** A call a `confirm` policy holds, and what asking its caller needs. */
export interface HeldForConfirmation {
	confirmation: Confirmation;
	/** The client's request, as it came. */
	message: JSONRPCRequest;
	/** Its arguments, as the policies saw them. */
	arguments: Readonly<Record<string, unknown>> | undefined;
	clientCapabilities: Record<string, unknown> | undefined;
	answers: AnswerWaits;
	/** How long the caller has to answer; no answer refuses the call. */
	waitMs: number;
	running: RunningCall;
	/** Where a refusal is counted (`mcp_gateway.refusals`), as a policy's deny is. */
	telemetry: Telemetry;
}

/**
 * A call sent only once its caller confirms it (decision 0110): the form
 * elicitation goes to the client on the call's own stream, and only an
 * accepting answer sends the call (`send`, once), whose reply then follows on
 * the same stream. Anything else, a client gone before it answered included,
 * refuses the call and nothing reaches the upstream. A client that declared
 * no form elicitation is refused at once, with a sentence saying a
 * confirmation was required. A 2026-07-28 client gets the same question as
 * `input_required` from the bridge, which reads this stream as a 2025 client's.
 */
export function sendOnceConfirmed(held: HeldForConfirmation, send: () => Promise<Response>): Response {
	const { confirmation, message, running } = held;
	if (!acceptsFormElicitation(held.clientCapabilities)) {
		countRefusal(held.telemetry, "confirm_unavailable");
		return running.answered(Response.json(refusalOf(message.id, cannotConfirm(confirmation))));
	}
	let gone = false;
	let inner: ReadableStreamDefaultReader<Uint8Array> | null = null;
	const body = new ReadableStream<Uint8Array>({
		start: async (controller) => {
			try {
				const id = `gw-${randomToken(16)}`;
				const answer = held.answers.expect(id, held.waitMs);
				const params = confirmationRequest(confirmation, held.arguments);
				controller.enqueue(sseMessage({ jsonrpc: "2.0", id, method: ELICITATION_CREATE, params }));
				const answered = await answer;
				if (gone) return;
				if (!("result" in answered) || !isConfirmed(answered.result)) {
					countRefusal(held.telemetry, "confirm_declined");
					controller.enqueue(sseMessage(refusalOf(message.id, notConfirmed(confirmation))));
					return;
				}
				const reply = await send();
				if (gone) {
					await reply.body?.cancel();
					return;
				}
				await carryOn(reply, controller, (reader) => {
					inner = reader;
				});
			} catch (error) {
				if (gone) return;
				const failure =
					error instanceof GatewayError
						? error
						: new GatewayError("upstream_error", "The call could not be completed after it was confirmed.");
				controller.enqueue(sseMessage(failureReply(message.method, message.id, failure, held.clientCapabilities)));
			} finally {
				running.end();
				if (!gone) controller.close();
			}
		},
		cancel: async () => {
			gone = true;
			running.end();
			await inner?.cancel();
		},
	});
	return new Response(running.endsWith(body), { headers: SSE_HEADERS });
}

/**
 * The confirmed call's reply onto the stream: an event stream byte for byte
 * (`reading` is given its reader, which a client gone cancels), a JSON reply
 * as one event.
 */
async function carryOn(
	reply: Response,
	controller: ReadableStreamDefaultController<Uint8Array>,
	reading: (reader: ReadableStreamDefaultReader<Uint8Array>) => void,
): Promise<void> {
	const type = reply.headers.get("content-type") ?? "";
	if (!reply.body) throw new GatewayError("upstream_error", "The confirmed call ended without a reply.");
	if (!type.startsWith("text/event-stream")) {
		const parsed = JSONRPCMessageSchema.safeParse(await reply.json());
		if (!parsed.success) throw new GatewayError("upstream_error", "The confirmed call's reply could not be read.");
		controller.enqueue(sseMessage(parsed.data));
		return;
	}
	const reader = reply.body.getReader();
	reading(reader);
	for (;;) {
		const { done, value } = await reader.read();
		if (done) return;
		controller.enqueue(value);
	}
}

/**
 * A refused confirmation counted in `mcp_gateway.refusals`: the session's next flush exports it.
 * A client gone before it answered is not counted: it was refused nothing, it left.
 */
function countRefusal(telemetry: Telemetry, kind: Extract<RefusalKind, `confirm_${string}`>): void {
	instrumentsOf(telemetry).refusals.add(1, { [GATEWAY_ATTRIBUTES.refusalKind]: kind });
}

function refusalOf(id: RequestId, error: GatewayError): JSONRPCMessage {
	return { jsonrpc: "2.0", id, error: error.toJsonRpcError() };
}
