import { createRoute, z } from "@hono/zod-openapi";
import { GatewayError } from "../../mcp/gateway-error.ts";
import { GuardInputSchema, GuardNameSchema } from "../../registry/guard-records.ts";
import { registryStub } from "../../registry/registry-stub.ts";
import { audit } from "../admin-audit.ts";
import { showGuard } from "../admin-views.ts";
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

const name = { param: "name", schema: GuardNameSchema, what: "guard name" };
const params = z.object({ name: GuardNameSchema });
const tags = ["guards"];
const notFound = refusal("No guard has that name.");

const put = createRoute({
	method: "put",
	path: "/guards/{name}",
	tags,
	summary: "Create or replace a content guard",
	description:
		"Scans a call's arguments (stage request) or its result and resource reads (stage response): with built-in detectors (detect), redacting, blocking or logging what they find (action); or with the organisation's own scanner (webhook), sent the content in a signed POST, which answers allow, block or modify; a scanner that does not answer in timeoutMs leaves the call to onFailure.",
	middleware: admitted({ name, body: true }),
	request: {
		params,
		body: jsonBody(
			GuardInputSchema,
			"Its stage, where it applies, and either what it detects and its action, or its webhook.",
		),
	},
	responses: withBodyRefusals(REPLACED_OR_CREATED),
});

const list = createRoute({
	method: "get",
	path: "/guards",
	tags,
	summary: "List content guards",
	responses: withRefusals({ 200: answer("`{ guards: [...] }`.") }),
});

const show = createRoute({
	method: "get",
	path: "/guards/{name}",
	tags,
	summary: "Show a content guard",
	middleware: admitted({ name }),
	request: { params },
	responses: withRefusals({ 200: answer("The guard."), 404: notFound }),
});

const remove = createRoute({
	method: "delete",
	path: "/guards/{name}",
	tags,
	summary: "Delete a content guard",
	middleware: admitted({ name }),
	request: { params },
	responses: withRefusals({ 204: { description: "Deleted." }, 404: notFound }),
});

/** `/admin/guards`: content guards over calls' arguments and results (src/governance/guards/). */
export function guardRoutes(): AdminRouter {
	const router = adminRouter();

	router.openapi(put, async (c) => {
		const result = await registryStub(c.env).putGuard(c.req.valid("param").name, c.req.valid("json"));
		if ("invalid" in result) throw new GatewayError("bad_request", `Bad Request: ${result.invalid}.`);
		const { guard, created } = result;
		audit(created ? "guard.created" : "guard.replaced", guard.name);
		return c.json(showGuard(guard), created ? 201 : 200);
	});

	router.openapi(list, async (c) => {
		const guards = await registryStub(c.env).listGuards();
		return c.json({ guards: guards.map(showGuard) });
	});

	router.openapi(show, async (c) => {
		const { name } = c.req.valid("param");
		const guard = await registryStub(c.env).getGuard(name);
		if (!guard) throw await noneNamed(c.env, "guards", name);
		return c.json(showGuard(guard));
	});

	router.openapi(remove, async (c) => {
		const { name } = c.req.valid("param");
		if (!(await registryStub(c.env).deleteGuard(name))) {
			throw await noneNamed(c.env, "guards", name);
		}
		audit("guard.deleted", name);
		return c.body(null, 204);
	});

	return router;
}
