import { env, listDurableObjectIds } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from "@modelcontextprotocol/client";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ElicitRequestSchema, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, inject, it } from "vitest";
import { eventually } from "./support/eventually.ts";
import {
	admin,
	BASE,
	connectClient,
	createKey,
	gatewayFetch,
	mcpHeaders,
	openSession,
	readReply,
	rpc,
} from "./support/gateway.ts";
import { ENVELOPE, MODERN, modernPost, textOf } from "./support/modern.ts";
import { eventReader } from "./support/sse-events.ts";
import { registerServer } from "./support/upstreams.ts";

/**
 * Every cell of client era × upstream era × endpoint kind, with real peers:
 * SDK v2 clients pinned to 2026-07-28, SDK 1.x clients (2025-11-25), SDK v2
 * upstreams that speak only 2026-07-28 (`modern`) or both (`dual`), and SDK
 * 1.x upstreams (`delta`, 2025 only; its cells with 2026-07-28 clients are
 * in modern-clients.test.ts).
 */

interface Recorded {
	method: string;
	headers: Record<string, string>;
	body: { method?: string; params?: Record<string, unknown> } | undefined;
}

/** What a 2026-07-28 fixture received, in order. */
async function fixtureLog(which: "modern" | "dual"): Promise<Recorded[]> {
	const response = await fetch(`http://127.0.0.1:${inject(`${which}Port`)}/_log`);
	return (await response.json()) as Recorded[];
}

async function modernClient(path: string, key: string, capabilities: Record<string, unknown> = {}) {
	const client = new ModernClient(
		{ name: "modern-matrix", version: "2.0.0" },
		{ capabilities, versionNegotiation: { mode: { pin: MODERN } } },
	);
	client.setRequestHandler("elicitation/create", async () => ({ action: "accept", content: { name: "Ada" } }));
	await client.connect(
		new ModernTransport(new URL(`${BASE}${path}`), {
			fetch: (url, init) => exports.default.fetch(new Request(url, init)),
			requestInit: { headers: { authorization: `Bearer ${key}` } },
		}),
	);
	return client;
}

/** A 2025-11-25 SDK client that answers elicitations with the name Grace. */
async function legacyClient(path: string, key: string): Promise<Client> {
	const { client } = await connectClient(path, key, {
		capabilities: { elicitation: { form: {} } },
		setup: (peer) =>
			peer.setRequestHandler(ElicitRequestSchema, async () => ({ action: "accept", content: { name: "Grace" } })),
	});
	return client;
}

async function sessionObjects(): Promise<number> {
	return (await listDurableObjectIds(env.SESSIONS)).length;
}

describe("2026-07-28 client, 2026-07-28 upstream, server endpoint: stateless at the edge", () => {
	it("lists and calls with the client's own envelope, Mcp-Param headers and input rounds passed through, and no Durable Object", async () => {
		const server = await registerServer("modern");
		const { key } = await createKey({ servers: [server] });
		const objects = await sessionObjects();
		const client = await modernClient(`/mcp/${server}`, key, { elicitation: { form: {} } });
		expect((await client.listTools()).tools.map((tool) => tool.name)).toContain("region_echo");
		const whoami = await client.callTool({ name: "whoami", arguments: {} });
		expect(whoami.structuredContent).toMatchObject({
			era: "modern",
			clientInfo: { name: "modern-matrix", version: "2.0.0" },
			clientCapabilities: { elicitation: { form: {} } },
		});
		const region = await client.callTool({ name: "region_echo", arguments: { region: "eu-west" } });
		expect(textOf(region)).toBe("eu-west");
		expect(textOf(await client.callTool({ name: "ask_name", arguments: {} }))).toBe("hello Ada");
		expect(await sessionObjects()).toBe(objects);
		await client.close();
	});

	it("the upstream's own refusal of a request (400, -32020 for an Mcp-Param header the body contradicts) reaches the client as that refusal", async () => {
		const server = await registerServer("modern");
		const { key } = await createKey({ servers: [server] });
		const response = await modernPost(
			`/mcp/${server}`,
			key,
			{ id: 21, method: "tools/call", params: { name: "region_echo", arguments: { region: "eu" }, _meta: ENVELOPE } },
			{ "mcp-param-region": "us" },
		);
		expect(response.status).toBe(400);
		expect(response.headers.get("content-type")).toMatch(/^application\/json/);
		const reply = (await response.json()) as { id: unknown; error: { code: number; message: string } };
		expect(reply.id).toBe(21);
		expect(reply.error.code).toBe(-32020);
		expect(reply.error.message).toMatch(/Mcp-Param-Region/);
	});

	it("the client's API key never reaches the upstream; the operator's headers do", async () => {
		const server = `modern-cred-${crypto.randomUUID().slice(0, 8)}`;
		const put = await admin("PUT", `/servers/${server}`, {
			url: `http://127.0.0.1:${inject("modernPort")}/mcp`,
			headers: { "X-Upstream-Token": "operator-configured" },
		});
		expect(put.status).toBe(201);
		const { key } = await createKey({ servers: [server] });
		const marker = crypto.randomUUID();
		const response = await modernPost(`/mcp/${server}`, key, {
			id: 1,
			method: "tools/call",
			params: { name: "echo", arguments: { text: marker }, _meta: ENVELOPE },
		});
		expect(textOf((await readReply(response)).result ?? {})).toBe(marker);
		const log = await fixtureLog("modern");
		// Not in any header or body of anything the upstream ever received, whole or in its secret parts.
		const everything = JSON.stringify(log);
		for (const secret of [key, ...key.split(".").slice(1)]) expect(everything).not.toContain(secret);
		const received = log.find((entry) => JSON.stringify(entry.body).includes(marker)) as Recorded;
		expect(received.headers.authorization).toBeUndefined();
		expect(received.headers["x-upstream-token"]).toBe("operator-configured");
		expect(received.headers["mcp-name"]).toBe("echo");
	});
});

