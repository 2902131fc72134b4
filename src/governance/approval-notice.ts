import type { ApprovalRecord } from "../registry/approval-records.ts";

/**
 * The notice an `approve` policy's webhook receives when it holds a call
 * (decision 0122): Slack-compatible (`text` for notifications, `blocks` for
 * the message), so an incoming-webhook URL of Slack works as it is, with the
 * machine-readable `approval` beside them for any other receiver (Slack
 * ignores fields it does not know). Never the arguments themselves: their
 * summary, as the approvers' lists show it.
 */
export interface ApprovalNotice {
	text: string;
	blocks: unknown[];
	approval: {
		id: string;
		policy: string;
		server: string;
		tool: string;
		/** Who called: a key id or a person's principal id. */
		caller: string;
		summary: string;
		/** ISO 8601 times: since when the call waits, and until when. */
		since: string;
		until: string;
	};
	/** The gateway's pages where an approver decides; absent when the session does not know its origin. */
	links?: { approvals: string; dashboard: string };
}

/** Longest summary quoted in the message's text (Slack's section text stops at 3,000 characters). */
const MAX_QUOTED = 1_000;

/** The notice of `record`, linking the pages of the gateway at `origin` when it is known. */
export function approvalNotice(record: ApprovalRecord, origin: string | undefined): ApprovalNotice {
	const until = new Date(record.until).toISOString();
	const links = origin === undefined ? undefined : { approvals: `${origin}/approvals`, dashboard: `${origin}/admin/` };
	const text = slackEscaped(
		`A call of ${record.tool} on ${record.server} by ${record.principal} waits for an approver until ${until} (policy ${record.policy}).`,
	);
	const quoted = record.arguments.length > MAX_QUOTED ? `${record.arguments.slice(0, MAX_QUOTED)}…` : record.arguments;
	const summary = slackEscaped(quoted);
	const fields = [
		`*Caller:* \`${slackEscaped(record.principal)}\``,
		`*Server:* \`${record.server}\``,
		`*Tool:* \`${slackEscaped(record.tool)}\``,
		`*Until:* ${until}`,
	];
	const blocks: unknown[] = [
		{ type: "section", text: { type: "mrkdwn", text: `*A call waits for an approver* (policy \`${record.policy}\`)` } },
		{ type: "section", fields: fields.map((field) => ({ type: "mrkdwn", text: field })) },
		{ type: "section", text: { type: "mrkdwn", text: `*Arguments:* \`${summary}\`` } },
	];
	if (links) {
		blocks.push({
			type: "section",
			text: {
				type: "mrkdwn",
				text: `<${links.approvals}|Decide on the approvals page> · <${links.dashboard}|Dashboard>`,
			},
		});
	}
	return {
		text,
		blocks,
		approval: {
			id: record.id,
			policy: record.policy,
			server: record.server,
			tool: record.tool,
			caller: record.principal,
			summary: record.arguments,
			since: new Date(record.since).toISOString(),
			until,
		},
		...(links && { links }),
	};
}

/** Slack reads `&`, `<` and `>` as its own markup (links, mentions): a caller's text must not make any. */
function slackEscaped(text: string): string {
	return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}
