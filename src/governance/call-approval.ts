import { GatewayError } from "../mcp/gateway-error.ts";
import type { Approval } from "./decision.ts";

/**
 * What a caller is told of a call an `approve` policy holds (decision 0117):
 * an approver, not the caller, decides it. Until the gateway can hold such a
 * call for an approver's decision, it refuses it before anything is sent, so
 * no call an approver was meant to see ever runs unseen.
 */

/** The refusal of a call that needed an approver's approval: nothing was sent. */
export function notApproved(approval: Approval): GatewayError {
	return new GatewayError(
		"forbidden",
		`The gateway's policy '${approval.policy}' requires an approver's approval of each call of '${approval.tool}', and none was given; nothing was sent.`,
		{ server: approval.server, status: 200, code: -32602 },
	);
}
