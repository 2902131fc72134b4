import { createMiddleware } from "hono/factory";
import { limitKeyRate } from "../auth/rate-limits.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import { SERVER_NAME } from "../registry/schemas.ts";
import { type Authenticated, authenticate } from "./authenticate.ts";
import { unknownEndpoint } from "./endpoint-plan.ts";
import type { EdgeRequestContext, McpContext, McpEndpointContext } from "./request-context.ts";
import { checkOrigin } from "./transport-checks.ts";

const ALLOWED_METHODS = "GET, POST, DELETE";

/**
 * Admits a request to `/mcp` or `/mcp/:name` and sets who it is for: every
 * check that can fail without touching a session runs here, in this order:
 * the method, the Origin, the credential (counted against its rate limit),
 * the endpoint's name. Then the request's `principal` and session `scope`
 * are set once, for everything that serves it.
 */
export const admitMcpRequest = createMiddleware<McpEndpointContext>(async (c, next) => {
	const request = c.req.raw;
	const method = request.method;
	if (method !== "POST" && method !== "GET" && method !== "DELETE") {
		throw new GatewayError("method_not_allowed", `Method Not Allowed: use ${ALLOWED_METHODS}.`, {
			headers: { allow: ALLOWED_METHODS },
		});
	}
	checkOrigin(request, c.get("settings"));
	const principal = await admitted(c);
	const name = c.req.param("name");
	if (name !== undefined && !SERVER_NAME.test(name)) throw unknownEndpoint(name);
	c.set("principal", principal);
	c.set("scope", {
		keyId: principal.key.id,
		userPath: principal.key.userPath,
		endpoint: name ? `/mcp/${name}` : "/mcp",
		calling: { caller: principal.caller, origin: new URL(request.url).origin, subjectToken: principal.subjectToken },
	});
	await next();
});

/**
 * Authenticates an admitted request's credential again and counts it against
 * its rate limit, as itself: a long-lived request (a 2026-07-28 listen) is
 * admitted again at each of its windows. Throws when it is refused, or stands
 * for another key than the one that opened it.
 */
export async function admitAgain(c: McpContext): Promise<void> {
	const again = await admitted(c);
	if (again.key.id !== c.get("principal").key.id) {
		throw new GatewayError("unauthenticated", "The credential no longer stands for who opened this stream.");
	}
}

/** The key (or person) the request's credential stands for, counted against its rate limit; else 401 or 429. */
async function admitted(c: EdgeRequestContext): Promise<Authenticated> {
	const authenticated = await authenticate(c);
	limitKeyRate(c.env, c.get("settings"), authenticated.key, c.get("waitUntil"));
	return authenticated;
}
