import { createRoute, z } from "@hono/zod-openapi";
import { GatewayError } from "../../mcp/gateway-error.ts";
import { registryStub } from "../../registry/registry-stub.ts";
import { ServerNameSchema, VirtualServerInputSchema } from "../../registry/schemas.ts";
import { audit } from "../admin-audit.ts";
import { showVirtualServer } from "../admin-views.ts";
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

const name = { param: "name", schema: ServerNameSchema, what: "virtual server name" };
const params = z.object({ name: ServerNameSchema });
const tags = ["virtual servers"];
const notFound = refusal("No virtual server has that name.");

const list = createRoute({
	method: "get",
	path: "/virtual-servers",
	tags,
	summary: "List virtual servers",
	responses: withRefusals({ 200: answer("`{ virtualServers: [...] }`.") }),
});

const show = createRoute({
	method: "get",
	path: "/virtual-servers/{name}",
	tags,
	summary: "Show a virtual server",
	middleware: admitted({ name }),
	request: { params },
	responses: withRefusals({ 200: answer("The virtual server."), 404: notFound }),
});

const put = createRoute({
	method: "put",
	path: "/virtual-servers/{name}",
	tags,
	summary: "Create or replace a virtual server",
	description: "One endpoint, `/mcp/{name}`, in front of several servers; a replacing PUT keeps its generation.",
	middleware: admitted({ name, body: true }),
	request: {
		params,
		body: jsonBody(VirtualServerInputSchema, "Its members, the user paths it admits, its shaping and tool disclosure."),
	},
	responses: withBodyRefusals({
		...REPLACED_OR_CREATED,
		409: refusal("The name belongs to a server."),
	}),
});

const remove = createRoute({
	method: "delete",
	path: "/virtual-servers/{name}",
	tags,
	summary: "Delete a virtual server",
	description: "Its sessions end at their next recheck.",
	middleware: admitted({ name }),
	request: { params },
	responses: withRefusals({ 204: { description: "Deleted." }, 404: notFound }),
});

/** `/admin/virtual-servers`: endpoints in front of several servers. */
export function virtualServerRoutes(): AdminRouter {
	const router = adminRouter();

	router.openapi(list, async (c) => {
		const virtualServers = await registryStub(c.env).listVirtualServers();
		return c.json({ virtualServers: virtualServers.map(showVirtualServer) });
	});

	router.openapi(show, async (c) => {
		const { name } = c.req.valid("param");
		const virtualServer = await registryStub(c.env).getVirtualServer(name);
		if (!virtualServer) throw await noneNamed(c.env, "virtualServers", name);
		return c.json(showVirtualServer(virtualServer));
	});

	router.openapi(put, async (c) => {
		const { name } = c.req.valid("param");
		refuseCodeWithoutLoader(c.env, c.req.valid("json"));
		const result = await registryStub(c.env).putVirtualServer(name, c.req.valid("json"));
		if ("conflict" in result) throw new GatewayError("conflict", `Conflict: ${result.conflict}.`);
		if ("invalid" in result) throw new GatewayError("bad_request", `Bad Request: ${result.invalid}.`);
		audit(result.created ? "virtual_server.created" : "virtual_server.replaced", name);
		return c.json(showVirtualServer(result.virtualServer), result.created ? 201 : 200);
	});

	router.openapi(remove, async (c) => {
		const { name } = c.req.valid("param");
		if (!(await registryStub(c.env).deleteVirtualServer(name))) {
			throw await noneNamed(c.env, "virtualServers", name);
		}
		audit("virtual_server.deleted", name);
		return c.body(null, 204);
	});

	return router;
}
