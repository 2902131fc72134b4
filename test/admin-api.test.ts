import { env, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, inject, it, vi } from "vitest";
import { ADMIN_ACTIONS } from "../src/edge/admin-audit.ts";
import { createAdminRoutes } from "../src/edge/admin-routes.ts";
import { sha256Hex } from "../src/primitives/crypto.ts";
import { REGISTRY_NAME, type RegistryDO } from "../src/registry/registry-do.ts";
import { eventually } from "./support/eventually.ts";
import {
	admin,
	connectClient,
	createKey,
	gatewayFetch,
	openSession,
	rpc,
	TEST_ADMIN_BEARER,
	uniqueName,
} from "./support/gateway.ts";
import { hostileBase, hostileLog, hostileUrl } from "./support/hostile.ts";
import { identityLog, identityTenant } from "./support/identity-upstream.ts";
import { gatewayWith, ORIGIN } from "./support/oauth-client.ts";
import { registerServer, upstreamUrl } from "./support/upstreams.ts";

describe("admin API authentication", () => {
	it("refuses requests without the admin token with 401 and WWW-Authenticate", async () => {
		const response = await gatewayFetch("/admin/servers");
		expect(response.status).toBe(401);
		expect(response.headers.get("www-authenticate")).toMatch(/^Bearer/);
		expect(await response.json()).toMatchObject({ error: { kind: "unauthenticated" } });
	});

	it("refuses a wrong admin token with 401", async () => {
		const response = await gatewayFetch("/admin/servers", { headers: { authorization: "Bearer nope" } });
		expect(response.status).toBe(401);
	});

	it("refuses an API key in place of the admin token", async () => {
		const { key } = await createKey();
		const response = await gatewayFetch("/admin/keys", { headers: { authorization: `Bearer ${key}` } });
		expect(response.status).toBe(401);
	});
});

describe("admin API servers", () => {
	it("creates a server with 201, replaces it with 200 and keeps its generation", async () => {
		const name = uniqueName("srv");
		const created = await admin("PUT", `/servers/${name}`, { url: upstreamUrl("beta") });
		expect(created.status).toBe(201);
		const first = (await created.json()) as { generation: string };
		const replaced = await admin("PUT", `/servers/${name}`, { url: upstreamUrl("alpha"), timeoutSeconds: 5 });
		expect(replaced.status).toBe(200);
		const second = (await replaced.json()) as { generation: string; url: string; timeoutSeconds: number };
		expect(second).toMatchObject({ url: upstreamUrl("alpha"), timeoutSeconds: 5, generation: first.generation });
	});

	it("lists servers with header values masked, except values that are only secret references", async () => {
		const name = uniqueName("masked");
		await admin("PUT", `/servers/${name}`, {
			url: upstreamUrl("alpha"),
			headers: {
				Authorization: "Bearer literal-secret-token",
				"X-Team": "${UPSTREAM_TEAM}",
				"X-Api-Key": "Bearer ${UPSTREAM_TEAM}",
				"X-Mixed": "a${UPSTREAM_TEAM}",
			},
		});
		const listed = await admin("GET", "/servers");
		const text = await listed.text();
		expect(text).not.toContain("literal-secret-token");
		const { servers } = JSON.parse(text) as { servers: Array<{ name: string; headers: Record<string, string> }> };
		expect(servers.find((server) => server.name === name)?.headers).toEqual({
			Authorization: "***",
			"X-Team": "${UPSTREAM_TEAM}",
			"X-Api-Key": "Bearer ${UPSTREAM_TEAM}",
			"X-Mixed": "***",
		});
		const one = await admin("GET", `/servers/${name}`);
		expect(await one.text()).not.toContain("literal-secret-token");
	});

	it("rejects invalid names and non-http URLs with 400 naming the problem, reserved headers and malformed JSON with 400, and a body that is not JSON with 415", async () => {
		const badName = await admin("PUT", "/servers/Bad_Name", { url: upstreamUrl("beta") });
		expect(badName.status).toBe(400);
		expect(((await badName.json()) as { error: { message: string } }).error.message).toMatch(/server name/);

		const ftp = await admin("PUT", `/servers/${uniqueName("ftp")}`, { url: "ftp://example.com/mcp" });
		expect(ftp.status).toBe(400);
		expect(((await ftp.json()) as { error: { message: string } }).error.message).toMatch(
			/url: must be an http\(s\) URL/,
		);

		const reserved = await admin("PUT", `/servers/${uniqueName("hdr")}`, {
			url: upstreamUrl("beta"),
			headers: { "Mcp-Session-Id": "x" },
		});
		expect(reserved.status).toBe(400);

		const notJson = await gatewayFetch(`/admin/servers/${uniqueName("x")}`, {
			method: "PUT",
			headers: { authorization: `Bearer ${TEST_ADMIN_BEARER}`, "content-type": "application/json" },
			body: "{not json",
		});
		expect(notJson.status).toBe(400);

		const textBody = await gatewayFetch(`/admin/servers/${uniqueName("x")}`, {
			method: "PUT",
			headers: { authorization: `Bearer ${TEST_ADMIN_BEARER}`, "content-type": "text/plain" },
			body: "{}",
		});
		expect(textBody.status).toBe(415);
	});

	it("a rejected PUT changes nothing", async () => {
		const name = uniqueName("keep");
		await admin("PUT", `/servers/${name}`, { url: upstreamUrl("beta") });
		const rejected = await admin("PUT", `/servers/${name}`, { url: "not a url" });
		expect(rejected.status).toBe(400);
		const after = (await (await admin("GET", `/servers/${name}`)).json()) as { url: string };
		expect(after.url).toBe(upstreamUrl("beta"));
	});

	it("deletes a server with 204, then answers 404 for it", async () => {
		const name = uniqueName("gone");
		await admin("PUT", `/servers/${name}`, { url: upstreamUrl("beta") });
		expect((await admin("DELETE", `/servers/${name}`)).status).toBe(204);
		expect((await admin("GET", `/servers/${name}`)).status).toBe(404);
		expect((await admin("DELETE", `/servers/${name}`)).status).toBe(404);
	});
});

