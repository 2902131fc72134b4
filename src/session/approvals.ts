import type { RequestId } from "@modelcontextprotocol/sdk/types.js";
import type { NotApproved } from "../governance/call-approval.ts";
import { argumentSummary } from "../governance/call-confirmation.ts";
import type { Approval } from "../governance/decision.ts";
import { describeError } from "../mcp/gateway-error.ts";
import { randomToken } from "../primitives/crypto.ts";
import type { ApprovalDecision, ApprovalRecord } from "../registry/approval-records.ts";
import { registryStub } from "../registry/registry-stub.ts";
import { notifyApprovers } from "./approval-webhook.ts";
import type { SessionState } from "./session-state.ts";

/** How a wait for an approver ended (`unlisted`: the registry could not be told, so no approver could see it). */
export type ApprovalOutcome = { decision: "approve" } | NotApproved;

interface Waiting {
	requestId: RequestId;
	settle(outcome: ApprovalOutcome): void;
}

/**
 * The calls this session holds for an approver (decision 0117): each waits
 * here, in memory, as the call itself does (an open request or a task's
 * runner), listed in the registry for `GET /admin/approvals` under an id
 * that names this object, so `POST /admin/approvals/:id` reaches it
 * directly. Whichever comes first settles the wait, once: the approver's
 * decision or the policy's timeout on the session's timers.
 */
export class SessionApprovals {
	private readonly waiting = new Map<string, Waiting>();
	/** Told when a request starts (a sentence) and stops (null) waiting: a held task shows it. */
	private watcher: (requestId: RequestId, sentence: string | null) => void = () => {};

	constructor(private readonly state: SessionState) {}

	/** Who is told when a request starts and stops waiting (the session's held tasks). */
	watch(watcher: (requestId: RequestId, sentence: string | null) => void): void {
		this.watcher = watcher;
	}

	/** Waits for an approver's decision on the call, at most `approval.timeoutMs`. */
	async wait(
		requestId: RequestId,
		approval: Approval,
		args: Readonly<Record<string, unknown>> | undefined,
		/** Who called: a key id or a person's principal id. */
		principal: string,
	): Promise<ApprovalOutcome> {
		const id = `${this.state.place}.${randomToken(16)}`;
		const since = this.state.clock.now();
		const registry = registryStub(this.state.env);
		let settle: (outcome: ApprovalOutcome) => void = () => {};
		const settled = new Promise<ApprovalOutcome>((resolve) => {
			settle = resolve;
		});
		this.waiting.set(id, { requestId, settle });
		const cancelTimer = this.state.timers.set(approval.timeoutMs, () => this.settle(id, { decision: "timed_out" }));
		const record: ApprovalRecord = {
			id,
			policy: approval.policy,
			principal,
			server: approval.server,
			tool: approval.tool,
			arguments: argumentSummary(args),
			since,
			until: since + approval.timeoutMs,
			status: "waiting",
		};
		try {
			await registry.approvalHeld(record);
			// Approvers are told once the call is listed, beside the wait: the notice never delays or decides it.
			if (approval.webhook) this.state.waitUntil(notifyApprovers(this.state, approval.webhook, record));
		} catch (error) {
			console.error(`approval ${id} could not be listed for approvers: ${describeError(error)}`);
			this.settle(id, { decision: "unlisted" });
		}
		this.watcher(
			requestId,
			`Waiting for an approver's decision on the call of '${approval.tool}' (policy '${approval.policy}', approval ${id}).`,
		);
		const outcome = await settled;
		cancelTimer();
		if (outcome.decision === "approve") this.watcher(requestId, null);
		if (outcome.decision === "timed_out" || outcome.decision === "cancelled") {
			await registry
				.approvalEnded(id, outcome.decision === "timed_out" ? "timed_out" : "gone")
				.catch((error: unknown) => console.warn(`approval ${id}: its timeout not recorded (${describeError(error)})`));
		}
		return outcome;
	}

	/**
	 * An approver's decision on `id`: true when it settled a wait here, false
	 * when nothing waits under it any more (decided, timed out, or the object
	 * restarted and the call with it).
	 */
	decide(id: string, decision: ApprovalDecision): boolean {
		if (!this.waiting.has(id)) return false;
		this.settle(
			id,
			decision.decision === "approve" ? { decision: "approve" } : { decision: "deny", reason: decision.reason },
		);
		return true;
	}

	/** The caller cancelled `requestId` (its own request, or its task's): a wait for it ends, and nothing is sent. */
	cancel(requestId: RequestId): void {
		for (const [id, waiting] of this.waiting) {
			if (waiting.requestId === requestId) this.settle(id, { decision: "cancelled" });
		}
	}

	private settle(id: string, outcome: ApprovalOutcome): void {
		const waiting = this.waiting.get(id);
		if (!waiting) return;
		this.waiting.delete(id);
		waiting.settle(outcome);
	}
}
