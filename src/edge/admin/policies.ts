import { createRoute, z } from "@hono/zod-openapi";
import { PolicyInputSchema } from "../../governance/policy-schema.ts";
import { GatewayError } from "../../mcp/gateway-error.ts";
import { PolicyNameSchema } from "../../registry/policy-records.ts";
import { registryStub } from "../../registry/registry-stub.ts";
import { audit } from "../admin-audit.ts";
import { showPolicy } from "../admin-views.ts";
import {
	type AdminRouter,
	adminRouter,
	admitted,
	answer,
	jsonBody,
	REPLACED_OR_CREATED,
	refusal,
	withBodyRefusals,
	withRefusals,
} from "./kit.ts";
import { noneNamed } from "./none-named.ts";

const name = { param: "name", schema: PolicyNameSchema, what: "policy name" };
const params = z.object({ name: PolicyNameSchema });
const tags = ["policies"];
const notFound = refusal("No policy has that name.");

const put = createRoute({
	method: "put",
	path: "/policies/{name}",
	tags,
	summary: "Create or replace a tool policy",
	description:
		"A CEL expression that allows or denies tools to callers, on lists and calls. An expression that does not compile is refused with the compiler's message, and never published.",
	middleware: admitted({ name, body: true }),
	request: { params, body: jsonBody(PolicyInputSchema, "Its expression, effect, where it applies and its priority.") },
	responses: withBodyRefusals(REPLACED_OR_CREATED),
});

const list = createRoute({
	method: "get",
	path: "/policies",
	tags,
	summary: "List tool policies",
	responses: withRefusals({ 200: answer("`{ policies: [...] }`.") }),
});

const show = createRoute({
	method: "get",
	path: "/policies/{name}",
	tags,
	summary: "Show a tool policy",
	middleware: admitted({ name }),
	request: { params },
	responses: withRefusals({ 200: answer("The policy."), 404: notFound }),
});

const remove = createRoute({
	method: "delete",
	path: "/policies/{name}",
	tags,
	summary: "Delete a tool policy",
	middleware: admitted({ name }),
	request: { params },
	responses: withRefusals({ 204: { description: "Deleted." }, 404: notFound }),
});

/** `/admin/policies`: CEL policies over tools (src/governance/policies.ts). */
export function policyRoutes(): AdminRouter {
	const router = adminRouter();

	router.openapi(put, async (c) => {
		const result = await registryStub(c.env).putPolicy(c.req.valid("param").name, c.req.valid("json"));
		if ("invalid" in result) throw new GatewayError("bad_request", `Bad Request: ${result.invalid}.`);
		const { policy, created } = result;
		audit(created ? "policy.created" : "policy.replaced", policy.name);
		return c.json(showPolicy(policy), created ? 201 : 200);
	});

	router.openapi(list, async (c) => {
		const policies = await registryStub(c.env).listPolicies();
		return c.json({ policies: policies.map(showPolicy) });
	});

	router.openapi(show, async (c) => {
		const { name } = c.req.valid("param");
		const policy = await registryStub(c.env).getPolicy(name);
		if (!policy) throw await noneNamed(c.env, "policies", name);
		return c.json(showPolicy(policy));
	});

	router.openapi(remove, async (c) => {
		const { name } = c.req.valid("param");
		if (!(await registryStub(c.env).deletePolicy(name))) {
			throw await noneNamed(c.env, "policies", name);
		}
		audit("policy.deleted", name);
		return c.body(null, 204);
	});

	return router;
}
