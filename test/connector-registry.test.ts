import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import {
	admittedConnectorToken,
	connectorTokenDigest,
	connectorUrl,
	StoredConnectorTokenSchema,
} from "../src/registry/connector-tokens.ts";
import { KV_NAMES } from "../src/registry/kv-records.ts";
import { REGISTRY_NAME } from "../src/registry/registry-do.ts";
import { admin, uniqueName } from "./support/gateway.ts";
import { upstreamUrl } from "./support/upstreams.ts";

const registry = () => env.REGISTRY.get(env.REGISTRY.idFromName(REGISTRY_NAME));

/** Registers a connector server without probing it (the probe is the connector seam's, not the registry's). */
async function putConnectorServer(name = uniqueName("conn"), fields: Record<string, unknown> = {}): Promise<string> {
	const response = await admin("PUT", `/servers/${name}?check=false`, { connector: {}, ...fields });
	if (response.status !== 201 && response.status !== 200) throw new Error(await response.text());
	return name;
}

async function makeToken(server: string): Promise<{ id: string; token: string; createdAt: string }> {
	const response = await admin("POST", `/servers/${server}/connector-tokens`);
	if (response.status !== 201) throw new Error(await response.text());
	return (await response.json()) as { id: string; token: string; createdAt: string };
}

async function message(response: Response): Promise<string> {
	return ((await response.json()) as { error: { message: string } }).error.message;
}

const published = (name: string): Promise<unknown> => env.REGISTRY_KV.get(name, "json");

describe("servers reached through connectors", () => {
	it('a server registered with "connector": {} shows connector: {} and no url, lists no connectors online, and its published endpoint has the connector address', async () => {
		const name = uniqueName("conn");
		const created = await admin("PUT", `/servers/${name}?check=false`, { connector: {}, headers: { "X-Team": "a" } });
		expect(created.status).toBe(201);
		const shown = (await created.json()) as Record<string, unknown>;
		expect(shown).toMatchObject({ name, connector: {}, headers: { "X-Team": "***" } });
		expect(shown).not.toHaveProperty("url");

		const one = (await (await admin("GET", `/servers/${name}`)).json()) as Record<string, unknown>;
		expect(one).toMatchObject({ name, connector: {}, connectors: [] });
		expect(one).not.toHaveProperty("url");
		const { servers } = (await (await admin("GET", "/servers")).json()) as { servers: Record<string, unknown>[] };
		const listed = servers.find((server) => server.name === name);
		expect(listed).toMatchObject({ connector: {} });
		expect(listed).not.toHaveProperty("url");

		expect(await published(KV_NAMES.endpoint(name))).toMatchObject({
			kind: "server",
			server: { name, url: connectorUrl(name), connector: {}, headers: { "X-Team": "a" } },
		});
		const all = (await published(KV_NAMES.servers)) as Array<{ name: string; url: string }>;
		expect(all.find((server) => server.name === name)?.url).toBe(connectorUrl(name));
	});

	it("a virtual server with a connector server among its members publishes that member with its connector address", async () => {
		const member = await putConnectorServer();
		const virtual = uniqueName("vs");
		expect((await admin("PUT", `/virtual-servers/${virtual}`, { servers: [member] })).status).toBe(201);
		expect(await published(KV_NAMES.endpoint(virtual))).toMatchObject({
			kind: "virtual",
			members: [{ name: member, url: connectorUrl(member), connector: {} }],
		});
		await admin("DELETE", `/virtual-servers/${virtual}`);
	});

	it("a server given a url shows no connector and no connectors online", async () => {
		const name = uniqueName("byurl");
		await admin("PUT", `/servers/${name}?check=false`, { url: upstreamUrl("alpha") });
		const one = (await (await admin("GET", `/servers/${name}`)).json()) as Record<string, unknown>;
		expect(one).toMatchObject({ url: upstreamUrl("alpha") });
		expect(one).not.toHaveProperty("connector");
		expect(one).not.toHaveProperty("connectors");
	});

	it("a body with both url and connector, with neither, or with a field in connector is refused with 400 saying so, and registers nothing", async () => {
		const name = uniqueName("bad");
		const both = await admin("PUT", `/servers/${name}`, { url: upstreamUrl("alpha"), connector: {} });
		expect(both.status).toBe(400);
		expect(await message(both)).toBe(
			'Bad Request: body: give only one of url, "connector": {} and openapi: a server reached through connectors or made from a document has no address of its own.',
		);
		const neither = await admin("PUT", `/servers/${name}`, { headers: {} });
		expect(neither.status).toBe(400);
		expect(await message(neither)).toBe(
			"Bad Request: body: give one of url (the upstream's address), \"connector\": {} (reached through connectors) or openapi (a REST API's document).",
		);
		const fields = await admin("PUT", `/servers/${name}`, { connector: { url: upstreamUrl("alpha") } });
		expect(fields.status).toBe(400);
		expect(await message(fields)).toMatch(/^Bad Request: connector: unknown field "url"/);
		expect((await admin("GET", `/servers/${name}`)).status).toBe(404);
	});

	it("a url at the connector address's origin is refused with 400 pointing to connector: {}", async () => {
		const name = uniqueName("bad");
		const response = await admin("PUT", `/servers/${name}`, { url: connectorUrl(name) });
		expect(response.status).toBe(400);
		expect(await message(response)).toMatch(/register the server with "connector": \{\} instead of a url/);
		expect((await admin("GET", `/servers/${name}`)).status).toBe(404);
	});

	it("switching a server from a url to connector and back changes its address and configuration digest and keeps its generation, as a URL change does", async () => {
		const name = uniqueName("switch");
		const first = (await (
			await admin("PUT", `/servers/${name}?check=false`, { url: upstreamUrl("alpha") })
		).json()) as { generation: string };
		const before = (await published(KV_NAMES.endpoint(name))) as { server: { url: string; configDigest: string } };
		await putConnectorServer(name);
		const during = (await published(KV_NAMES.endpoint(name))) as {
			server: { url: string; configDigest: string; generation: string };
		};
		expect(during.server.url).toBe(connectorUrl(name));
		expect(during.server.configDigest).not.toBe(before.server.configDigest);
		expect(during.server.generation).toBe(first.generation);
		await admin("PUT", `/servers/${name}?check=false`, { url: upstreamUrl("alpha") });
		const after = (await published(KV_NAMES.endpoint(name))) as { server: Record<string, unknown> };
		expect(after.server).toMatchObject({
			url: upstreamUrl("alpha"),
			connector: null,
			configDigest: before.server.configDigest,
		});
	});
});

