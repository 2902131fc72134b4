import { escapeHtml, page, pageResponse } from "../auth/pages.ts";
import type { ApprovalRecord } from "../registry/approval-records.ts";

/**
 * `/approvals`: the calls an `approve` policy holds, for a person whose
 * access rule makes them an approver (decision 0121). Each waiting call is a
 * card with who called, where, the arguments' summary, since and until when,
 * and a form that posts back to this origin only (checked in person-here.ts).
 * A call the person made shows no buttons: another approver must decide it.
 */

/** One held call as the page shows it: the registry's record, and whether the person looking made it. */
export interface ApprovalRow {
	record: ApprovalRecord;
	mine: boolean;
}

export function approvalsPage(who: string, rows: readonly ApprovalRow[]): Response {
	const list =
		rows.length === 0
			? "<p>No call waits for an approver now.</p>"
			: rows.map(({ record, mine }) => card(record, mine)).join("");
	return pageResponse(
		200,
		page(
			"Calls waiting for approval",
			`<p class="brand">MCP gateway</p><h1>Calls waiting for approval</h1><p>Signed in as <strong>${escapeHtml(who)}</strong>. An approved call is sent once and its caller gets the result; a denied one is not sent, and its caller is told your reason.</p>${list}`,
			{ wide: true },
		),
	);
}

/** What a decision did, or why it was refused: a heading, a sentence, and the way back to the list. */
export function approvalMessagePage(status: number, title: string, sentence: string): Response {
	return pageResponse(
		status,
		page(
			title,
			`<p class="brand">MCP gateway</p><h1>${escapeHtml(title)}</h1><p>${escapeHtml(sentence)}</p><p><a href="/approvals">Calls waiting for approval</a></p>`,
		),
	);
}

function card(record: ApprovalRecord, mine: boolean): string {
	const id = escapeHtml(record.id);
	const actions = mine
		? '<p class="muted">You made this call: another approver must decide it.</p>'
		: `<form method="post" action="/approvals/${id}"><label>Reason (optional; a denied call's caller reads it)<input name="reason" maxlength="500"></label><div class="actions"><button name="decision" value="approve">Approve</button><button name="decision" value="deny">Deny</button></div></form>`;
	return `<div class="card" data-approval="${id}"><h3><code>${escapeHtml(record.tool)}</code> on <code>${escapeHtml(record.server)}</code></h3><p>Called by <code>${escapeHtml(record.principal)}</code>, held by policy <code>${escapeHtml(record.policy)}</code>.</p><p>Arguments: <code>${escapeHtml(record.arguments)}</code></p><p class="muted">Waiting since ${time(record.since)}, until ${time(record.until)}.</p>${actions}</div>`;
}

function time(ms: number): string {
	const at = new Date(ms).toISOString();
	return `<time datetime="${escapeHtml(at)}">${escapeHtml(at.replace("T", " ").slice(0, 19))} UTC</time>`;
}
