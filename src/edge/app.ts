import { type Context, Hono } from "hono";
import { cors } from "hono/cors";
import { createBrowserSignInRoutes } from "../auth/browser-sign-in.ts";
import { createOAuthRoutes } from "../auth/oauth-routes.ts";
import { type Settings, settingsFrom } from "../config.ts";
import { CONNECTOR_PATH } from "../connectors/frames.ts";
import type { Env } from "../env.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import { acceptsHtml } from "../primitives/media-type.ts";
import { kvRegistryReader, type RegistryReader } from "../registry/registry-reader.ts";
import { UnavailableOnFailure } from "../registry/registry-unavailable.ts";
import { GATEWAY_ATTRIBUTES, instrumentsOf, type RefusalKind } from "../telemetry/instruments.ts";
import { telemetryFor } from "../telemetry/telemetry.ts";
import { adminErrorResponse, createAdminRoutes } from "./admin-routes.ts";
import { createApproverRoutes } from "./approver-routes.ts";
import { createConnectRoutes } from "./connect-routes.ts";
import { handleConnectorDial } from "./connector-route.ts";
import { referenceForOperators } from "./dashboard/reference-access.ts";
import { createDashboardRoutes } from "./dashboard/routes.tsx";
import { homePage } from "./home-page.ts";
import { handleJwks } from "./jwks-route.ts";
import { admitMcpRequest } from "./mcp-admission.ts";
import { handleMcpEndpoint } from "./mcp-routes.ts";
import type { EdgeContext } from "./request-context.ts";
import { checkHost } from "./transport-checks.ts";

export interface AppOptions {
	/**
	 * The registry's read path, made once per request; tests swap in counting or failing readers. Default:
	 * Workers KV. Whatever it is, its failed reads reach the edge as `registry_unavailable` (`UnavailableOnFailure`).
	 */
	reader?: (env: Env, settings: Settings) => RegistryReader;
}

/** The stateless edge: authenticates, checks and routes; never holds session state. */
export function createApp(options: AppOptions = {}): Hono<EdgeContext> {
	const app = new Hono<EdgeContext>();
	const reader =
		options.reader ?? ((env: Env, settings: Settings) => kvRegistryReader(env.REGISTRY_KV, settings.kvCacheTtlSeconds));

	// Every answer, refusals included: a browser never sniffs a body into a type it was not sent as
	// (an upstream's text passed on, a reflected value), so only what the gateway labels runs as such.
	app.use("*", async (c, next) => {
		await next();
		const labelled = withNoSniff(c.res);
		if (labelled !== c.res) c.res = labelled;
	});
	// Before anything else: a configuration that cannot be safe refuses every request, and a
	// request for a host that is not the gateway's own (DNS rebinding) is refused unauthenticated.
	// Then the request's context is set, once (request-context.ts).
	app.use("*", async (c, next) => {
		const settings = settingsFrom(c.env);
		checkHost(c.req.raw, settings);
		c.set("settings", settings);
		c.set("reader", new UnavailableOnFailure(reader(c.env, settings)));
		c.set("waitUntil", waitUntilOf(c));
		await next();
	});
	app.get("/healthz", (c) => c.json({ ok: true }));
	// A person who opens the gateway's address gets a page saying what it is; anything else
	// (an MCP client probing `/`, a health checker) gets the 404 it always got.
	app.get("/", (c) =>
		acceptsHtml(c.req.header("accept"))
			? homePage(new URL(c.req.url).origin, c.get("settings").oauth.mode === "gateway")
			: c.notFound(),
	);
	// Browser clients on an allowed origin (ALLOWED_ORIGINS) need CORS, including
	// the preflight and a readable Mcp-Session-Id. Other origins get no CORS
	// headers, and their requests are refused with 403 by the Origin check.
	const corsForAllowedOrigins = cors({
		origin: (origin, c) => {
			const allowed = settingsFrom(c.env).allowedOrigins;
			return allowed.includes("*") || allowed.includes(origin) ? origin : null;
		},
		allowMethods: ["GET", "POST", "DELETE"],
		allowHeaders: [
			"Authorization",
			"Content-Type",
			"Accept",
			"Mcp-Session-Id",
			"Mcp-Protocol-Version",
			"Last-Event-ID",
		],
		exposeHeaders: ["Mcp-Session-Id", "WWW-Authenticate"],
		maxAge: 600,
	});
	// Most MCP clients are not browsers and send no Origin: they skip CORS entirely.
	app.use("/mcp/*", (c, next) => (c.req.header("origin") === undefined ? next() : corsForAllowedOrigins(c, next)));
	// The dashboard's pages first: /admin/ and /admin/ui/* are signed into with a cookie, not the bearer token.
	app.route("/", createDashboardRoutes());
	// The admin API's reference opens to the dashboard's sign-in too (reads only); the rest of /admin is the token's.
	app.use("/admin/*", referenceForOperators);
	app.route("/admin", createAdminRoutes());
	app.get("/.well-known/jwks.json", handleJwks);
	app.route("/", createOAuthRoutes());
	app.route("/", createBrowserSignInRoutes());
	app.route("/", createConnectRoutes());
	app.route("/", createApproverRoutes());
	app.get(`${CONNECTOR_PATH}/:server`, handleConnectorDial);
	app.all("/mcp", admitMcpRequest, handleMcpEndpoint);
	app.all("/mcp/:name", admitMcpRequest, handleMcpEndpoint);

	app.notFound((c) => {
		const error = new GatewayError(
			"not_found",
			`Not Found: ${new URL(c.req.url).pathname} is not an endpoint of this gateway.`,
		);
		return c.req.path.startsWith("/admin") ? adminErrorResponse(error) : error.toResponse();
	});

	app.onError((error, c) => {
		const failure =
			error instanceof GatewayError
				? error
				: new GatewayError("internal", "The gateway failed unexpectedly; the request was not completed.", {
						cause: error,
					});
		if (!(error instanceof GatewayError)) console.error("unhandled error", error);
		// MCP requests only: the admin API's and OAuth's own refusals are not the traffic these count.
		if (c.req.path === "/mcp" || c.req.path.startsWith("/mcp/")) countRefusal(c.env, failure, waitUntilOf(c));
		return c.req.path.startsWith("/admin") ? adminErrorResponse(failure) : failure.toResponse();
	});

	return app;
}

