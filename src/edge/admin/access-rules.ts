import { createRoute, z } from "@hono/zod-openapi";
import { GatewayError } from "../../mcp/gateway-error.ts";
import { AccessRuleInputSchema, RuleNameSchema } from "../../registry/access-rules.ts";
import { registryStub } from "../../registry/registry-stub.ts";
import { audit } from "../admin-audit.ts";
import { showAccessRule } from "../admin-views.ts";
import { disconnectedUnderRule } from "../connection-events.ts";
import { refuseCodeWithoutLoader } from "./code-mode-binding.ts";
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

const tags = ["access rules"];

const put = createRoute({
	method: "put",
	path: "/access-rules/{name}",
	tags,
	summary: "Create or replace an access rule",
	description:
		"Which signed-in identities (OAuth) may use which servers. Like keys, a rule grants servers, a user path and a session cap; the first rule (by priority, then name) whose match holds for the identity decides.",
	middleware: admitted({ name: { param: "name", schema: RuleNameSchema, what: "access rule name" }, body: true }),
	request: {
		params: z.object({ name: RuleNameSchema }),
		body: jsonBody(
			AccessRuleInputSchema,
			"What it matches (subject, email, emailDomain, group) and what it grants (tool disclosure included).",
		),
	},
	responses: withBodyRefusals(REPLACED_OR_CREATED),
});

const list = createRoute({
	method: "get",
	path: "/access-rules",
	tags,
	summary: "List access rules",
	responses: withRefusals({ 200: answer("`{ accessRules: [...] }`.") }),
});

const remove = createRoute({
	method: "delete",
	path: "/access-rules/{name}",
	tags,
	summary: "Delete an access rule",
	description: "What people connected under the rule goes with it: their upstream tokens are deleted and revoked.",
	request: { params: z.object({ name: z.string() }) },
	responses: withRefusals({ 204: { description: "Deleted." }, 404: refusal("No access rule has that name.") }),
});

/** `/admin/access-rules`: who, signed in, may use what. */
export function accessRuleRoutes(): AdminRouter {
	const router = adminRouter();

	router.openapi(put, async (c) => {
		refuseCodeWithoutLoader(c.env, c.req.valid("json"));
		const result = await registryStub(c.env).putAccessRule(c.req.valid("param").name, c.req.valid("json"));
		if ("invalid" in result) throw new GatewayError("bad_request", `Bad Request: ${result.invalid}.`);
		const { rule, created } = result;
		audit(created ? "access_rule.created" : "access_rule.replaced", rule.name);
		return c.json(showAccessRule(rule), created ? 201 : 200);
	});

	router.openapi(list, async (c) => {
		const rules = await registryStub(c.env).listAccessRules();
		return c.json({ accessRules: rules.map(showAccessRule) });
	});

	router.openapi(remove, async (c) => {
		const { name } = c.req.valid("param");
		if (!(await registryStub(c.env).deleteAccessRule(name))) {
			throw await noneNamed(c.env, "accessRules", name);
		}
		// What people connected under the rule goes with it: their tokens are deleted and revoked.
		await disconnectedUnderRule(c.env, name);
		audit("access_rule.deleted", name);
		return c.body(null, 204);
	});

	return router;
}