describe("registering a server says whether it answers", () => {
	interface Check {
		reachable: boolean;
		speaksMcp: boolean;
		era: string | null;
		detail: string;
		needsCaller?: string;
	}
	async function put(body: unknown, query = "", name = uniqueName("checked")) {
		const response = await admin("PUT", `/servers/${name}${query}`, body);
		return { name, status: response.status, body: (await response.json()) as { check?: Check; url?: string } };
	}

	it("a live 2025 SDK upstream is reachable and speaks MCP in the 2025 era, its credentials resolved as a client's call has them", async () => {
		const beta = await put({ url: upstreamUrl("beta") });
		expect(beta.status).toBe(201);
		expect(beta.body.check).toMatchObject({ reachable: true, speaksMcp: true, era: "2025" });
		const alpha = await put({
			url: upstreamUrl("alpha"),
			headers: { Authorization: "Bearer ${UPSTREAM_ALPHA_TOKEN}" },
		});
		expect(alpha.body.check).toMatchObject({ reachable: true, speaksMcp: true, era: "2025" });
	});

	it("a live 2026-07-28 SDK upstream is reachable and speaks MCP in the 2026-07-28 era", async () => {
		for (const which of ["modern", "dual"] as const) {
			const { status, body } = await put({ url: upstreamUrl(which) });
			expect(status).toBe(201);
			expect(body.check).toEqual({
				reachable: true,
				speaksMcp: true,
				era: "2026-07-28",
				detail: expect.stringMatching(/^It answered server\/discover with HTTP 200: supported versions .*2026-07-28/),
			});
		}
	});

	it("a dead port is registered all the same, and the check says it is unreachable", async () => {
		const { name, status, body } = await put({ url: "http://127.0.0.1:9/mcp" });
		expect(status).toBe(201);
		expect(body.check).toEqual({
			reachable: false,
			speaksMcp: false,
			era: null,
			detail: `Upstream server '${name}' is unreachable.`,
		});
		expect((await admin("GET", `/servers/${name}`)).status).toBe(200);
	});

	it("an unset ${UPSTREAM_...} is registered all the same; the check names the header and the variable, and nothing is sent", async () => {
		const tag = uniqueName("tag");
		const { status, body } = await put({
			url: hostileUrl("sink", tag),
			headers: { "X-Team-Token": "Bearer ${UPSTREAM_NEVER_SET}" },
		});
		expect(status).toBe(201);
		expect(body.check).toEqual({
			reachable: false,
			speaksMcp: false,
			era: null,
			detail:
				"Not asked: header X-Team-Token references ${UPSTREAM_NEVER_SET}, which is not set as a Worker secret or var.",
		});
		expect(await hostileLog(tag)).toEqual([]);
	});

	it("credentials the upstream refuses: reachable, and the check says they were rejected", async () => {
		const { body } = await put({ url: upstreamUrl("alpha") });
		expect(body.check).toMatchObject({ reachable: true, speaksMcp: false, era: null });
		expect(body.check).not.toHaveProperty("needsCaller");
		expect(body.check?.detail).toMatch(/rejected the gateway's credentials \(HTTP 401\)/);
	});

	it("an answer that is not JSON-RPC is reachable but not MCP", async () => {
		const { body } = await put({ url: `${hostileBase()}/no-such-route` });
		expect(body.check).toMatchObject({ reachable: true, speaksMcp: false, era: null });
		expect(body.check?.detail).toMatch(/HTTP 404: no JSON-RPC response, so it does not look like an MCP endpoint/);
	});

	it("a redirect is not followed: the check says so, and where it points hears nothing", async () => {
		const tag = uniqueName("tag");
		const elsewhere = uniqueName("tag");
		const { body } = await put({ url: hostileUrl("redirect", tag, { to: hostileUrl("sink", elsewhere) }) });
		expect(body.check).toMatchObject({ reachable: true, speaksMcp: false, era: null });
		expect(body.check?.detail).toMatch(/redirect \(HTTP 307\), which the gateway does not follow/);
		expect(await hostileLog(tag)).toHaveLength(1);
		expect(await hostileLog(elsewhere)).toEqual([]);
	});

	it("a pinned protocol is the era the check reports, with what the server said", async () => {
		const { body } = await put({ url: upstreamUrl("beta"), protocol: "2026-07-28" });
		expect(body.check).toMatchObject({ reachable: true, speaksMcp: true, era: "2026-07-28" });
		expect(body.check?.detail).toMatch(/pinned to 2026-07-28/);
	});

	it("the check is one request under a short timeout, whatever the server's own: an upstream that holds it is reported as not answering", async () => {
		const tag = uniqueName("tag");
		const started = Date.now();
		const { name, status, body } = await put({ url: hostileUrl("held-discover", tag), timeoutSeconds: 60 });
		expect(Date.now() - started).toBeLessThan(9_000);
		expect(status).toBe(201);
		expect(body.check).toEqual({
			reachable: false,
			speaksMcp: false,
			era: null,
			detail: `Upstream server '${name}' did not answer within 5 s.`,
		});
		expect((await hostileLog(tag)).map((entry) => entry.rpcMethod)).toEqual(["server/discover"]);
	});

	it("GET ?check=true repeats the check; GET without it, and PUT ?check=false, send nothing", async () => {
		const tag = uniqueName("tag");
		const name = uniqueName("checked");
		const quiet = await put({ url: hostileUrl("sink", tag) }, "?check=false", name);
		expect(quiet.status).toBe(201);
		expect(quiet.body.check).toBeUndefined();
		expect(await (await admin("GET", `/servers/${name}`)).json()).not.toHaveProperty("check");
		expect(await hostileLog(tag)).toEqual([]);
		const checked = (await (await admin("GET", `/servers/${name}?check=true`)).json()) as { check: Check };
		expect(checked.check).toMatchObject({ reachable: true, speaksMcp: true, era: "2025" });
		expect((await hostileLog(tag)).map((entry) => entry.rpcMethod)).toEqual(["server/discover"]);
	});

	it("a check value other than true or false is 400, and the server is not written", async () => {
		const { name, status } = await put({ url: upstreamUrl("beta") }, "?check=yes");
		expect(status).toBe(400);
		expect((await admin("GET", `/servers/${name}`)).status).toBe(404);
		expect((await admin("GET", `/servers/${name}?check=1`)).status).toBe(400);
	});

	describe("a server that takes each caller's own credentials answers the check's request for nobody with 401", () => {
		const oauthUpstream = () => `http://127.0.0.1:${inject("oauthUpstreamPort")}/mcp`;

		it("oauth: reachable, not a fault: needsCaller is oauth and the detail says each caller connects an account", async () => {
			const { body } = await put({ url: oauthUpstream(), auth: { type: "oauth" } });
			expect(body.check).toEqual({
				reachable: true,
				speaksMcp: false,
				era: null,
				needsCaller: "oauth",
				detail: expect.stringMatching(
					/^It refused the check's server\/discover with HTTP 401, as expected: its auth is oauth, so each caller connects their own account/,
				),
			});
		});

		it("identity: needsCaller is identity, and the check's request carried no assertion (the upstream refused it)", async () => {
			const tenant = identityTenant("check");
			const { body } = await put({ url: tenant.mcpUrl, auth: { type: "identity" } });
			expect(body.check).toEqual({
				reachable: true,
				speaksMcp: false,
				era: null,
				needsCaller: "identity",
				detail: expect.stringMatching(
					/HTTP 401, as expected: its auth is identity, so each call carries the gateway's signed assertion/,
				),
			});
			expect(await identityLog(tenant.base)).toMatchObject([{ rpcMethod: "server/discover", outcome: "refused" }]);
		});

		it("token-exchange: needsCaller is token-exchange, and nothing was exchanged for the check", async () => {
			const tenant = identityTenant("check-exchange");
			const { body } = await put({
				url: tenant.mcpUrl,
				auth: {
					type: "token-exchange",
					tokenEndpoint: `http://127.0.0.1:${inject("jwtIssuerPort")}/token`,
					audience: tenant.mcpUrl,
				},
			});
			expect(body.check).toMatchObject({ reachable: true, speaksMcp: false, era: null, needsCaller: "token-exchange" });
			expect(body.check?.detail).toMatch(/its auth is token-exchange, so each call carries the caller's own token/);
		});

		it("the same refusal from the same upstream registered with the operator's credentials is still the operator's fault", async () => {
			const { body } = await put({ url: oauthUpstream() });
			expect(body.check).toMatchObject({ reachable: true, speaksMcp: false, era: null });
			expect(body.check).not.toHaveProperty("needsCaller");
			expect(body.check?.detail).toMatch(/rejected the gateway's credentials \(HTTP 401\)/);
		});
	});
});

describe("admin API methods", () => {
	it("a method an admin path does not take is 405 with Allow naming those it takes, and changes nothing", async () => {
		const name = uniqueName("wrong-method");
		const cases: Array<[string, string, string]> = [
			["POST", `/servers/${name}`, "GET, HEAD, PUT, DELETE"],
			["PATCH", `/servers/${name}`, "GET, HEAD, PUT, DELETE"],
			["DELETE", "/servers", "GET, HEAD"],
			["POST", `/virtual-servers/${name}`, "GET, HEAD, PUT, DELETE"],
			["PUT", "/keys", "POST, GET, HEAD"],
			["GET", "/keys/key_abcdefghijkl", "DELETE"],
			["POST", `/access-rules/${name}`, "PUT, DELETE"],
			["POST", "/access-rules", "GET, HEAD"],
			["POST", `/policies/${name}`, "PUT, GET, HEAD, DELETE"],
			["DELETE", "/policies", "GET, HEAD"],
			["GET", "/oauth-grants", "DELETE"],
			["GET", "/sync", "POST"],
			["POST", "/registry-stats", "GET, HEAD"],
		];
		for (const [method, path, allow] of cases) {
			const response = await admin(method, path, method === "GET" ? undefined : { url: upstreamUrl("beta") });
			expect(response.status, `${method} ${path}`).toBe(405);
			expect(response.headers.get("allow"), `${method} ${path}`).toBe(allow);
			expect(await response.json()).toEqual({
				error: {
					kind: "method_not_allowed",
					message: `Method Not Allowed: /admin${path.replace(name, ":name").replace("key_abcdefghijkl", ":id")} takes ${allow}.`,
				},
			});
		}
		expect((await admin("GET", `/servers/${name}`)).status).toBe(404);
		expect((await admin("GET", `/virtual-servers/${name}`)).status).toBe(404);
	});

	it("the admin token is asked for before the method, and an unknown admin path is still 404", async () => {
		const unauthenticated = await gatewayFetch("/admin/sync", { method: "GET" });
		expect(unauthenticated.status).toBe(401);
		expect(unauthenticated.headers.get("allow")).toBeNull();
		expect((await admin("GET", "/no-such-thing")).status).toBe(404);
	});
});

describe("admin API keys", () => {
	it("returns the key once and lists keys without secrets", async () => {
		const server = await registerServer("alpha");
		const created = await admin("POST", "/keys", { name: "ci", userPath: "/team/a", servers: [server] });
		expect(created.status).toBe(201);
		const { id, key } = (await created.json()) as { id: string; key: string };
		expect(key).toMatch(/^mcpgw2_key_[A-Za-z0-9_-]{12}\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}$/);
		expect(key.startsWith(`mcpgw2_${id}.`)).toBe(true);
		const listed = await admin("GET", "/keys");
		const text = await listed.text();
		expect(text).not.toContain(key);
		const { keys } = JSON.parse(text) as { keys: Array<Record<string, unknown>> };
		expect(keys.find((k) => k.id === id)).toMatchObject({
			name: "ci",
			userPath: "/team/a",
			servers: [server],
			format: "self-verifying",
		});
	});

	it("stores only the SHA-256 digest of a key", async () => {
		const { key } = await createKey({ name: "digest-only" });
		const registry = env.REGISTRY.get(env.REGISTRY.idFromName(REGISTRY_NAME));
		const dump = await runInDurableObject(registry, (_instance: RegistryDO, state) =>
			JSON.stringify(state.storage.sql.exec("SELECT * FROM api_keys").toArray()),
		);
		expect(dump).not.toContain(key);
		expect(dump).toContain("digest-only");
		expect(dump).toContain(await sha256Hex(key));
	});

	it("rejects a bad key body with 400 in words", async () => {
		const response = await admin("POST", "/keys", { userPath: "no-slash", servers: ["UPPER"] });
		expect(response.status).toBe(400);
		const { error } = (await response.json()) as { error: { message: string } };
		expect(error.message).toMatch(/userPath: must be a path/);
		expect(error.message).toMatch(/servers\.0/);
	});

	it("a key's servers must name servers or virtual servers that exist: unknown names get 400 naming them, and no key is made", async () => {
		const server = await registerServer("beta");
		const virtual = uniqueName("vs");
		expect((await admin("PUT", `/virtual-servers/${virtual}`, { servers: [server] })).status).toBe(201);
		const name = uniqueName("typo-key");
		const typo = uniqueName("evrything");
		const response = await admin("POST", "/keys", { name, servers: [server, typo, virtual, typo] });
		expect(response.status).toBe(400);
		const { error } = (await response.json()) as { error: { kind: string; message: string } };
		expect(error).toEqual({
			kind: "bad_request",
			message: `Bad Request: servers: no server or virtual server named '${typo}'.`,
		});
		const { keys } = (await (await admin("GET", "/keys")).json()) as { keys: Array<{ name: string | null }> };
		expect(keys.some((key) => key.name === name)).toBe(false);
		// A server and a virtual server are both names a key may hold.
		const created = await admin("POST", "/keys", { name, servers: [server, virtual] });
		expect(created.status).toBe(201);
		expect(await created.json()).toMatchObject({ servers: [server, virtual] });
	});

	it("revokes a key with 204; revoking again is 404", async () => {
		const { id } = await createKey();
		expect((await admin("DELETE", `/keys/${id}`)).status).toBe(204);
		expect((await admin("DELETE", `/keys/${id}`)).status).toBe(404);
	});
});

/** The error message of an admin refusal. */
async function refusalMessage(response: Response): Promise<string> {
	return ((await response.json()) as { error: { message: string } }).error.message;
}

/** A slip of the keyboard: the name's last character typed twice (`demo` → `demoo`). */
const mistyped = (name: string) => `${name}${name.at(-1)}`;

describe("refusals say how to fix them", () => {
	it("an unknown field in a server body gets 400 naming the field it most likely meant, and nothing is registered", async () => {
		const name = uniqueName("notes");
		const response = await admin("PUT", `/servers/${name}`, { url: upstreamUrl("beta"), timeout: 5 });
		expect(response.status).toBe(400);
		expect(await refusalMessage(response)).toBe(
			'Bad Request: body: unknown field "timeout" (did you mean "timeoutSeconds"?).',
		);
		expect((await admin("GET", `/servers/${name}`)).status).toBe(404);
	});

	it("an unknown field nested in a body is named by its path, and one with nothing close lists the fields there are", async () => {
		const nested = await admin("PUT", `/servers/${uniqueName("oauth")}`, {
			url: upstreamUrl("beta"),
			auth: { type: "oauth", clientid: "gateway" },
		});
		expect(nested.status).toBe(400);
		expect(await refusalMessage(nested)).toBe(
			'Bad Request: auth: unknown field "clientid" (did you mean "clientId"?).',
		);
		const key = await admin("POST", "/keys", { user_path: "/team/a" });
		expect(key.status).toBe(400);
		expect(await refusalMessage(key)).toBe('Bad Request: body: unknown field "user_path" (did you mean "userPath"?).');
		const far = await admin("PUT", `/servers/${uniqueName("far")}`, { url: upstreamUrl("beta"), colour: "blue" });
		expect(far.status).toBe(400);
		expect(await refusalMessage(far)).toBe(
			'Bad Request: body: unknown field "colour"; the fields are url, connector, openapi, headers, timeoutSeconds, protocol, auth, tools, prompts, resources, pinning, captureArguments.',
		);
	});

	it("a mistyped server in a key's servers, a virtual server's members or a rule's servers gets 400 with the server most likely meant, and nothing is written", async () => {
		const server = await registerServer("beta");
		const typo = mistyped(server);
		const key = await admin("POST", "/keys", { name: uniqueName("typo-key"), servers: [typo] });
		expect(key.status).toBe(400);
		expect(await refusalMessage(key)).toBe(
			`Bad Request: servers: no server or virtual server named '${typo}' (did you mean '${server}'?).`,
		);
		const virtual = uniqueName("vs");
		const members = await admin("PUT", `/virtual-servers/${virtual}`, { servers: [typo] });
		expect(members.status).toBe(400);
		expect(await refusalMessage(members)).toBe(
			`Bad Request: servers: no server named '${typo}' (did you mean '${server}'?).`,
		);
		expect((await admin("GET", `/virtual-servers/${virtual}`)).status).toBe(404);
		const rule = uniqueName("rule");
		const granted = await admin("PUT", `/access-rules/${rule}`, { match: { subject: "alice" }, servers: [typo] });
		expect(granted.status).toBe(400);
		expect(await refusalMessage(granted)).toBe(
			`Bad Request: servers: no server or virtual server named '${typo}' (did you mean '${server}'?).`,
		);
		const policy = await admin("PUT", `/policies/${uniqueName("policy")}`, {
			expression: "true",
			effect: "deny",
			applies: { servers: [typo] },
		});
		expect(policy.status).toBe(400);
		expect(await refusalMessage(policy)).toBe(
			`Bad Request: applies.servers: no server named '${typo}' (did you mean '${server}'?).`,
		);
	});

	it("a server, virtual server or policy that is not there gets 404 with the name most likely meant, and none when nothing is close", async () => {
		const server = await registerServer("beta");
		const shown = await admin("GET", `/servers/${mistyped(server)}`);
		expect(shown.status).toBe(404);
		expect(await refusalMessage(shown)).toBe(
			`Not Found: no server named '${mistyped(server)}' (did you mean '${server}'?).`,
		);
		const deleted = await admin("DELETE", `/servers/${mistyped(server)}`);
		expect(await refusalMessage(deleted)).toContain(`(did you mean '${server}'?)`);
		expect((await admin("GET", `/servers/${server}`)).status).toBe(200);
		const virtual = uniqueName("vs");
		expect((await admin("PUT", `/virtual-servers/${virtual}`, { servers: [server] })).status).toBe(201);
		expect(await refusalMessage(await admin("GET", `/virtual-servers/${mistyped(virtual)}`))).toBe(
			`Not Found: no virtual server named '${mistyped(virtual)}' (did you mean '${virtual}'?).`,
		);
		const nothingLike = "qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq";
		expect(await refusalMessage(await admin("GET", `/policies/${nothingLike}`))).toBe(
			`Not Found: no policy named '${nothingLike}'.`,
		);
	});
});

describe("admin cost reports", () => {
	it("reports a session's storage writes, registry reads and upstream requests, and the registry's reads", async () => {
		const server = await registerServer("beta");
		const { key } = await createKey();
		const sessionId = await openSession(`/mcp/${server}`, key);
		await (await rpc(`/mcp/${server}`, key, sessionId, { jsonrpc: "2.0", id: 1, method: "tools/list" })).text();
		const stats = await gatewayFetch("/admin/session-stats", {
			headers: { authorization: `Bearer ${TEST_ADMIN_BEARER}`, "mcp-session-id": sessionId },
		});
		expect(stats.status).toBe(200);
		expect(await stats.json()).toMatchObject({ storageWrites: 2, registryReads: 0, upstreamRequests: 3 });
		const registry = await admin("GET", "/registry-stats");
		expect(((await registry.json()) as { reads: number }).reads).toBeGreaterThan(0);
		const refused = await gatewayFetch("/admin/session-stats", { headers: { "mcp-session-id": sessionId } });
		expect(refused.status).toBe(401);
	});
});

describe("every admin action is one audit line", () => {
	afterEach(() => {
		vi.restoreAllMocks();
	});

	/** The gateway as its own authorization server, so that grant revocation is an action it takes. */
	const gateway = gatewayWith({
		OIDC_ISSUER: inject("idpIssuer"),
		OIDC_CLIENT_ID: "mcp-edge-gateway",
		OIDC_CLIENT_SECRET: "test-oidc-client-secret-0123456789",
	});
	/** Every mutating admin route, as the router has it: what the test below must exercise, each once at least. */
	const mutatingRoutes = createAdminRoutes()
		.routes.filter((route) => route.method !== "GET" && route.method !== "ALL")
		.map((route) => `${route.method} ${route.path}`);

	it("all 26 actions (servers, their tools approved, connector tokens, virtual servers, keys, access rules, policies, content guards, approvals approved and denied, grant revocation, a connection removed, sync) log one line each with actor, action and target; refusals and reads log none; no line holds a secret", async () => {
		const lines: string[] = [];
		for (const level of ["log", "info", "warn", "error", "debug"] as const) {
			vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
				lines.push(args.map((arg) => (typeof arg === "string" ? arg : (JSON.stringify(arg) ?? String(arg)))).join(" "));
			});
		}
		const exercised = new Set<string>();
		const act = async (method: string, path: string, route: string, body?: unknown) => {
			exercised.add(`${method} ${route}`);
			const headers: Record<string, string> = { authorization: `Bearer ${TEST_ADMIN_BEARER}` };
			if (body !== undefined) headers["content-type"] = "application/json";
			const response = await gateway(`${ORIGIN}/admin${path}`, {
				method,
				headers,
				body: body === undefined ? undefined : JSON.stringify(body),
			});
			return { status: response.status, body: (await response.json().catch(() => null)) as Record<string, unknown> };
		};
		const secrets = ["query-secret-5d1e", "header-secret-9f2a"];
		const server = uniqueName("audited");
		const virtual = uniqueName("audited-vs");
		const rule = uniqueName("audited-rule");
		const policy = uniqueName("audited-policy");
		const guard = uniqueName("audited-guard");
		const subject = uniqueName("person");
		const withSecrets = {
			url: `${upstreamUrl("beta")}?token=${secrets[0]}`,
			headers: { Authorization: `Bearer ${secrets[1]}` },
		};

		expect((await act("PUT", `/servers/${server}`, "/servers/:name", withSecrets)).status).toBe(201);
		expect((await act("PUT", `/servers/${server}`, "/servers/:name", withSecrets)).status).toBe(200);
		expect((await act("GET", `/servers/${server}/tools`, "/servers/:name/tools")).status).toBe(200);
		expect(
			(await act("POST", `/servers/${server}/tools/approve`, "/servers/:name/tools/approve", { tools: ["nope"] }))
				.status,
		).toBe(400);
		expect((await act("POST", `/servers/${server}/tools/approve`, "/servers/:name/tools/approve", {})).status).toBe(
			200,
		);
		expect(
			(await act("PUT", `/virtual-servers/${virtual}`, "/virtual-servers/:name", { servers: [server] })).status,
		).toBe(201);
		expect(
			(
				await act("PUT", `/virtual-servers/${virtual}`, "/virtual-servers/:name", {
					servers: [server],
					userPaths: ["/team"],
				})
			).status,
		).toBe(200);
		const created = await act("POST", "/keys", "/keys", { name: "audited", servers: [virtual] });
		expect(created.status).toBe(201);
		const keyId = String(created.body.id);
		secrets.push(String(created.body.key));
		// Refused and read-only requests are no action.
		expect((await act("POST", "/keys", "/keys", { servers: [uniqueName("typo")] })).status).toBe(400);
		expect((await act("GET", "/keys", "/keys")).status).toBe(200);
		expect((await act("DELETE", "/keys/key_nonexistent0", "/keys/:id")).status).toBe(404);
		expect((await act("DELETE", `/keys/${keyId}`, "/keys/:id")).status).toBe(204);
		const connector = uniqueName("audited-conn");
		expect((await act("PUT", `/servers/${connector}?check=false`, "/servers/:name", { connector: {} })).status).toBe(
			201,
		);
		const tokensRoute = "/servers/:name/connector-tokens";
		const madeToken = await act("POST", `/servers/${connector}/connector-tokens`, tokensRoute);
		expect(madeToken.status).toBe(201);
		const tokenId = String(madeToken.body.id);
		secrets.push(String(madeToken.body.token));
		expect((await act("POST", `/servers/${server}/connector-tokens`, tokensRoute)).status).toBe(400);
		expect((await act("GET", `/servers/${connector}/connector-tokens`, tokensRoute)).status).toBe(200);
		const tokenRoute = "/servers/:name/connector-tokens/:id";
		expect((await act("DELETE", `/servers/${connector}/connector-tokens/${tokenId}`, tokenRoute)).status).toBe(204);
		expect((await act("DELETE", `/servers/${connector}/connector-tokens/${tokenId}`, tokenRoute)).status).toBe(404);
		expect((await act("DELETE", `/servers/${connector}`, "/servers/:name")).status).toBe(204);
		const match = { match: { subject }, servers: [server] };
		expect((await act("PUT", `/access-rules/${rule}`, "/access-rules/:name", match)).status).toBe(201);
		expect((await act("PUT", `/access-rules/${rule}`, "/access-rules/:name", { ...match, priority: 5 })).status).toBe(
			200,
		);
		expect((await act("DELETE", `/access-rules/${rule}`, "/access-rules/:name")).status).toBe(204);
		// Scoped to this test's server, so no other test's calls meet it.
		const denial = { expression: "false", effect: "deny", applies: { servers: [server] } };
		expect((await act("PUT", `/policies/${policy}`, "/policies/:name", denial)).status).toBe(201);
		expect((await act("PUT", `/policies/${policy}`, "/policies/:name", { ...denial, priority: 5 })).status).toBe(200);
		expect((await act("PUT", `/policies/${policy}`, "/policies/:name", { ...denial, expression: "(" })).status).toBe(
			400,
		);
		expect((await act("DELETE", `/policies/${policy}`, "/policies/:name")).status).toBe(204);
		const scan = { stage: "response", applies: { servers: [server] }, detect: ["email"], action: "log" };
		expect((await act("PUT", `/guards/${guard}`, "/guards/:name", scan)).status).toBe(201);
		expect((await act("PUT", `/guards/${guard}`, "/guards/:name", { ...scan, action: "redact" })).status).toBe(200);
		expect((await act("PUT", `/guards/${guard}`, "/guards/:name", { ...scan, detect: ["ssn"] })).status).toBe(400);
		expect((await act("DELETE", `/guards/${guard}`, "/guards/:name")).status).toBe(204);
		// Two calls an approve policy holds on this test's server: one approved, one denied, each decided once.
		const approving = uniqueName("audited-approve");
		const holding = { expression: 'tool.name == "add"', effect: "approve", applies: { servers: [server] } };
		expect((await act("PUT", `/policies/${approving}`, "/policies/:name", holding)).status).toBe(201);
		const caller = await act("POST", "/keys", "/keys", { servers: [server] });
		const callerId = String(caller.body.id);
		secrets.push(String(caller.body.key));
		const { client } = await connectClient(`/mcp/${server}`, String(caller.body.key));
		const decided: string[] = [];
		for (const decision of ["approve", "deny"] as const) {
			const args = { a: 7_000_000 + Math.floor(Math.random() * 1_000_000_000), b: decided.length };
			const called = client.callTool({ name: "add", arguments: args }).catch((error: unknown) => error);
			const waiting = await eventually(
				async () => {
					const listed = (await act("GET", "/approvals", "/approvals")).body as {
						approvals: Array<{ id: string; arguments: string }>;
					};
					return listed.approvals.find((entry) => entry.arguments === JSON.stringify(args)) ?? null;
				},
				"the approval listed",
				20_000,
			);
			expect((await act("POST", `/approvals/${waiting.id}`, "/approvals/:id", { decision })).status).toBe(200);
			await called;
			decided.push(waiting.id);
		}
		expect((await act("POST", `/approvals/${decided[0]}`, "/approvals/:id", { decision: "deny" })).status).toBe(409);
		await client.close();
		expect((await act("DELETE", `/keys/${callerId}`, "/keys/:id")).status).toBe(204);
		expect((await act("DELETE", `/policies/${approving}`, "/policies/:name")).status).toBe(204);
		expect((await act("DELETE", `/oauth-grants?subject=${subject}`, "/oauth-grants")).body).toEqual({
			revoked: 0,
			disconnected: 0,
		});
		expect((await act("DELETE", `/connections?server=${server}&key=${keyId}`, "/connections")).body).toEqual({
			disconnected: false,
		});
		expect((await act("POST", "/sync", "/sync")).status).toBe(200);
		expect((await act("DELETE", `/virtual-servers/${virtual}`, "/virtual-servers/:name")).status).toBe(204);
		expect((await act("DELETE", `/servers/${server}`, "/servers/:name")).status).toBe(204);

		const audit = lines.filter((line) => line.includes('"admin_audit"')).map((line) => JSON.parse(line) as unknown);
		const line = (action: (typeof ADMIN_ACTIONS)[number], target: string) => ({
			event: "admin_audit",
			actor: "admin",
			action,
			target,
		});
		expect(audit).toEqual([
			line("server.created", server),
			line("server.replaced", server),
			line("server.tools_approved", server),
			line("virtual_server.created", virtual),
			line("virtual_server.replaced", virtual),
			line("key.created", keyId),
			line("key.deleted", keyId),
			line("server.created", connector),
			line("connector_token.created", tokenId),
			line("connector_token.revoked", tokenId),
			line("server.deleted", connector),
			line("access_rule.created", rule),
			line("access_rule.replaced", rule),
			line("access_rule.deleted", rule),
			line("policy.created", policy),
			line("policy.replaced", policy),
			line("policy.deleted", policy),
			line("guard.created", guard),
			line("guard.replaced", guard),
			line("guard.deleted", guard),
			line("policy.created", approving),
			line("key.created", callerId),
			{ ...line("approval.approved", decided[0] ?? ""), by: "admin" },
			{ ...line("approval.denied", decided[1] ?? ""), by: "admin" },
			line("key.deleted", callerId),
			line("policy.deleted", approving),
			line("oauth_grants.revoked", `subject:${subject}`),
			line("connection.deleted", `${server} key:${keyId}`),
			line("registry.synced", "kv"),
			line("virtual_server.deleted", virtual),
			line("server.deleted", server),
		]);
		// Every action the gateway knows was taken, and every mutating route was sent.
		expect(new Set(audit.map((entry) => (entry as { action: string }).action))).toEqual(new Set(ADMIN_ACTIONS));
		expect(new Set(mutatingRoutes)).toEqual(new Set([...exercised].filter((route) => !route.startsWith("GET "))));
		for (const secret of [...secrets, TEST_ADMIN_BEARER]) {
			for (const logged of lines) expect(logged).not.toContain(secret);
		}
	});
});
