import { createRoute, OpenAPIHono } from "@hono/zod-openapi";
import { settingsFrom } from "../config.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import { secretsEqual } from "../primitives/crypto.ts";
import { accessRuleRoutes } from "./admin/access-rules.ts";
import { approvalRoutes } from "./admin/approvals.ts";
import { connectionRoutes } from "./admin/connections.ts";
import { connectorTokenRoutes } from "./admin/connector-tokens.ts";
import { type ApiDocument, docsPage } from "./admin/docs-page.ts";
import { guardRoutes } from "./admin/guards.ts";
import { keyRoutes } from "./admin/keys.ts";
import type { AdminEnv, AdminRouter } from "./admin/kit.ts";
import { answer, withRefusals } from "./admin/kit.ts";
import { operationRoutes } from "./admin/operations.ts";
import { policyRoutes } from "./admin/policies.ts";
import { serverRoutes } from "./admin/servers.ts";
import { virtualServerRoutes } from "./admin/virtual-servers.ts";
import { bearerToken } from "./bearer.ts";

/** Where the admin API is mounted (app.ts); the document's paths carry it. */
export const ADMIN_PREFIX = "/admin";

const tags = ["reference"];

const openapiRoute = createRoute({
	method: "get",
	path: "/openapi.json",
	tags,
	summary: "This description, as OpenAPI 3.1",
	responses: withRefusals({ 200: answer("The OpenAPI 3.1 document of the admin API.") }),
});

const docsRoute = createRoute({
	method: "get",
	path: "/docs",
	tags,
	summary: "This description, as a page",
	description: "Rendered on the server from the OpenAPI document; no script.",
	responses: withRefusals({ 200: { description: "HTML.", content: { "text/html": { schema: { type: "string" } } } } }),
});

/**
 * `/admin/*`: registry management, allowed only with `Authorization: Bearer <ADMIN_TOKEN>`.
 * The description (`/admin/openapi.json`, `/admin/docs`) is behind the same token, and
 * opens also to an operator signed in to the dashboard, for reading only
 * (dashboard/reference-access.ts, which answers before this router sees the request).
 */
export function createAdminRoutes(): AdminRouter {
	const admin = new OpenAPIHono<AdminEnv>();

	admin.use("*", async (c, next) => {
		const expected = settingsFrom(c.env).adminToken;
		if (!expected) {
			throw new GatewayError("misconfigured", "The admin API is disabled: the ADMIN_TOKEN secret is not set.", {
				status: 503,
			});
		}
		if (!(await secretsEqual(bearerToken(c.req.raw) ?? "", expected))) {
			throw new GatewayError(
				"unauthenticated",
				"Unauthorized: send the admin token as 'Authorization: Bearer <token>'.",
				{
					headers: { "www-authenticate": 'Bearer realm="mcp-edge-gateway-admin"' },
				},
			);
		}
		await next();
	});

	admin.route("/", serverRoutes());
	admin.route("/", connectorTokenRoutes());
	admin.route("/", virtualServerRoutes());
	admin.route("/", keyRoutes());
	admin.route("/", accessRuleRoutes());
	admin.route("/", policyRoutes());
	admin.route("/", guardRoutes());
	admin.route("/", approvalRoutes());
	admin.route("/", connectionRoutes());
	admin.route("/", operationRoutes());

	let document: ApiDocument | undefined;
	const described = () => {
		document ??= adminDocument(admin);
		return document;
	};
	admin.openapi(openapiRoute, (c) => c.json(described()));
	admin.openapi(docsRoute, () => docsPage(described()));

	refuseOtherMethods(admin);
	return admin;
}

/** Admin errors are plain JSON, not JSON-RPC: `{ error: { kind, message } }`. */
export function adminErrorResponse(error: GatewayError): Response {
	return Response.json(
		{ error: { kind: error.kind, message: error.message } },
		{ status: error.status, headers: error.headers },
	);
}

/**
 * The OpenAPI 3.1 document of every route declared on `admin`, its paths
 * under `/admin` as clients call them. Built once per isolate, on first request.
 */
export function adminDocument(admin: AdminRouter): ApiDocument {
	admin.openAPIRegistry.registerComponent("securitySchemes", "adminToken", {
		type: "http",
		scheme: "bearer",
		description: "The ADMIN_TOKEN secret.",
	});
	const generated = admin.getOpenAPI31Document({
		openapi: "3.1.0",
		info: {
			title: "mcp-edge-gateway admin API",
			version: "1",
			description:
				"Registry management: servers and their connector tokens, virtual servers, API keys, access rules, tool policies, content guards, people's connections. Every route takes `Authorization: Bearer <ADMIN_TOKEN>` (this description also opens to the dashboard's sign-in); every refusal is `{ error: { kind, message } }`.",
		},
		security: [{ adminToken: [] }],
	});
	const paths = Object.fromEntries(
		Object.entries(generated.paths ?? {}).map(([path, item]) => [`${ADMIN_PREFIX}${path}`, item]),
	);
	// The page reads only a few parts of the document, through its own narrower type.
	return { ...generated, paths } as unknown as ApiDocument;
}

/**
 * Every admin path answers a method it does not take with 405 and `Allow`
 * (HEAD with GET, which Hono serves from the GET route), instead of the 404
 * a router gives, so a mistyped method is told apart from a mistyped path.
 * Registered after the routes, from them, so the list cannot drift.
 */
function refuseOtherMethods(admin: AdminRouter): void {
	const methods = new Map<string, string[]>();
	for (const route of admin.routes) {
		if (route.method === "ALL") continue;
		const known = methods.get(route.path) ?? [];
		known.push(...(route.method === "GET" ? ["GET", "HEAD"] : [route.method]));
		methods.set(route.path, known);
	}
	for (const [path, allowed] of methods) {
		const allow = [...new Set(allowed)].join(", ");
		admin.all(path, () => {
			throw new GatewayError("method_not_allowed", `Method Not Allowed: ${ADMIN_PREFIX}${path} takes ${allow}.`, {
				headers: { allow },
			});
		});
	}
}
