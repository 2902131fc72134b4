import type { Context } from "hono";
import { settingsFrom } from "../config.ts";
import type { Env } from "../env.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import { parseClientMessage } from "../mcp/jsonrpc.ts";
import { keyMayUseServer } from "../registry/access.ts";
import { SERVER_NAME } from "../registry/schemas.ts";
import type { SessionScope } from "../session/binding.ts";
import { authenticate } from "./authenticate.ts";
import { registryStub } from "./registry-stub.ts";
import { mintSessionId } from "./session-id.ts";
import { requireSessionSecret, sessionStub, verifiedSessionStub } from "./session-routing.ts";
import {
	checkGetHeaders,
	checkOrigin,
	checkPostHeaders,
	checkProtocolVersion,
	readBodyWithin,
} from "./transport-checks.ts";

type AppContext = Context<{ Bindings: Env }>;

const ALLOWED_METHODS = "GET, POST, DELETE";

/**
 * `POST|GET|DELETE /mcp/:server`: one upstream, transparent. Every check that
 * can fail without touching a session runs first, in this order: method,
 * Origin, API key, protocol version, endpoint, then the method's own checks.
 */
export async function handleServerEndpoint(c: AppContext): Promise<Response> {
	const request = c.req.raw;
	const env = c.env;
	const settings = settingsFrom(env);
	const method = request.method;
	if (method !== "POST" && method !== "GET" && method !== "DELETE") {
		throw new GatewayError("method_not_allowed", `Method Not Allowed: use ${ALLOWED_METHODS}.`, {
			headers: { allow: ALLOWED_METHODS },
		});
	}
	checkOrigin(request, settings);
	const key = await authenticate(request, env);
	checkProtocolVersion(request);

	const serverName = c.req.param("server") ?? "";
	if (!SERVER_NAME.test(serverName) || !keyMayUseServer(key, serverName)) throw unknownEndpoint(serverName);
	const scope: SessionScope = { keyId: key.id, userPath: key.userPath, endpoint: `/mcp/${serverName}` };
	const sessionId = request.headers.get("mcp-session-id");

	if (method === "GET") {
		checkGetHeaders(request);
		const stub = await verifiedSessionStub(env, settings, sessionId);
		return stub.stream(scope, request.headers.get("last-event-id"));
	}
	if (method === "DELETE") {
		const stub = await verifiedSessionStub(env, settings, sessionId);
		return stub.end(scope);
	}

	checkPostHeaders(request);
	const message = parseClientMessage(await readBodyWithin(request, settings.maxBodyBytes));
	if (message.kind !== "initialize") {
		const stub = await verifiedSessionStub(env, settings, sessionId);
		return stub.post(scope, message);
	}
	if (sessionId !== null) {
		throw new GatewayError(
			"bad_request",
			"Bad Request: initialize opens a new session and must not carry an Mcp-Session-Id header.",
		);
	}
	const server = await registryStub(env).getServer(serverName);
	if (!server) throw unknownEndpoint(serverName);
	const secret = requireSessionSecret(settings);
	const newSessionId = await mintSessionId(secret);
	const stub = await sessionStub(env, newSessionId);
	const { opened, reply } = await stub.open({
		scope,
		request: message.message,
		clientCapabilities: message.params.capabilities,
		server: {
			name: server.name,
			url: server.url,
			headers: server.headers,
			timeoutSeconds: server.timeoutSeconds,
			generation: server.generation,
		},
	});
	return Response.json(reply, { headers: opened ? { "mcp-session-id": newSessionId } : {} });
}

function unknownEndpoint(name: string): GatewayError {
	return new GatewayError("not_found", `Not Found: there is no MCP server '${name}' for this API key.`);
}