describe("connector tokens", () => {
	it("making a token answers 201 with the token once; the list shows only id, createdAt and lastSeenAt; KV holds its server and digest", async () => {
		const server = await putConnectorServer();
		const response = await admin("POST", `/servers/${server}/connector-tokens`);
		expect(response.status).toBe(201);
		const made = (await response.json()) as { id: string; token: string; createdAt: string };
		expect(Object.keys(made).sort()).toEqual(["createdAt", "id", "token"]);
		expect(made.token).toMatch(new RegExp(`^mcpgwc1_${made.id}\\.`));

		const listed = await admin("GET", `/servers/${server}/connector-tokens`);
		expect(listed.status).toBe(200);
		const text = await listed.text();
		const digest = await connectorTokenDigest(made.token);
		expect(text).not.toContain(made.token.split(".")[1]);
		expect(text).not.toContain(digest);
		expect(JSON.parse(text)).toEqual({
			connectorTokens: [{ id: made.id, createdAt: made.createdAt, lastSeenAt: null }],
		});

		expect(StoredConnectorTokenSchema.parse(await published(KV_NAMES.connectorToken(made.id)))).toEqual({
			id: made.id,
			server,
			digest,
			createdAt: Date.parse(made.createdAt),
		});
	});

	it("revoking a token answers 204, takes it from the list and from KV, and a second revocation is 404", async () => {
		const server = await putConnectorServer();
		const kept = await makeToken(server);
		const revoked = await makeToken(server);
		const response = await admin("DELETE", `/servers/${server}/connector-tokens/${revoked.id}`);
		expect(response.status).toBe(204);
		const { connectorTokens } = (await (await admin("GET", `/servers/${server}/connector-tokens`)).json()) as {
			connectorTokens: Array<{ id: string }>;
		};
		expect(connectorTokens.map((token) => token.id)).toEqual([kept.id]);
		expect(await published(KV_NAMES.connectorToken(revoked.id))).toBeNull();
		expect(await published(KV_NAMES.connectorToken(kept.id))).not.toBeNull();

		const again = await admin("DELETE", `/servers/${server}/connector-tokens/${revoked.id}`);
		expect(again.status).toBe(404);
		expect(await message(again)).toBe(`Not Found: server '${server}' has no connector token '${revoked.id}'.`);
	});

	it("a token is revoked only through its own server: another server's path answers 404 and the token stays", async () => {
		const server = await putConnectorServer();
		const other = await putConnectorServer();
		const made = await makeToken(server);
		expect((await admin("DELETE", `/servers/${other}/connector-tokens/${made.id}`)).status).toBe(404);
		expect(await published(KV_NAMES.connectorToken(made.id))).not.toBeNull();
	});

	it("a server reached by its url has no connector tokens (400 with a sentence), and an unknown server is 404 with the name it most likely meant", async () => {
		const byUrl = uniqueName("byurl");
		await admin("PUT", `/servers/${byUrl}?check=false`, { url: upstreamUrl("alpha") });
		for (const [method, path] of [
			["POST", `/servers/${byUrl}/connector-tokens`],
			["GET", `/servers/${byUrl}/connector-tokens`],
		] as const) {
			const response = await admin(method, path);
			expect(response.status).toBe(400);
			expect(await message(response)).toBe(
				`Bad Request: server '${byUrl}' is reached by its URL, so it has no connector tokens; register it with "connector": {} in place of url to serve it through connectors.`,
			);
		}
		const server = await putConnectorServer();
		const unknown = await admin("POST", `/servers/${server}x/connector-tokens`);
		expect(unknown.status).toBe(404);
		expect(await message(unknown)).toBe(`Not Found: no server named '${server}x' (did you mean '${server}'?).`);
	});

	it("a token admits a connector for its own server only, and not once revoked or tampered with", async () => {
		const server = await putConnectorServer();
		const other = await putConnectorServer();
		const made = await makeToken(server);
		expect(await admittedConnectorToken(env.REGISTRY_KV, made.token, server)).toMatchObject({ id: made.id, server });
		expect(await admittedConnectorToken(env.REGISTRY_KV, made.token, other)).toBeNull();
		const last = made.token.at(-1) === "A" ? "B" : "A";
		expect(await admittedConnectorToken(env.REGISTRY_KV, `${made.token.slice(0, -1)}${last}`, server)).toBeNull();
		await admin("DELETE", `/servers/${server}/connector-tokens/${made.id}`);
		expect(await admittedConnectorToken(env.REGISTRY_KV, made.token, server)).toBeNull();
	});

	it("a connection seen with a token sets its lastSeenAt, which the list shows; a revoked token is not seen", async () => {
		const server = await putConnectorServer();
		const made = await makeToken(server);
		const at = Date.parse("2026-01-02T03:04:05.000Z");
		expect(await registry().connectorTokenSeen(made.id, at)).toBe(true);
		const { connectorTokens } = (await (await admin("GET", `/servers/${server}/connector-tokens`)).json()) as {
			connectorTokens: unknown[];
		};
		expect(connectorTokens).toEqual([
			{ id: made.id, createdAt: made.createdAt, lastSeenAt: "2026-01-02T03:04:05.000Z" },
		]);
		await admin("DELETE", `/servers/${server}/connector-tokens/${made.id}`);
		expect(await registry().connectorTokenSeen(made.id, at)).toBe(false);
	});

	it("a deleted server takes its tokens: their KV records are gone and the server made again under its name has none", async () => {
		const server = await putConnectorServer();
		const tokens = [await makeToken(server), await makeToken(server)];
		expect((await admin("DELETE", `/servers/${server}`)).status).toBe(204);
		for (const token of tokens) {
			expect(await published(KV_NAMES.connectorToken(token.id))).toBeNull();
			expect(await admittedConnectorToken(env.REGISTRY_KV, token.token, server)).toBeNull();
		}
		await putConnectorServer(server);
		expect(await (await admin("GET", `/servers/${server}/connector-tokens`)).json()).toEqual({ connectorTokens: [] });
	});

	it("a connector server replaced as a connector keeps its tokens; given a url it loses them, and they do not come back with connector", async () => {
		const server = await putConnectorServer();
		const made = await makeToken(server);
		await putConnectorServer(server, { timeoutSeconds: 5 });
		expect(await published(KV_NAMES.connectorToken(made.id))).not.toBeNull();
		await admin("PUT", `/servers/${server}?check=false`, { url: upstreamUrl("alpha") });
		expect(await published(KV_NAMES.connectorToken(made.id))).toBeNull();
		await putConnectorServer(server);
		expect(await (await admin("GET", `/servers/${server}/connector-tokens`)).json()).toEqual({ connectorTokens: [] });
	});
});
