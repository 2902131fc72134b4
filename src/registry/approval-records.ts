import { z } from "zod";

/**
 * Calls an `approve` policy holds, as the registry lists them for approvers
 * (decision 0117). The call itself waits in the session object that holds it
 * (its id's place); the registry keeps only what `GET /admin/approvals` shows
 * and whether each was decided, so a second decision is refused with 409.
 */

/** An approval's id: the holding session object's id (64 hex digits), a dot, 128 random bits. */
export const APPROVAL_ID = /^([0-9a-f]{64})\.[A-Za-z0-9_-]{22}$/;
export const ApprovalIdSchema = z
	.string()
	.regex(APPROVAL_ID, "must be an approval id as GET /admin/approvals lists it");

/** What an approver decides: the call is sent, or it fails with the reason. */
export const ApprovalDecisionSchema = z.strictObject({
	decision: z.enum(["approve", "deny"], { error: 'must be "approve" or "deny"' }),
	reason: z.string().min(1).max(500).optional().describe("Why: a denied call's task fails with it."),
});
export type ApprovalDecision = z.output<typeof ApprovalDecisionSchema>;

export const ApprovalRecordSchema = z.object({
	id: z.string(),
	policy: z.string(),
	/** Who called: a key id, or a person's principal id. */
	principal: z.string(),
	server: z.string(),
	tool: z.string(),
	/** The arguments, stable JSON cut as a confirmation's question cuts them. */
	arguments: z.string(),
	/** When the call started waiting, and when it stops (ms since the epoch). */
	since: z.number(),
	until: z.number(),
	/** waiting; else how it ended, kept until `until` so a late decision is refused as already decided. */
	status: z.enum(["waiting", "approved", "denied", "timed_out", "gone"]),
	/** Who decided it, once approved or denied: "admin", or the approving person's principal id. */
	decidedBy: z.string().optional(),
});
export type ApprovalRecord = z.infer<typeof ApprovalRecordSchema>;
export type ApprovalStatus = ApprovalRecord["status"];