/**
 * The request's `waitUntil`, so background work (the rate limiters' verdicts)
 * outlives the response; without an execution context (a test calling the
 * app directly) the work simply runs on.
 */
function waitUntilOf(c: Context<EdgeContext>): (promise: Promise<unknown>) => void {
	try {
		const ctx = c.executionCtx;
		return (promise) => ctx.waitUntil(promise);
	} catch {
		return () => undefined;
	}
}

/**
 * The response with `X-Content-Type-Options: nosniff`. A response passed on
 * from elsewhere (a Durable Object, a fetch) may have immutable headers: it is
 * then rebuilt around the same body, which still streams.
 */
function withNoSniff(response: Response): Response {
	// A WebSocket handshake (a connector's) has no body to sniff, and rebuilding it would drop its socket.
	if (response.status === 101) return response;
	try {
		response.headers.set("x-content-type-options", "nosniff");
		return response;
	} catch (error) {
		if (!(error instanceof TypeError)) throw error;
		const headers = new Headers(response.headers);
		headers.set("x-content-type-options", "nosniff");
		return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
	}
}

/** The refusal kind (`mcp_gateway.refusal.kind`) of what the edge refuses itself; null: not a refusal. */
function refusalKindOf(failure: GatewayError): RefusalKind | null {
	switch (failure.kind) {
		case "unauthenticated":
		case "forbidden":
			return "auth";
		case "rate_limited":
			return "rate_limit";
		case "session_limit":
		case "too_many_in_flight":
			return "limit";
		case "forbidden_origin":
		case "forbidden_host":
			return "origin";
		case "not_found":
			return "unknown_endpoint";
		default:
			return null;
	}
}

/** Refusals the edge answers itself (401, 403, 404, 429), counted by kind; rate limits once more as such. */
function countRefusal(env: Env, failure: GatewayError, waitUntil: (promise: Promise<unknown>) => void): void {
	const telemetry = telemetryFor(env);
	const kind = telemetry.enabled ? refusalKindOf(failure) : null;
	if (kind === null) return;
	const instruments = instrumentsOf(telemetry);
	instruments.refusals.add(1, { [GATEWAY_ATTRIBUTES.refusalKind]: kind });
	if (kind === "rate_limit") instruments.rateLimited.add(1);
	telemetry.flush(waitUntil);
}
