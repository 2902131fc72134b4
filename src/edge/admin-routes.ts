import { type Context, Hono } from "hono";
import type { z } from "zod";
import { oauthKv, revokePersonGrants, userIdOf } from "../auth/authorization-server.ts";
import { settingsFrom } from "../config.ts";
import { CONNECT_CALLBACK_PATH } from "../credentials/client-registration.ts";
import type { Env } from "../env.ts";
import { PolicyInputSchema } from "../governance/policy-schema.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import { secretsEqual } from "../primitives/crypto.ts";
import { AccessRuleInputSchema, RuleNameSchema } from "../registry/access-rules.ts";
import { PolicyNameSchema } from "../registry/policy-records.ts";
import { registryStub } from "../registry/registry-stub.ts";
import {
	describeIssues,
	KeyInputSchema,
	ServerInputSchema,
	ServerNameSchema,
	VirtualServerInputSchema,
} from "../registry/schemas.ts";
import { ToolApprovalInputSchema } from "../registry/tool-pins.ts";
import { audit } from "./admin-audit.ts";
import { maskServer, showAccessRule, showPolicy, showVirtualServer } from "./admin-views.ts";
import { bearerToken } from "./bearer.ts";
import { disconnected, disconnectedEverywhere, disconnectedUnderRule } from "./connection-events.ts";
import { checkServer, wantsCheck } from "./server-check.ts";
import { approveTools, toolsView } from "./server-tools.ts";
import { sessionStub } from "./session-routing.ts";
import { isJsonContentType } from "./transport-checks.ts";

type AdminEnv = { Bindings: Env };

async function parseJsonBody<T extends z.ZodType>(c: Context<AdminEnv>, schema: T): Promise<z.output<T>> {
	if (!isJsonContentType(c.req.header("content-type") ?? null)) {
		throw new GatewayError("unsupported_media_type", "Unsupported Media Type: admin bodies must be application/json.");
	}
	let value: unknown;
	try {
		value = await c.req.json();
	} catch (error) {
		throw new GatewayError("bad_request", "Bad Request: the body is not valid JSON.", { cause: error });
	}
	const parsed = schema.safeParse(value);
	if (!parsed.success) throw new GatewayError("bad_request", `Bad Request: ${describeIssues(parsed.error)}.`);
	return parsed.data;
}

/** The `:name` parameter; `what` names its kind in the error ("server", "virtual server"). */
function parseServerName(c: Context<AdminEnv>, what = "server"): string {
	const parsed = ServerNameSchema.safeParse(c.req.param("name"));
	if (!parsed.success)
		throw new GatewayError("bad_request", `Bad Request: ${what} name ${parsed.error.issues[0]?.message}.`);
	return parsed.data;
}

function parsePolicyName(c: Context<AdminEnv>): string {
	const parsed = PolicyNameSchema.safeParse(c.req.param("name"));
	if (!parsed.success)
		throw new GatewayError("bad_request", `Bad Request: policy name ${parsed.error.issues[0]?.message}.`);
	return parsed.data;
}

/** The one name an oauth server cannot have: its connect page would be the gateway's OAuth callback. */
const RESERVED_CONNECT_NAME = CONNECT_CALLBACK_PATH.slice(CONNECT_CALLBACK_PATH.lastIndexOf("/") + 1);

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

