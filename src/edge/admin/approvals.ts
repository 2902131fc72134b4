import { createRoute, z } from "@hono/zod-openapi";
import { GatewayError } from "../../mcp/gateway-error.ts";
import { APPROVAL_ID, ApprovalDecisionSchema } from "../../registry/approval-records.ts";
import { registryStub } from "../../registry/registry-stub.ts";
import { audit } from "../admin-audit.ts";
import { sessionObjectAt } from "../session-routing.ts";
import {
	type AdminRouter,
	adminRouter,
	admitted,
	answer,
	jsonBody,
	refusal,
	withBodyRefusals,
	withRefusals,
} from "./kit.ts";

const tags = ["approvals"];
const params = z.object({ id: z.string() });

const list = createRoute({
	method: "get",
	path: "/approvals",
	tags,
	summary: "List the calls waiting for an approver",
	description:
		"Each call an `approve` policy holds and nobody decided yet: its id, the policy, who called (key id or principal id), the server, the tool, the arguments' summary (stable JSON, at most 1,024 characters), since when and until when it waits (ms since the epoch). Oldest first.",
	responses: withRefusals({ 200: answer("`{ approvals: [...] }`.") }),
});

const decide = createRoute({
	method: "post",
	path: "/approvals/{id}",
	tags,
	summary: "Approve or deny a waiting call",
	description:
		"Approved: the call is sent, once, and its caller gets its result. Denied: it fails with the reason and nothing is sent. A decision on a call decided, timed out or gone is refused with 409 and changes nothing.",
	middleware: admitted({ body: true }),
	request: { params, body: jsonBody(ApprovalDecisionSchema, '`{ "decision": "approve" | "deny", "reason"? }`.') },
	responses: withBodyRefusals({
		200: answer("`{ id, status }`: approved or denied."),
		404: refusal("No approval has that id."),
		409: refusal("The call was decided already, timed out, or is gone."),
	}),
});

/** `/admin/approvals`: calls an `approve` policy holds (decision 0117). */
export function approvalRoutes(): AdminRouter {
	const router = adminRouter();

	router.openapi(list, async (c) => c.json({ approvals: await registryStub(c.env).waitingApprovals(Date.now()) }));

	router.openapi(decide, async (c) => {
		const { id } = c.req.valid("param");
		const decision = c.req.valid("json");
		const registry = registryStub(c.env);
		const place = APPROVAL_ID.exec(id)?.[1];
		const record = place === undefined ? null : await registry.approval(id);
		const holder = place === undefined ? null : sessionObjectAt(c.env, place);
		if (record === null || holder === null) throw new GatewayError("not_found", `No approval has the id '${id}'.`);
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
		await registry.approvalEnded(id, status);
		audit(status === "approved" ? "approval.approved" : "approval.denied", id);
		return c.json({ id, status }, 200);
	});

	return router;
}
