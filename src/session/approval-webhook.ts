import { approvalNotice } from "../governance/approval-notice.ts";
import type { PolicyWebhook } from "../governance/policies.ts";
import { describeError } from "../mcp/gateway-error.ts";
import type { ApprovalRecord } from "../registry/approval-records.ts";
import { resolveReferences } from "../upstream/upstream-target.ts";
import { postWebhook } from "../upstream/webhook-post.ts";
import type { SessionState } from "./session-state.ts";

/** How long a notice may take: approvers are told, or the operator's log says why not; the call waits for neither. */
export const APPROVAL_NOTICE_TIMEOUT_MS = 5_000;

/**
 * Tells an `approve` policy's webhook that a call waits (decision 0122): one
 * signed POST (Standard Webhooks, webhook-post.ts) of the Slack-compatible
 * notice. Never throws and never decides anything: a secret that does not
 * resolve, a receiver that fails, answers other than 2xx or is too slow is a
 * line in the operator's log, and the call waits for its approver as it would
 * without a webhook.
 */
export async function notifyApprovers(
	state: SessionState,
	webhook: PolicyWebhook,
	record: ApprovalRecord,
): Promise<void> {
	const where = `approval ${record.id} (policy '${record.policy}'): its webhook`;
	const secret = resolveReferences(webhook.secret, state.env);
	if ("problem" in secret) {
		console.error(`${where} was not told: its secret ${secret.problem}`);
		return;
	}
	if (new URL(webhook.url).protocol === "http:" && !state.settings.allowHttpUpstreams) {
		console.error(`${where} was not told: its URL is plain http and ALLOW_HTTP_UPSTREAMS is not true`);
		return;
	}
	const body = JSON.stringify(approvalNotice(record, state.binding?.caller?.origin));
	try {
		const response = await postWebhook(
			{ url: webhook.url, secret: secret.value, timeoutMs: APPROVAL_NOTICE_TIMEOUT_MS },
			body,
		);
		await response.body?.cancel();
		if (!response.ok) console.warn(`${where} answered ${response.status}; approvers may not know the call waits`);
	} catch (error) {
		console.warn(`${where} could not be reached (${describeError(error)}); approvers may not know the call waits`);
	}
}
