import { type Context, Hono } from "hono";
import { describeError, GatewayError } from "../mcp/gateway-error.ts";
import { APPROVAL_ID, ApprovalDecisionSchema } from "../registry/approval-records.ts";
import { registryStub } from "../registry/registry-stub.ts";
import { callerIs, decideApproval } from "./approval-decision.ts";
import { approvalMessagePage, approvalsPage } from "./approver-pages.ts";
import { type PersonHere, type PersonPage, personHere } from "./person-here.ts";
import type { EdgeContext } from "./request-context.ts";

const APPROVALS_PAGE: PersonPage = {
	path: "/approvals",
	name: "approvals",
	shows: "the calls waiting for approval",
	noSignIn:
		"This gateway does not sign people in itself (OIDC_ISSUER is not set), so approvers decide through the operators' dashboard or the admin API.",
};

/**
 * The approvers' page (decision 0121): a person signed in to the gateway's
 * pages whose access rule, as it decides for them now, has `approver: true`
 * lists the held calls and approves or denies them, through the same
 * decision as the admin's (approval-decision.ts). Every answer is a page.
 */
export function createApproverRoutes(): Hono<EdgeContext> {
	const routes = new Hono<EdgeContext>();

	routes.get("/approvals", async (c) => {
		const person = await approverHere(c);
		if (person instanceof Response) return person;
		const waiting = await registryStub(c.env).waitingApprovals(Date.now());
		const rows = waiting.map((record) => ({ record, mine: callerIs(record, person.userId) }));
		return approvalsPage(person.identity.email ?? person.identity.subject, rows);
	});

	routes.post("/approvals/:id", async (c) => {
		const person = await approverHere(c);
		if (person instanceof Response) return person;
		const id = c.req.param("id");
		const form = await c.req.raw.formData().catch(() => new FormData());
		const reason = String(form.get("reason") ?? "").trim();
		const decision = ApprovalDecisionSchema.safeParse({
			decision: form.get("decision"),
			...(reason === "" ? {} : { reason }),
		});
		if (!APPROVAL_ID.test(id) || !decision.success) {
			return approvalMessagePage(
				400,
				"This decision cannot be read",
				"A decision is Approve or Deny on a call the list shows, with a reason of at most 500 characters. Nothing was decided.",
			);
		}
		const decided = await decideApproval(c.env, id, decision.data, {
			kind: "person",
			principalId: person.principalId,
			userId: person.userId,
		});
		return decided.status === "approved"
			? approvalMessagePage(200, "Approved", "The call was approved: it is sent once, and its caller gets its result.")
			: approvalMessagePage(200, "Denied", "The call was denied: nothing was sent, and its caller is told so.");
	});

	// A person at a browser reads these: every failure is a page with a sentence, the detail in the log.
	routes.onError((error) => {
		if (error instanceof GatewayError) {
			return approvalMessagePage(error.status, "This call cannot be decided", error.message);
		}
		console.error(`approvals page failed: ${describeError(error)}`);
		return approvalMessagePage(
			500,
			"Something went wrong",
			"The gateway could not finish this step; its log says why.",
		);
	});
	return routes;
}

/** The signed-in person when their rule makes them an approver; a page saying why not otherwise. */
async function approverHere(c: Context<EdgeContext>): Promise<PersonHere | Response> {
	const person = await personHere(c, APPROVALS_PAGE);
	if (person instanceof Response || person.rule.approver) return person;
	return approvalMessagePage(
		403,
		"You are not an approver",
		"Your access rule does not make you an approver of held calls, so this page shows you nothing. Ask the operator of this gateway if you should be one.",
	);
}
