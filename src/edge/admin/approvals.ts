import { createRoute, z } from "@hono/zod-openapi";
import { ApprovalDecisionSchema } from "../../registry/approval-records.ts";
import { registryStub } from "../../registry/registry-stub.ts";
import { decideApproval } from "../approval-decision.ts";
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
		const decided = await decideApproval(c.env, c.req.valid("param").id, c.req.valid("json"), { kind: "admin" });
		return c.json(decided, 200);
	});

	return router;
}
