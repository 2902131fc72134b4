import { createRoute, z } from "@hono/zod-openapi";
import { settingsFrom } from "../../config.ts";
import { connectorObject } from "../../connectors/connector-do.ts";
import { CONNECT_CALLBACK_PATH } from "../../credentials/client-registration.ts";
import { GatewayError } from "../../mcp/gateway-error.ts";
import { CONNECTOR_ORIGIN } from "../../registry/connector-tokens.ts";
import { OPENAPI_ORIGIN } from "../../registry/openapi-records.ts";
import { registryStub } from "../../registry/registry-stub.ts";
import { ServerInputSchema, ServerNameSchema } from "../../registry/schemas.ts";
import { ToolApprovalInputSchema } from "../../registry/tool-pins.ts";
import { audit } from "../admin-audit.ts";
import { maskServer } from "../admin-views.ts";
import { checkServer, wantsCheck } from "../server-check.ts";
import { approveTools, toolsView } from "../server-tools.ts";
import { dropConnectorTokens } from "./connector-tokens.ts";
import {
	type AdminRouter,
	adminRouter,
	admitted,
	answer,
	jsonBody,
	queryParam,
	refusal,
	withBodyRefusals,
	withRefusals,
} from "./kit.ts";
import { noneNamed } from "./none-named.ts";

/** The one name an oauth server cannot have: its connect page would be the gateway's OAuth callback. */
const RESERVED_CONNECT_NAME = CONNECT_CALLBACK_PATH.slice(CONNECT_CALLBACK_PATH.lastIndexOf("/") + 1);

const name = { param: "name", schema: ServerNameSchema, what: "server name" };
const params = z.object({ name: ServerNameSchema });
const tags = ["servers"];
const notFound = refusal("No server has that name.");
const checkQuery = (byDefault: boolean) =>
	queryParam(
		"check",
		`true: also ask the server whether it answers (one bounded probe), in \`check\`; default ${byDefault}.`,
		{ type: "string", enum: ["true", "false"] },
	);

const list = createRoute({
	method: "get",
	path: "/servers",
	tags,
	summary: "List servers",
	description: "Every registered upstream server; header values and URL query values masked.",
	responses: withRefusals({ 200: answer("`{ servers: [...] }`.") }),
});

const show = createRoute({
	method: "get",
	path: "/servers/{name}",
	tags,
	summary: "Show a server",
	description:
		"One server, masked; `?check=true` also asks it whether it answers, as registering it does. A server reached through connectors also lists, in `connectors`, those online now.",
	middleware: admitted({ name, query: (c) => wantsCheck(c, false) }),
	request: { params },
	parameters: [checkQuery(false)],
	responses: withRefusals({ 200: answer("The server (with `check` when asked)."), 404: notFound }),
});

const put = createRoute({
	method: "put",
	path: "/servers/{name}",
	tags,
	summary: "Register or replace a server",
	middleware: admitted({ name, query: (c) => wantsCheck(c, true), body: true }),
	description:
		'Registers the server whether or not it answers now, and says which in `check` (one bounded probe; `?check=false` skips it, for bulk registration). A replacing PUT keeps its generation. `"connector": {}` in place of `url`: reached through connectors; a connector server given a `url` loses its connector tokens. `"openapi": {…}` in place of `url`: a REST API\'s OpenAPI document, read and compiled now (a document given by URL is fetched again at each PUT), each operation a tool; `notes` says what was left out.',
	request: {
		params,
		body: jsonBody(
			ServerInputSchema,
			"The upstream: its URL (or `connector: {}`, or `openapi`), headers, auth, shaping and pinning.",
		),
	},
	parameters: [checkQuery(true)],
	responses: withBodyRefusals({
		200: answer("Replaced; the server as shown by GET."),
		201: answer("Created; the server as shown by GET."),
		409: refusal("The name belongs to a virtual server."),
	}),
});

const tools = createRoute({
	method: "get",
	path: "/servers/{name}/tools",
	tags,
	summary: "List a server's tools with their pinning state",
	description: "Each tool: approved, changed (with the fields that changed), new, or removed.",
	middleware: admitted({ name }),
	request: { params },
	responses: withRefusals({ 200: answer("The tools and their states."), 404: notFound }),
});

const approve = createRoute({
	method: "post",
	path: "/servers/{name}/tools/approve",
	tags,
	summary: "Approve a server's tools",
	description: "Approves every tool the server lists now, or the named ones, as they are listed now.",
	middleware: admitted({ name, body: true }),
	request: { params, body: jsonBody(ToolApprovalInputSchema, "`{}` for every tool, or `{ tools: [names] }`.") },
	responses: withBodyRefusals({
		200: answer("The tools view, with `approved` and `forgotten`."),
		404: notFound,
		409: refusal("The server changed while approving."),
	}),
});

const document = createRoute({
	method: "get",
	path: "/servers/{name}/openapi",
	tags,
	summary: "Show a server's OpenAPI document",
	description:
		"For a server made from a document: the document as given inline (`{ document }`, its text), or where it is fetched from (`{ url }`); what configuration as code exports. 404 for any other server.",
	middleware: admitted({ name }),
	request: { params },
	responses: withRefusals({ 200: answer("`{ url }` or `{ document }`."), 404: notFound }),
});

