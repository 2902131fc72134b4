import type { Context } from "hono";
import { connectorObject } from "../connectors/connector-do.ts";
import { SERVER_HEADER, TOKEN_ID_HEADER } from "../connectors/connector-refusal.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import { admittedConnectorToken } from "../registry/connector-tokens.ts";
import { bearerToken } from "./bearer.ts";
import type { EdgeContext } from "./request-context.ts";

/**
 * `GET /connector/:server` with `Upgrade: websocket`: a connector (`mcpgw
 * connect`) dials its server's ConnectorDO. Its connector token is the only
 * credential taken here (no API key, no sign-in), and it must be one made for
 * this server. A browser's WebSocket (it always sends `Origin`) is refused, so
 * no page a person visits can pose as a connector with a token it learned.
 */
export async function handleConnectorDial(c: Context<EdgeContext>): Promise<Response> {
	const request = c.req.raw;
	const server = c.req.param("server") ?? "";
	if (request.headers.has("origin")) {
		throw new GatewayError(
			"forbidden_origin",
			"A connector's WebSocket carries no Origin header: browsers may not dial the connector route.",
		);
	}
	if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") {
		throw new GatewayError(
			"bad_request",
			"The connector route takes a WebSocket upgrade (GET with Upgrade: websocket), as mcpgw connect sends.",
		);
	}
	const token = bearerToken(request);
	if (token === null) {
		throw new GatewayError(
			"unauthenticated",
			"A connector authenticates with its connector token: Authorization: Bearer mcpgwc1_….",
		);
	}
	let admitted: Awaited<ReturnType<typeof admittedConnectorToken>>;
	try {
		admitted = await admittedConnectorToken(c.env.REGISTRY_KV, token, server);
	} catch (error) {
		throw new GatewayError(
			"registry_unavailable",
			"The gateway could not read its registry; the connector should retry.",
			{
				cause: error,
			},
		);
	}
	if (admitted === null) {
		throw new GatewayError(
			"unauthenticated",
			`The connector token was refused for server '${server}': it is unknown, revoked, or made for another server.`,
		);
	}
	// The object learns the token and server from the edge alone: what the connector sent under those names is dropped.
	const headers = new Headers(request.headers);
	headers.delete("authorization");
	headers.set(TOKEN_ID_HEADER, admitted.id);
	headers.set(SERVER_HEADER, server);
	return connectorObject(c.env, server).fetch(new Request(request.url, { method: "GET", headers }));
}
