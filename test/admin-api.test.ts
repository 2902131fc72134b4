import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../src/crypto.ts";
import { REGISTRY_NAME, type RegistryDO } from "../src/registry/registry-do.ts";
import { admin, createKey, gatewayFetch, openSession, rpc, TEST_ADMIN_BEARER, uniqueName } from "./support/gateway.ts";
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

	it("lists servers with header values masked", async () => {
		const name = uniqueName("masked");
		await admin("PUT", `/servers/${name}`, {
			url: upstreamUrl("alpha"),
			headers: { Authorization: "Bearer literal-secret-token", "X-Team": "${UPSTREAM_TEAM}" },
		});
		const listed = await admin("GET", "/servers");
		const text = await listed.text();
		expect(text).not.toContain("literal-secret-token");
		const { servers } = JSON.parse(text) as { servers: Array<{ name: string; headers: Record<string, string> }> };
		expect(servers.find((server) => server.name === name)?.headers).toEqual({ Authorization: "***", "X-Team": "***" });
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
