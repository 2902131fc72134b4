import { createRoute, z } from "@hono/zod-openapi";
import { GatewayError } from "../../mcp/gateway-error.ts";
import { registryStub } from "../../registry/registry-stub.ts";
import { KeyInputSchema } from "../../registry/schemas.ts";
import { audit } from "../admin-audit.ts";
import { refuseCodeWithoutLoader } from "./code-mode-binding.ts";
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

const tags = ["keys"];

const create = createRoute({
	method: "post",
	path: "/keys",
	tags,
	summary: "Create an API key",
	description: "The answer carries the key itself, once: the registry keeps only its digest.",
	middleware: admitted({ body: true }),
	request: {
		body: jsonBody(KeyInputSchema, "Its name, user path, servers, session cap, rate class and tool disclosure."),
	},
	responses: withBodyRefusals({
		201: answer("The key's record, with `key`: the secret, shown this once."),
	}),
});

const list = createRoute({
	method: "get",
	path: "/keys",
	tags,
	summary: "List API keys",
	description: "Their records; never a secret.",
	responses: withRefusals({ 200: answer("`{ keys: [...] }`.") }),
});

const revoke = createRoute({
	method: "delete",
	path: "/keys/{id}",
	tags,
	summary: "Revoke an API key",
	description: "Its sessions end at their next recheck.",
	request: { params: z.object({ id: z.string() }) },
	responses: withRefusals({ 204: { description: "Revoked." }, 404: refusal("No API key has that id.") }),
});

/** `/admin/keys`: API keys, shown once at creation. */
export function keyRoutes(): AdminRouter {
	const router = adminRouter();

	router.openapi(create, async (c) => {
		refuseCodeWithoutLoader(c.env, c.req.valid("json"));
		const result = await registryStub(c.env).createKey(c.req.valid("json"));
		if ("invalid" in result) throw new GatewayError("bad_request", `Bad Request: ${result.invalid}.`);
		const { record, key } = result;
		audit("key.created", record.id);
		return c.json({ ...record, createdAt: new Date(record.createdAt).toISOString(), key }, 201);
	});

	router.openapi(list, async (c) => {
		const keys = await registryStub(c.env).listKeys();
		return c.json({ keys: keys.map((key) => ({ ...key, createdAt: new Date(key.createdAt).toISOString() })) });
	});

	router.openapi(revoke, async (c) => {
		const { id } = c.req.valid("param");
		if (!(await registryStub(c.env).revokeKey(id))) {
			throw new GatewayError("not_found", `Not Found: no API key with id '${id}'.`);
		}
		audit("key.deleted", id);
		return c.body(null, 204);
	});

	return router;
}
