import { createRoute, z } from "@hono/zod-openapi";
import { connectorObject } from "../../connectors/connector-do.ts";
import type { Env } from "../../env.ts";
import { describeError, GatewayError } from "../../mcp/gateway-error.ts";
import { ConnectorTokenIdSchema } from "../../registry/connector-tokens.ts";
import { registryStub } from "../../registry/registry-stub.ts";
import type { NoConnectorServer } from "../../registry/resources/connector-tokens.ts";
import { ServerNameSchema } from "../../registry/schemas.ts";
import { audit } from "../admin-audit.ts";
import { type AdminRouter, adminRouter, admitted, answer, refusal, withRefusals } from "./kit.ts";
import { noneNamed } from "./none-named.ts";

const name = { param: "name", schema: ServerNameSchema, what: "server name" };
const tags = ["connector tokens"];
const noServer = refusal("No server has that name.");
const notConnector = refusal('The server is reached by its URL, not through connectors ("connector": {}).');

const create = createRoute({
	method: "post",
	path: "/servers/{name}/connector-tokens",
	tags,
	summary: "Make a connector token",
	description:
		"A token a connector (`mcpgw connect`) presents for this server only. The answer carries the token itself, once: the registry keeps only its digest.",
	middleware: admitted({ name }),
	request: { params: z.object({ name: ServerNameSchema }) },
	responses: withRefusals({
		201: answer("`{ id, token, createdAt }`: the token, shown this once."),
		404: noServer,
		400: notConnector,
	}),
});

const list = createRoute({
	method: "get",
	path: "/servers/{name}/connector-tokens",
	tags,
	summary: "List a server's connector tokens",
	description: "Their ids, when they were made and when a connector last came with each; never a token or its digest.",
	middleware: admitted({ name }),
	request: { params: z.object({ name: ServerNameSchema }) },
	responses: withRefusals({
		200: answer("`{ connectorTokens: [{ id, createdAt, lastSeenAt }] }`."),
		404: noServer,
		400: notConnector,
	}),
});

const revoke = createRoute({
	method: "delete",
	path: "/servers/{name}/connector-tokens/{id}",
	tags,
	summary: "Revoke a connector token",
	description: "No connector is admitted with it any more, and the connectors online with it are dropped.",
	middleware: admitted({ name }),
	request: { params: z.object({ name: ServerNameSchema, id: z.string() }) },
	responses: withRefusals({ 204: { description: "Revoked." }, 404: refusal("The server has no token with that id.") }),
});

/** A time as the admin API shows times; null stays null. */
const shownTime = (at: number | null) => (at === null ? null : new Date(at).toISOString());

/** `/admin/servers/:name/connector-tokens`: what a connector server's connectors present. */
export function connectorTokenRoutes(): AdminRouter {
	const router = adminRouter();

	router.openapi(create, async (c) => {
		const { name } = c.req.valid("param");
		const made = await registryStub(c.env).makeConnectorToken(name);
		if ("missing" in made || "notConnector" in made) throw await refused(c.env, name, made);
		audit("connector_token.created", made.id);
		return c.json({ id: made.id, token: made.token, createdAt: new Date(made.createdAt).toISOString() }, 201);
	});

	router.openapi(list, async (c) => {
		const { name } = c.req.valid("param");
		const listed = await registryStub(c.env).listConnectorTokens(name);
		if ("missing" in listed || "notConnector" in listed) throw await refused(c.env, name, listed);
		return c.json({
			connectorTokens: listed.connectorTokens.map((token) => ({
				id: token.id,
				createdAt: new Date(token.createdAt).toISOString(),
				lastSeenAt: shownTime(token.lastSeenAt),
			})),
		});
	});

	router.openapi(revoke, async (c) => {
		const { name, id } = c.req.valid("param");
		// An id of another shape names no token: refused before the registry is asked.
		const revoked = ConnectorTokenIdSchema.safeParse(id).success
			? await registryStub(c.env).revokeConnectorToken(name, id)
			: false;
		if (!revoked) throw new GatewayError("not_found", `Not Found: server '${name}' has no connector token '${id}'.`);
		audit("connector_token.revoked", id);
		await dropConnectorTokens(c.env, name, [id]);
		return c.body(null, 204);
	});

	return router;
}

async function refused(env: Env, name: string, why: NoConnectorServer): Promise<GatewayError> {
	if ("missing" in why) return noneNamed(env, "servers", name);
	return new GatewayError(
		"bad_request",
		`Bad Request: server '${name}' is reached by its URL, so it has no connector tokens; register it with "connector": {} in place of url to serve it through connectors.`,
	);
}

/**
 * Closes the live connectors of tokens just revoked (or taken with their
 * server). The revocation has committed and their KV records are going, so no
 * connector is admitted with them again; a failure here leaves connected ones
 * up until they reconnect, which is logged, not refused.
 */
export async function dropConnectorTokens(env: Env, server: string, ids: readonly string[]): Promise<void> {
	if (ids.length === 0) return;
	const object = connectorObject(env, server);
	await Promise.all(
		ids.map(async (id) => {
			try {
				await object.dropToken(id);
			} catch (error) {
				console.warn(
					`connector ${server}: dropping the connectors of revoked token ${id} failed: ${describeError(error)}`,
				);
			}
		}),
	);
}