describe("2025 client, 2026-07-28 upstream", () => {
	it("server endpoint: initialize is answered from server/discover, calls carry the client's envelope and Mcp-Param headers, and an input round becomes an elicitation to the client", async () => {
		const server = await registerServer("modern");
		const { key } = await createKey({ servers: [server] });
		const client = await legacyClient(`/mcp/${server}`, key);
		expect(client.getServerVersion()?.name).toBe("modern");
		const whoami = await client.callTool({ name: "whoami", arguments: {} });
		expect(whoami.structuredContent).toMatchObject({
			era: "modern",
			protocolVersion: MODERN,
			clientInfo: { name: "gateway-test" },
			clientCapabilities: { elicitation: { form: {} } },
		});
		expect(textOf(await client.callTool({ name: "ask_name", arguments: {} }))).toBe("hello Grace");
		// The tool marks region with x-mcp-header: the gateway mirrors it, as a 2026-07-28 client must.
		expect(textOf(await client.callTool({ name: "region_echo", arguments: { region: "ap-south" } }))).toBe("ap-south");
		expect((await client.readResource({ uri: `demo://modern/readme` })).contents[0]).toMatchObject({
			text: "This is modern.",
		});
		await client.ping();
		await client.close();
	});

	it("a call whose 2026-07-28 upstream needs elicitation, which the 2025 client did not declare, says so (a tool error naming the capability, with -32021's data), not that the upstream answered HTTP 400", async () => {
		const server = await registerServer("modern");
		const { key } = await createKey({ servers: [server] });
		const { client } = await connectClient(`/mcp/${server}`, key, { capabilities: {} });
		const result = await client.callTool({ name: "ask_name", arguments: {} });
		expect(result.isError).toBe(true);
		const message = textOf(result);
		expect(message).toContain(`Upstream server '${server}' needs a client that supports elicitation`);
		expect(message).toContain("this client did not declare it");
		expect(message).not.toContain("HTTP 400");
		expect(result._meta?.["mcp-edge-gateway/error"]).toMatchObject({
			kind: "missing_client_capability",
			server,
			requiredCapabilities: { elicitation: {} },
		});
		await client.close();
	});

	it("aggregate endpoint: a 2026-07-28 member and a 2025 member side by side, the member's input round reaching the client", async () => {
		const modern = await registerServer("modern");
		const delta = await registerServer("delta");
		const { key } = await createKey({ servers: [modern, delta] });
		const client = await legacyClient("/mcp", key);
		const names = (await client.listTools()).tools.map((tool) => tool.name);
		expect(names).toEqual(expect.arrayContaining([`${modern}__ask_name`, `${delta}__ask_user`]));
		expect(textOf(await client.callTool({ name: `${modern}__echo`, arguments: { text: "both eras" } }))).toBe(
			"both eras",
		);
		expect(textOf(await client.callTool({ name: `${modern}__ask_name`, arguments: {} }))).toBe("hello Grace");
		await client.close();
	});

	it("the client's GET stream is fed from the upstream's subscriptions/listen: a tool-list change reaches it", async () => {
		const server = await registerServer("modern");
		const { key } = await createKey({ servers: [server] });
		const client = await legacyClient(`/mcp/${server}`, key);
		let changes = 0;
		client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
			changes++;
		});
		const listens = async () =>
			(await fixtureLog("modern")).filter((entry) => entry.body?.method === "subscriptions/listen").length;
		const before = await listens();
		// The SDK client opens its GET stream after initialize; the gateway listens upstream for it.
		await eventually(async () => (await listens()) > before, "the gateway's subscriptions/listen upstream");
		await client.callTool({ name: "announce_tools_changed", arguments: {} });
		await eventually(() => changes > 0, "notifications/tools/list_changed at the client");
		await client.close();
	});

	it("a 2025 client's resources/subscribe joins the upstream's listen filter: the update reaches its GET stream", async () => {
		const path = `/mcp/${await registerServer("modern")}`;
		const { key } = await createKey();
		const sessionId = await openSession(path, key);
		const uri = `demo://watched/${sessionId.slice(-8)}`;
		const subscribe = { jsonrpc: "2.0", id: 1, method: "resources/subscribe", params: { uri } };
		expect((await readReply(await rpc(path, key, sessionId, subscribe))).result).toEqual({});
		// The GET stream opens after the subscription, so its window listens with the resource in the filter.
		const get = await gatewayFetch(path, {
			method: "GET",
			headers: mcpHeaders(key, sessionId, { accept: "text/event-stream", "mcp-protocol-version": "2025-11-25" }),
		});
		expect(get.status).toBe(200);
		const events = eventReader(get.body as ReadableStream<Uint8Array>);
		await eventually(
			async () =>
				(await fixtureLog("modern")).some(
					(entry) =>
						entry.body?.method === "subscriptions/listen" &&
						JSON.stringify(entry.body.params?.notifications ?? {}).includes(uri),
				),
			"a subscriptions/listen naming the resource",
		);
		const touch = {
			jsonrpc: "2.0",
			id: 2,
			method: "tools/call",
			params: { name: "touch_resource", arguments: { uri } },
		};
		await (await rpc(path, key, sessionId, touch)).text();
		expect(await events.next()).toMatchObject({ method: "notifications/resources/updated", params: { uri } });
		await events.cancel();
	});

	it("a server that speaks both eras is spoken to in the 2025 client's own era", async () => {
		const server = await registerServer("dual");
		const { key } = await createKey({ servers: [server] });
		const client = await legacyClient(`/mcp/${server}`, key);
		const whoami = await client.callTool({ name: "whoami", arguments: {} });
		expect(whoami.structuredContent).toMatchObject({ era: "legacy" });
		await client.close();
	});
});

