import type { ElicitRequest } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { GatewayError } from "../mcp/gateway-error.ts";
import { stableJson } from "../mcp/stable-json.ts";
import type { Confirmation } from "./decision.ts";

/**
 * What the caller is asked when a `confirm` policy holds a call (decision
 * 0110), and what their answer means: a form elicitation naming the tool, the
 * server and the arguments, with one boolean field. Only an `accept` whose
 * field is true sends the call; anything else (decline, cancel, false, no
 * answer) refuses it. The session asks it on the call's own stream; a
 * 2026-07-28 client gets it as `input_required` from the bridge.
 */

/** Longest summary of a call's arguments the question shows: enough to recognise the call, bounded for any client's dialog. */
export const MAX_SUMMARY_CHARS = 1_024;

/** The form's one field: true sends the call. */
export const CONFIRM_FIELD = "confirm";

/** The arguments as stable JSON (keys sorted), cut to MAX_SUMMARY_CHARS with an ellipsis. */
export function argumentSummary(args: Readonly<Record<string, unknown>> | undefined): string {
	const text = stableJson(args ?? {});
	if (text.length <= MAX_SUMMARY_CHARS) return text;
	let end = MAX_SUMMARY_CHARS - 1;
	// Never half a surrogate pair: the summary stays valid text.
	const last = text.charCodeAt(end - 1);
	if (last >= 0xd800 && last <= 0xdbff) end--;
	return `${text.slice(0, end)}…`;
}

/** The form elicitation that asks the caller to confirm the call. */
export function confirmationRequest(
	confirmation: Confirmation,
	args: Readonly<Record<string, unknown>> | undefined,
): ElicitRequest["params"] {
	return {
		mode: "form",
		message: `Confirm the call of tool '${confirmation.tool}' on server '${confirmation.server}' with arguments ${argumentSummary(args)}. The gateway's policy '${confirmation.policy}' asks for your confirmation before the call is sent.`,
		requestedSchema: {
			type: "object",
			properties: {
				[CONFIRM_FIELD]: {
					type: "boolean",
					title: "Send this call",
					description: `Send the call of '${confirmation.tool}' to '${confirmation.server}'.`,
					default: false,
				},
			},
			required: [CONFIRM_FIELD],
		},
	};
}

const ConfirmedSchema = z.object({
	action: z.literal("accept"),
	content: z.object({ [CONFIRM_FIELD]: z.literal(true) }).loose(),
});

/** Whether the client's answer (an elicitation result, or anything else it sent) confirms the call. */
export function isConfirmed(answer: unknown): boolean {
	return ConfirmedSchema.safeParse(answer).success;
}

/** Whether a client declared form-mode elicitation (MCP: `elicitation: {}` is form, as before modes existed). */
export function acceptsFormElicitation(capabilities: Record<string, unknown> | undefined): boolean {
	const elicitation = capabilities?.elicitation;
	if (typeof elicitation !== "object" || elicitation === null) return false;
	return "form" in elicitation || !("url" in elicitation);
}

/** The refusal of a call the caller did not confirm: nothing was sent. */
export function notConfirmed(confirmation: Confirmation): GatewayError {
	return refusal(
		confirmation,
		`The call of '${confirmation.tool}' was not confirmed, so the gateway did not send it (policy '${confirmation.policy}').`,
	);
}

/** The refusal of a call whose client cannot be asked: it declared no form elicitation. */
export function cannotConfirm(confirmation: Confirmation): GatewayError {
	return refusal(
		confirmation,
		`The gateway's policy '${confirmation.policy}' requires a confirmation of each call of '${confirmation.tool}', and this client cannot answer elicitations; nothing was sent.`,
	);
}

/** Answered as a policy's deny is: a JSON-RPC error (-32602) in a 200 reply. */
function refusal(confirmation: Confirmation, sentence: string): GatewayError {
	return new GatewayError("forbidden", sentence, { server: confirmation.server, status: 200, code: -32602 });
}
