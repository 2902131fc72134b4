import { createRoute } from "@hono/zod-openapi";
import { oauthKv, revokePersonGrants, userIdOf } from "../../auth/authorization-server.ts";
import { settingsFrom } from "../../config.ts";
import type { Env } from "../../env.ts";
import { GatewayError } from "../../mcp/gateway-error.ts";
import { registryStub } from "../../registry/registry-stub.ts";
import { ServerNameSchema } from "../../registry/schemas.ts";
import { audit } from "../admin-audit.ts";
import { disconnected, disconnectedEverywhere } from "../connection-events.ts";
import { type AdminRouter, adminRouter, answer, queryParam, refusal, withRefusals } from "./kit.ts";

const tags = ["connections"];
const serverQuery = queryParam("server", "The `oauth` server, by name (required).");

/** The vault of the person or key an admin request names. */
async function vaultNamed(
	env: Env,
	subject: string | undefined,
	issuer: string | undefined,
	key: string | undefined,
): Promise<string> {
	if (key) return `key:${key}`;
	if (!subject) {
		throw new GatewayError(
			"bad_request",
			"Bad Request: name who as ?subject=<sub claim> (and &issuer=) or ?key=<key id>.",
		);
	}
	const oauth = settingsFrom(env).oauth;
	const trusted = oauth.mode === "gateway" ? oauth.oidc.issuer : oauth.mode === "external" ? oauth.issuer : undefined;
	const named = issuer ?? trusted;
	if (!named) throw new GatewayError("bad_request", "Bad Request: name the person's issuer as &issuer=<issuer>.");
	return `person:${await userIdOf({ issuer: named, subject })}`;
}

function serverNamed(server: string | undefined): string {
	const parsed = ServerNameSchema.safeParse(server);
	if (!parsed.success) throw new GatewayError("bad_request", "Bad Request: name the server as ?server=<name>.");
	return parsed.data;
}

const list = createRoute({
	method: "get",
	path: "/connections",
	tags,
	summary: "List who connected their account at a server",
	description: "Who has connected their own account at an `oauth` server, and since when: never a token.",
	parameters: [serverQuery],
	responses: withRefusals({
		200: answer("`{ connections: [{ server, who, issuer, subject, keyId, rule, connectedAt }] }`."),
	}),
});

const remove = createRoute({
	method: "delete",
	path: "/connections",
	tags,
	summary: "Disconnect a person or key from a server",
	description:
		"The tokens are deleted and revoked at the upstream where it offers RFC 7009, and their live sessions lose the server at once.",
	parameters: [
		serverQuery,
		queryParam("subject", "The person's `sub` claim."),
		queryParam("issuer", "The person's issuer, when not the gateway's own."),
		queryParam("key", "An API key's id, in place of a person."),
	],
	responses: withRefusals({ 200: answer("`{ disconnected: boolean }`.") }),
});

const revokeGrants = createRoute({
	method: "delete",
	path: "/oauth-grants",
	tags,
	summary: "Cut a person off",
	description:
		"Revokes every grant the person holds at the gateway's authorization server and disconnects every account they connected; their sessions end at the next recheck.",
	parameters: [queryParam("subject", "The person's `sub` claim at the OpenID Connect provider (required).")],
	responses: withRefusals({
		200: answer("`{ revoked, disconnected }`: how many grants and connections."),
		404: refusal("This gateway is not an OAuth authorization server (OIDC_ISSUER is not set)."),
	}),
});

/** `/admin/connections`, `/admin/oauth-grants`: people's own accounts at upstreams, and cutting them off. */
export function connectionRoutes(): AdminRouter {
	const router = adminRouter();

	router.openapi(list, async (c) => {
		const server = serverNamed(c.req.query("server"));
		const rows = await registryStub(c.env).connections({ server });
		return c.json({
			connections: rows.map((row) => ({
				server: row.server,
				who: row.label,
				issuer: row.issuer,
				subject: row.subject,
				keyId: row.keyId,
				rule: row.rule,
				connectedAt: new Date(row.connectedAt).toISOString(),
			})),
		});
	});

	router.openapi(remove, async (c) => {
		const server = serverNamed(c.req.query("server"));
		const vault = await vaultNamed(c.env, c.req.query("subject"), c.req.query("issuer"), c.req.query("key"));
		const removed = await disconnected(c.env, vault, server);
		audit("connection.deleted", `${server} ${vault}`);
		return c.json({ disconnected: removed });
	});

	router.openapi(revokeGrants, async (c) => {
		const oauth = settingsFrom(c.env).oauth;
		if (oauth.mode !== "gateway") {
			throw new GatewayError(
				"not_found",
				"Not Found: this gateway is not an OAuth authorization server (OIDC_ISSUER is not set).",
			);
		}
		const subject = c.req.query("subject");
		if (!subject) throw new GatewayError("bad_request", "Bad Request: name the person as ?subject=<sub claim>.");
		oauthKv(c.env);
		const revoked = await revokePersonGrants(new URL(c.req.url).origin, c.env, { issuer: oauth.oidc.issuer, subject });
		// Cut off means cut off upstream too: every account they connected is disconnected and revoked.
		const vault = `person:${await userIdOf({ issuer: oauth.oidc.issuer, subject })}`;
		const disconnectedCount = await disconnectedEverywhere(c.env, vault);
		audit("oauth_grants.revoked", `subject:${subject}`);
		return c.json({ revoked, disconnected: disconnectedCount });
	});

	return router;
}