describe("2026-07-28 client, aggregate endpoint with a 2026-07-28 member", () => {
	it("calls and an input round cross the aggregate: the member asks, the client answers by retrying", async () => {
		const modern = await registerServer("modern");
		const delta = await registerServer("delta");
		const { key } = await createKey({ servers: [modern, delta] });
		const client = await modernClient("/mcp", key, { elicitation: { form: {} } });
		const names = (await client.listTools()).tools.map((tool) => tool.name);
		expect(names).toEqual(expect.arrayContaining([`${modern}__whoami`, `${delta}__ask_user`]));
		expect(textOf(await client.callTool({ name: `${modern}__ask_name`, arguments: {} }))).toBe("hello Ada");
		await client.close();
	});
});

describe("shared caching of 2026-07-28 results", () => {
	const read = (server: string, key: string, uri: string, id: number) =>
		modernPost(`/mcp/${server}`, key, { id, method: "resources/read", params: { uri, _meta: ENVELOPE } });
	const reads = async (uri: string) =>
		(await fixtureLog("modern")).filter(
			(entry) => entry.body?.method === "resources/read" && entry.body.params?.uri === uri,
		).length;

	it("a public result with a ttl is served to another key from the edge cache, under that request's id", async () => {
		const server = await registerServer("modern");
		const first = await createKey({ servers: [server] });
		const second = await createKey({ servers: [server] });
		const uri = "demo://modern/readme";
		const before = await reads(uri);
		const fresh = await read(server, first.key, uri, 1);
		expect(((await fresh.json()) as { result: { cacheScope: string } }).result.cacheScope).toBe("public");
		const cached = await read(server, second.key, uri, 2);
		expect(cached.headers.get("x-mcp-cache")).toBe("hit");
		const reply = (await cached.json()) as { id: number; result: { contents: Array<{ text: string }> } };
		expect(reply.id).toBe(2);
		expect(reply.result.contents[0]?.text).toBe("This is modern.");
		expect((await reads(uri)) - before).toBe(1);
	});

	it("a private result is never cached: every request reaches the upstream", async () => {
		const server = await registerServer("modern");
		const first = await createKey({ servers: [server] });
		const second = await createKey({ servers: [server] });
		const uri = "demo://modern/private";
		const before = await reads(uri);
		const one = (await (await read(server, first.key, uri, 1)).json()) as { result: { cacheScope: string } };
		expect(one.result.cacheScope).toBe("private");
		const two = await read(server, second.key, uri, 2);
		expect(two.headers.get("x-mcp-cache")).toBeNull();
		expect((await reads(uri)) - before).toBe(2);
	});
});
