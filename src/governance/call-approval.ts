import { GatewayError } from "../mcp/gateway-error.ts";
import { GATEWAY_ATTRIBUTES, instrumentsOf } from "../telemetry/instruments.ts";
import type { Telemetry } from "../telemetry/telemetry.ts";
import type { Approval } from "./decision.ts";

/**
 * What a caller is told of a call an `approve` policy held (decision 0117)
 * and that was not sent: an approver, not the caller, decided it, or nobody
 * did in time. Each answer is a JSON-RPC error (-32602) as a deny is, and
 * says that nothing was sent.
 */

/** Why an approval did not send the call. */
export type NotApproved =
	| { decision: "deny"; reason?: string | undefined }
	| { decision: "timed_out" }
	| { decision: "unlisted" }
	/** The caller cancelled the call (or its task) before anyone decided. */
	| { decision: "cancelled" };

/**
 * The refusal of a held call that was not approved: nothing was sent. It is
 * counted in `mcp_gateway.refusals` by why (decision 0126's vocabulary), except
 * a call its caller cancelled: it was refused nothing, it left.
 */
export function notApproved(approval: Approval, why: NotApproved, telemetry: Telemetry): GatewayError {
	if (why.decision !== "cancelled") {
		const kind =
			why.decision === "deny"
				? "approval_denied"
				: why.decision === "timed_out"
					? "approval_timed_out"
					: "approval_unavailable";
		instrumentsOf(telemetry).refusals.add(1, { [GATEWAY_ATTRIBUTES.refusalKind]: kind });
	}
	const call = `the call of '${approval.tool}' on server '${approval.server}'`;
	let sentence: string;
	if (why.decision === "deny") {
		const reason = why.reason === undefined ? "" : `: ${why.reason}`;
		sentence = `An approver denied ${call} (policy '${approval.policy}')${reason}. Nothing was sent.`;
	} else if (why.decision === "timed_out") {
		sentence = `No approver decided ${call} within ${Math.round(approval.timeoutMs / 1_000)} s (policy '${approval.policy}'), so the gateway did not send it.`;
	} else if (why.decision === "cancelled") {
		sentence = `The call of '${approval.tool}' was cancelled before an approver decided it; nothing was sent.`;
	} else {
		sentence = `The gateway's policy '${approval.policy}' requires an approver's decision on ${call}, and the call could not be put before an approver; nothing was sent.`;
	}
	return new GatewayError("forbidden", sentence, { server: approval.server, status: 200, code: -32602 });
}
