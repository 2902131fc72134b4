import { type Context, Hono, type MiddlewareHandler } from "hono";
import { settingsFrom } from "../config.ts";
import type { Env } from "../env.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import type { RegistryReader } from "../registry/registry-reader.ts";
import { AUTHORIZE_PATH, authorizationServer, oauthKv, REGISTER_PATH, TOKEN_PATH } from "./authorization-server.ts";
import { errorPage } from "./pages.ts";
import { METADATA_PREFIX, protectedResourceMetadata } from "./protected-resource.ts";
import { oauthEndpointRefusal } from "./rate-limits.ts";
import { createSignInRoutes } from "./sign-in-routes.ts";

type OAuthEnv = { Bindings: Env; Variables: { reader: RegistryReader } };

/** The path suffixes whose resource metadata exists: the origin, `/mcp`, and every `/mcp/<name>`. */
const RESOURCE_PATH = /^(\/mcp(\/[a-z0-9][a-z0-9-]{0,31})?)?$/;

/**
 * OAuth's public face: the protected-resource metadata of every `/mcp...`
 * endpoint (RFC 9728, at the origin and path-suffixed), and, when the
 * gateway is the authorization server, its metadata, token, registration and
 * revocation endpoints (the library's) and the sign-in pages (ours). Those
 * that may write to KV before anyone is authenticated are rate limited per
 * client address first.
 */
export function createOAuthRoutes(): Hono<OAuthEnv> {
	const routes = new Hono<OAuthEnv>();

	routes.get(`${METADATA_PREFIX}/*`, (c) => resourceMetadata(c, c.req.path.slice(METADATA_PREFIX.length)));
	routes.get(METADATA_PREFIX, (c) => resourceMetadata(c, ""));
	// Browser clients send MCP-Protocol-Version with their discovery requests, which needs a preflight.
	const preflight = () =>
		new Response(null, {
			status: 204,
			headers: {
				"access-control-allow-origin": "*",
				"access-control-allow-methods": "GET",
				"access-control-allow-headers": "*",
				"access-control-max-age": "600",
			},
		});
	routes.options(METADATA_PREFIX, preflight);
	routes.options(`${METADATA_PREFIX}/*`, preflight);

	const authorizationServerEndpoint = (c: Context<OAuthEnv>) => {
		if (settingsFrom(c.env).oauth.mode !== "gateway") {
			throw new GatewayError("not_found", "Not Found: this gateway is not an OAuth authorization server.");
		}
		oauthKv(c.env);
		// The library's ExecutionContext type is a newer workers-types' (one with `tracing`); the runtime object is the same.
		const ctx = c.executionCtx as unknown as Parameters<ReturnType<typeof authorizationServer>["fetch"]>[2];
		return authorizationServer(new URL(c.req.url).origin, settingsFrom(c.env)).fetch(c.req.raw, c.env, ctx);
	};
	// Registration, authorization and tokens write to KV for anyone who asks: limited per address.
	routes.use(TOKEN_PATH, limitedPerAddress(oauthJsonRefusal));
	routes.use(REGISTER_PATH, limitedPerAddress(oauthJsonRefusal));
	routes.use(AUTHORIZE_PATH, limitedPerAddress(pageRefusal));
	routes.all("/.well-known/oauth-authorization-server", authorizationServerEndpoint);
	routes.all(TOKEN_PATH, authorizationServerEndpoint);
	routes.all(REGISTER_PATH, authorizationServerEndpoint);
	routes.route("/", createSignInRoutes());
	return routes;
}

/** Public and cacheable for a short while: clients (browsers too) read it before they have any credentials. */
function resourceMetadata(c: Context<OAuthEnv>, suffix: string): Response {
	const metadata = RESOURCE_PATH.test(suffix)
		? protectedResourceMetadata(settingsFrom(c.env), new URL(c.req.url).origin)
		: null;
	if (!metadata) {
		throw new GatewayError("not_found", `Not Found: no protected resource metadata for '${suffix || "/"}'.`);
	}
	return Response.json(metadata, {
		headers: { "access-control-allow-origin": "*", "cache-control": "public, max-age=300" },
	});
}

/**
 * Refuses a call from an address over its rate of authorization-server calls
 * (429 with Retry-After, rendered by `refusal`), when the gateway is the
 * authorization server; otherwise the endpoint answers as it would.
 */
function limitedPerAddress(refusal: (error: GatewayError) => Response): MiddlewareHandler<OAuthEnv> {
	return async (c, next) => {
		const settings = settingsFrom(c.env);
		const refused = settings.oauth.mode === "gateway" ? await oauthEndpointRefusal(c.env, settings, c.req.raw) : null;
		if (refused) return refusal(refused);
		await next();
	};
}

/** An OAuth client reads the token and registration endpoints' errors as RFC 6749 §5.2 JSON. */
function oauthJsonRefusal(error: GatewayError): Response {
	return Response.json(
		{ error: "temporarily_unavailable", error_description: error.message },
		{ status: error.status, headers: { ...error.headers, "cache-control": "no-store" } },
	);
}

/** A person at a browser reads /authorize's: a page with the sentence. */
function pageRefusal(error: GatewayError): Response {
	const page = errorPage(error.status, error.message);
	for (const [name, value] of Object.entries(error.headers)) page.headers.set(name, value);
	return page;
}
