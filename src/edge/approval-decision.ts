import type { Env } from "../env.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import { parsePrincipalId } from "../registry/access-rules.ts";
import { APPROVAL_ID, type ApprovalDecision, type ApprovalRecord } from "../registry/approval-records.ts";
import { registryStub } from "../registry/registry-stub.ts";
import { audit } from "./admin-audit.ts";
import { sessionObjectAt } from "./session-routing.ts";

/** Who decides a held call: the admin, or a person whose access rule makes them an approver. */
export type Approver = { kind: "admin" } | { kind: "person"; principalId: string; userId: string };

/**
 * An approver's decision on the held call `id`, the one path for the admin
 * API (`POST /admin/approvals/:id`) and the approvers' page (`/approvals`):
 * the session holding the call settles its wait, the registry records how
 * it ended and who decided, and the audit line names the approver. A person
 * may not decide a call they made themselves: another approver must.
 * Throws a GatewayError (not_found, forbidden, conflict) that changes nothing.
 */
export async function decideApproval(
	env: Env,
	id: string,
	decision: ApprovalDecision,
	approver: Approver,
): Promise<{ id: string; status: "approved" | "denied" }> {
	const registry = registryStub(env);
	const place = APPROVAL_ID.exec(id)?.[1];
	const record = place === undefined ? null : await registry.approval(id);
	const holder = place === undefined ? null : sessionObjectAt(env, place);
	if (record === null || holder === null) throw new GatewayError("not_found", `No approval has the id '${id}'.`);
	if (approver.kind === "person" && callerIs(record, approver.userId)) {
		throw new GatewayError(
			"forbidden",
			"You made this call yourself, so you may not decide it: another approver must.",
		);
	}
	if (record.status !== "waiting" || record.until < Date.now()) {
		const ended = record.status === "waiting" ? "timed out" : record.status.replace("_", " ");
		throw new GatewayError("conflict", `The approval '${id}' cannot be decided: it is ${ended} already.`);
	}
	// The session holding the call settles its wait once: a second decision finds nothing waiting.
	if (!(await holder.decideApproval(id, decision))) {
		await registry.approvalEnded(id, "gone");
		throw new GatewayError("conflict", `The approval '${id}' cannot be decided: nothing waits for it any more.`);
	}
	const status = decision.decision === "approve" ? "approved" : "denied";
	const by = approver.kind === "admin" ? "admin" : approver.principalId;
	await registry.approvalEnded(id, status, by);
	audit(status === "approved" ? "approval.approved" : "approval.denied", id, by);
	return { id, status };
}

/** Whether the held call was made by the person `userId`, under whatever rule or grant they called. */
export function callerIs(record: Pick<ApprovalRecord, "principal">, userId: string): boolean {
	return parsePrincipalId(record.principal)?.userId === userId;
}