const remove = createRoute({
	method: "delete",
	path: "/servers/{name}",
	tags,
	summary: "Delete a server",
	description:
		"Its sessions end at their next recheck, its connector tokens are revoked and their connectors dropped; a server created again under the name is a new incarnation.",
	middleware: admitted({ name }),
	request: { params },
	responses: withRefusals({ 204: { description: "Deleted." }, 404: notFound }),
});

/**
 * A document server's document compiled. The parser and the YAML reader are
 * the largest code of the Worker and only a PUT of such a server uses them:
 * imported when first needed, so no other request's isolate evaluates them.
 */
async function compiledDocument(...args: Parameters<typeof import("./openapi-document.ts").compileServerDocument>) {
	const { compileServerDocument } = await import("./openapi-document.ts");
	return compileServerDocument(...args);
}

/** `/admin/servers`: upstream servers, their tools and approvals. */
export function serverRoutes(): AdminRouter {
	const router = adminRouter();

	router.openapi(list, async (c) => {
		const servers = await registryStub(c.env).listServers();
		return c.json({ servers: servers.map(maskServer) });
	});

	router.openapi(show, async (c) => {
		const { name } = c.req.valid("param");
		const check = wantsCheck(c, false);
		const server = await registryStub(c.env).getServer(name);
		if (!server) throw await noneNamed(c.env, "servers", name);
		const shown = server.connector
			? { ...maskServer(server), connectors: await connectorObject(c.env, name).online() }
			: maskServer(server);
		return c.json(check ? { ...shown, check: await checkServer(c.env, server) } : shown);
	});

	router.openapi(put, async (c) => {
		const { name } = c.req.valid("param");
		const check = wantsCheck(c, true);
		const input = c.req.valid("json");
		if (name === RESERVED_CONNECT_NAME && input.auth.type === "oauth") {
			throw new GatewayError(
				"bad_request",
				`Bad Request: an oauth server cannot be named '${RESERVED_CONNECT_NAME}': /connect/${RESERVED_CONNECT_NAME} is where authorization servers send people back.`,
			);
		}
		if (input.url !== undefined && new URL(input.url).origin === CONNECTOR_ORIGIN) {
			throw new GatewayError(
				"bad_request",
				'Bad Request: url: connector.invalid addresses stand for servers reached through connectors; register the server with "connector": {} instead of a url.',
			);
		}
		if (input.url !== undefined && new URL(input.url).origin === OPENAPI_ORIGIN) {
			throw new GatewayError(
				"bad_request",
				"Bad Request: url: openapi.invalid addresses stand for servers made from OpenAPI documents; register the server with openapi instead of a url.",
			);
		}
		if (input.url !== undefined && new URL(input.url).protocol === "http:" && !settingsFrom(c.env).allowHttpUpstreams) {
			throw new GatewayError(
				"bad_request",
				"Bad Request: url: plain http upstreams are refused (credentials and calls would travel unencrypted); use https, or set ALLOW_HTTP_UPSTREAMS=true for local development.",
			);
		}
		const made = input.openapi ? await compiledDocument(c.env, { ...input, openapi: input.openapi }) : null;
		const result = await registryStub(c.env).putServer(name, input, made?.compiled ?? null);
		if ("conflict" in result) throw new GatewayError("conflict", `Conflict: ${result.conflict}.`);
		audit(result.created ? "server.created" : "server.replaced", name);
		await dropConnectorTokens(c.env, name, result.droppedTokens);
		const shown = made ? { ...maskServer(result.server), notes: made.notes } : maskServer(result.server);
		const status = result.created ? 201 : 200;
		return c.json(check ? { ...shown, check: await checkServer(c.env, result.server) } : shown, status);
	});

	router.openapi(document, async (c) => {
		const { name } = c.req.valid("param");
		const registry = registryStub(c.env);
		const server = await registry.getServer(name);
		if (!server) throw await noneNamed(c.env, "servers", name);
		if (!server.openapi) {
			throw new GatewayError("not_found", `Not Found: server '${name}' is not made from an OpenAPI document.`);
		}
		if (server.openapi.url !== null) return c.json({ url: server.openapi.url });
		return c.json({ document: await registry.openApiDocument(name) });
	});

	router.openapi(tools, async (c) => c.json(await toolsView(c.env, c.req.valid("param").name)));

	router.openapi(approve, async (c) => {
		const { name } = c.req.valid("param");
		const approved = await approveTools(c.env, name, c.req.valid("json"));
		audit("server.tools_approved", name);
		return c.json(approved);
	});

	router.openapi(remove, async (c) => {
		const { name } = c.req.valid("param");
		const deleted = await registryStub(c.env).deleteServer(name);
		if (!deleted) throw await noneNamed(c.env, "servers", name);
		audit("server.deleted", name);
		await dropConnectorTokens(c.env, name, deleted.droppedTokens);
		return c.body(null, 204);
	});

	return router;
}