/** `/admin/*`: registry management, allowed only with `Authorization: Bearer <ADMIN_TOKEN>`. */
export function createAdminRoutes(): Hono<AdminEnv> {
	const admin = new Hono<AdminEnv>();

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

	admin.get("/servers", async (c) => {
		const servers = await registryStub(c.env).listServers();
		return c.json({ servers: servers.map(maskServer) });
	});

	/** `?check=true` also asks the server whether it answers, as registering it does. */
	admin.get("/servers/:name", async (c) => {
		const name = parseServerName(c);
		const check = wantsCheck(c, false);
		const server = await registryStub(c.env).getServer(name);
		if (!server) throw new GatewayError("not_found", `Not Found: no server named '${name}'.`);
		return c.json(check ? { ...maskServer(server), check: await checkServer(c.env, server) } : maskServer(server));
	});

	/**
	 * Registers a server whether or not it answers now (it may be down for a
	 * minute), and says which with `check` (one bounded probe; `?check=false`
	 * skips it, for bulk registration).
	 */
	admin.put("/servers/:name", async (c) => {
		const name = parseServerName(c);
		const check = wantsCheck(c, true);
		const input = await parseJsonBody(c, ServerInputSchema);
		if (name === RESERVED_CONNECT_NAME && input.auth.type === "oauth") {
			throw new GatewayError(
				"bad_request",
				`Bad Request: an oauth server cannot be named '${RESERVED_CONNECT_NAME}': /connect/${RESERVED_CONNECT_NAME} is where authorization servers send people back.`,
			);
		}
		if (new URL(input.url).protocol === "http:" && !settingsFrom(c.env).allowHttpUpstreams) {
			throw new GatewayError(
				"bad_request",
				"Bad Request: url: plain http upstreams are refused (credentials and calls would travel unencrypted); use https, or set ALLOW_HTTP_UPSTREAMS=true for local development.",
			);
		}
		const result = await registryStub(c.env).putServer(name, input);
		if ("conflict" in result) throw new GatewayError("conflict", `Conflict: ${result.conflict}.`);
		audit(result.created ? "server.created" : "server.replaced", name);
		const shown = maskServer(result.server);
		const status = result.created ? 201 : 200;
		return c.json(check ? { ...shown, check: await checkServer(c.env, result.server) } : shown, status);
	});

	/** Each tool with its pinning state: approved, changed (with the fields), new, removed. */
	admin.get("/servers/:name/tools", async (c) => c.json(await toolsView(c.env, parseServerName(c))));

	/** Approves every tool the server lists now, or the named ones (`{ "tools": [...] }`). */
	admin.post("/servers/:name/tools/approve", async (c) => {
		const name = parseServerName(c);
		const input = await parseJsonBody(c, ToolApprovalInputSchema);
		const approved = await approveTools(c.env, name, input);
		audit("server.tools_approved", name);
		return c.json(approved);
	});

	admin.delete("/servers/:name", async (c) => {
		const name = parseServerName(c);
		if (!(await registryStub(c.env).deleteServer(name))) {
			throw new GatewayError("not_found", `Not Found: no server named '${name}'.`);
		}
		audit("server.deleted", name);
		return c.body(null, 204);
	});

	admin.get("/virtual-servers", async (c) => {
		const virtualServers = await registryStub(c.env).listVirtualServers();
		return c.json({ virtualServers: virtualServers.map(showVirtualServer) });
	});

	admin.get("/virtual-servers/:name", async (c) => {
		const name = parseServerName(c, "virtual server");
		const virtualServer = await registryStub(c.env).getVirtualServer(name);
		if (!virtualServer) throw new GatewayError("not_found", `Not Found: no virtual server named '${name}'.`);
		return c.json(showVirtualServer(virtualServer));
	});

	admin.put("/virtual-servers/:name", async (c) => {
		const name = parseServerName(c, "virtual server");
		const input = await parseJsonBody(c, VirtualServerInputSchema);
		const result = await registryStub(c.env).putVirtualServer(name, input);
		if ("conflict" in result) throw new GatewayError("conflict", `Conflict: ${result.conflict}.`);
		if ("invalid" in result) throw new GatewayError("bad_request", `Bad Request: ${result.invalid}.`);
		audit(result.created ? "virtual_server.created" : "virtual_server.replaced", name);
		return c.json(showVirtualServer(result.virtualServer), result.created ? 201 : 200);
	});

	admin.delete("/virtual-servers/:name", async (c) => {
		const name = parseServerName(c, "virtual server");
		if (!(await registryStub(c.env).deleteVirtualServer(name))) {
			throw new GatewayError("not_found", `Not Found: no virtual server named '${name}'.`);
		}
		audit("virtual_server.deleted", name);
		return c.body(null, 204);
	});

	admin.post("/keys", async (c) => {
		const input = await parseJsonBody(c, KeyInputSchema);
		const result = await registryStub(c.env).createKey(input);
		if ("invalid" in result) throw new GatewayError("bad_request", `Bad Request: ${result.invalid}.`);
		const { record, key } = result;
		audit("key.created", record.id);
		return c.json({ ...record, createdAt: new Date(record.createdAt).toISOString(), key }, 201);
	});

	admin.get("/keys", async (c) => {
		const keys = await registryStub(c.env).listKeys();
		return c.json({ keys: keys.map((key) => ({ ...key, createdAt: new Date(key.createdAt).toISOString() })) });
	});

	admin.delete("/keys/:id", async (c) => {
		const id = c.req.param("id");
		if (!(await registryStub(c.env).revokeKey(id))) {
			throw new GatewayError("not_found", `Not Found: no API key with id '${id}'.`);
		}
		audit("key.deleted", id);
		return c.body(null, 204);
	});

	/**
	 * Access rules: which signed-in identities (OAuth) may use which servers.
	 * Like keys, a rule grants servers, a user path and a session cap; the first
	 * rule (by priority, then name) whose match holds for the identity decides.
	 */
	admin.put("/access-rules/:name", async (c) => {
		const parsed = RuleNameSchema.safeParse(c.req.param("name"));
		if (!parsed.success) {
			throw new GatewayError("bad_request", `Bad Request: access rule name ${parsed.error.issues[0]?.message}.`);
		}
		const input = await parseJsonBody(c, AccessRuleInputSchema);
		const result = await registryStub(c.env).putAccessRule(parsed.data, input);
		if ("invalid" in result) throw new GatewayError("bad_request", `Bad Request: ${result.invalid}.`);
		const { rule, created } = result;
		audit(created ? "access_rule.created" : "access_rule.replaced", rule.name);
		return c.json(showAccessRule(rule), created ? 201 : 200);
	});

	admin.get("/access-rules", async (c) => {
		const rules = await registryStub(c.env).listAccessRules();
		return c.json({ accessRules: rules.map(showAccessRule) });
	});

	admin.delete("/access-rules/:name", async (c) => {
		const name = c.req.param("name");
		if (!(await registryStub(c.env).deleteAccessRule(name))) {
			throw new GatewayError("not_found", `Not Found: no access rule named '${name}'.`);
		}
		// What people connected under the rule goes with it: their tokens are deleted and revoked.
		await disconnectedUnderRule(c.env, name);
		audit("access_rule.deleted", name);
		return c.body(null, 204);
	});

	/**
	 * Tool policies: CEL expressions that allow or deny tools to callers, on
	 * lists and calls (src/governance/policies.ts). An expression that does not
	 * compile is refused here with the compiler's message, and never published.
	 */
	admin.put("/policies/:name", async (c) => {
		const name = parsePolicyName(c);
		const input = await parseJsonBody(c, PolicyInputSchema);
		const result = await registryStub(c.env).putPolicy(name, input);
		if ("invalid" in result) throw new GatewayError("bad_request", `Bad Request: ${result.invalid}.`);
		const { policy, created } = result;
		audit(created ? "policy.created" : "policy.replaced", policy.name);
		return c.json(showPolicy(policy), created ? 201 : 200);
	});

	admin.get("/policies", async (c) => {
		const policies = await registryStub(c.env).listPolicies();
		return c.json({ policies: policies.map(showPolicy) });
	});

	admin.get("/policies/:name", async (c) => {
		const name = parsePolicyName(c);
		const policy = await registryStub(c.env).getPolicy(name);
		if (!policy) throw new GatewayError("not_found", `Not Found: no policy named '${name}'.`);
		return c.json(showPolicy(policy));
	});

	admin.delete("/policies/:name", async (c) => {
		const name = parsePolicyName(c);
		if (!(await registryStub(c.env).deletePolicy(name))) {
			throw new GatewayError("not_found", `Not Found: no policy named '${name}'.`);
		}
		audit("policy.deleted", name);
		return c.body(null, 204);
	});

	/**
	 * Who has connected their own account at an `oauth` server, and since
	 * when (`?server=<name>`): never a token, which stays in each person's vault.
	 */
	admin.get("/connections", async (c) => {
		const server = ServerNameSchema.safeParse(c.req.query("server"));
		if (!server.success) throw new GatewayError("bad_request", "Bad Request: name the server as ?server=<name>.");
		const rows = await registryStub(c.env).connections({ server: server.data });
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

	/**
	 * Disconnects one person (`?subject=<sub>`, with `&issuer=` when not the
	 * gateway's own issuer) or one API key (`?key=<id>`) from a server
	 * (`?server=`): the tokens are deleted and revoked at the upstream where it
	 * offers RFC 7009, and their live sessions lose the server at once.
	 */
	admin.delete("/connections", async (c) => {
		const server = ServerNameSchema.safeParse(c.req.query("server"));
		if (!server.success) throw new GatewayError("bad_request", "Bad Request: name the server as ?server=<name>.");
		const vault = await vaultNamed(c.env, c.req.query("subject"), c.req.query("issuer"), c.req.query("key"));
		const removed = await disconnected(c.env, vault, server.data);
		audit("connection.deleted", `${server.data} ${vault}`);
		return c.json({ disconnected: removed });
	});

	/**
	 * Cuts a person off at once: every grant they hold at the gateway's
	 * authorization server is revoked (`?subject=<sub>` at the OpenID Connect
	 * provider). Their tokens stop working; their sessions end at the next recheck.
	 */
	admin.delete("/oauth-grants", async (c) => {
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

	/**
	 * What one session has cost so far (storage operations, registry reads,
	 * upstream requests, the wall time its Durable Object was kept active). The
	 * session ID is sent in a header, as clients do, and only its digest is used.
	 */
	admin.get("/session-stats", async (c) => {
		const sessionId = c.req.header("mcp-session-id");
		if (!sessionId) throw new GatewayError("bad_request", "Bad Request: send the session's Mcp-Session-Id header.");
		const stub = await sessionStub(c.env, sessionId);
		return c.json(await stub.stats());
	});

	/** Requests the registry of record served since its instance started (only admin work, in steady state). */
	admin.get("/registry-stats", async (c) => c.json({ reads: await registryStub(c.env).readCount() }));

	/**
	 * Publishes the whole registry to Workers KV again: after a KV namespace was
	 * replaced or emptied, or to repair it. Answers how many records were
	 * published and how many still wait for a retry.
	 */
	admin.post("/sync", async (c) => {
		const result = await registryStub(c.env).sync();
		audit("registry.synced", "kv");
		return c.json(result);
	});

	refuseOtherMethods(admin);
	return admin;
}

/**
 * Every admin path answers a method it does not take with 405 and `Allow`
 * (HEAD with GET, which Hono serves from the GET route), instead of the 404
 * a router gives, so a mistyped method is told apart from a mistyped path.
 * Registered after the routes, from them, so the list cannot drift.
 */
function refuseOtherMethods(admin: Hono<AdminEnv>): void {
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
			throw new GatewayError("method_not_allowed", `Method Not Allowed: /admin${path} takes ${allow}.`, {
				headers: { allow },
			});
		});
	}
}
