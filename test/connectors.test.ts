import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { connectorObject } from "../src/connectors/connector-do.ts";
import { mintConnectorToken } from "../src/registry/connector-tokens.ts";
import { eventually } from "./support/eventually.ts";
import { connectorToken, dial, startConnector } from "./support/fake-connector.ts";
import { admin, connectClient, createKey, postInitialize, uniqueName } from "./support/gateway.ts";
import { registerServer, toolCallsOf, upstreamUrl } from "./support/upstreams.ts";

/** A server reached through connectors (the check skipped: it would find none online yet). */
async function registerConnectorServer(headers: Record<string, string> = {}): Promise<string> {
	const name = uniqueName("conn");
	const response = await admin("PUT", `/servers/${name}?check=false`, { connector: {}, headers });
	if (response.status !== 201 && response.status !== 200) {
		throw new Error(`registering ${name} failed: ${response.status} ${await response.text()}`);
	}
	return name;
}

/** A connector server with one connector online, serving the beta upstream. */
async function servedServer() {
	const server = await registerConnectorServer();
	const { id, token } = await connectorToken(server);
	const connector = await startConnector(server, token, { upstream: upstreamUrl("beta") });
	return { server, tokenId: id, token, connector };
}

const initializes = (frames: Array<{ body?: string | undefined }>) =>
	frames.filter((frame) => frame.body?.includes('"method":"initialize"')).length;

describe("connectors: carrying calls", () => {
	it("a tools/call through a connector reaches the upstream and answers (2025 client through a session)", async () => {
		const { server, connector } = await servedServer();
		const { key } = await createKey();
		const { client } = await connectClient(`/mcp/${server}`, key);
		const result = await client.callTool({ name: "echo", arguments: { text: "through a connector" } });
		expect(result.content).toEqual([{ type: "text", text: "through a connector" }]);
		expect(connector.requests().some((frame) => frame.body?.includes("through a connector"))).toBe(true);
		await client.close();
	});

	it("progress notifications of a call stream back through the connector before its answer", async () => {
		// alpha answers calls as SSE streams; the server's configured credential travels to it through the connector.
		const server = await registerConnectorServer({ Authorization: "Bearer ${UPSTREAM_ALPHA_TOKEN}" });
		const { token } = await connectorToken(server);
		await startConnector(server, token, { upstream: upstreamUrl("alpha") });
		const { key } = await createKey();
		const { client } = await connectClient(`/mcp/${server}`, key);
		const progress: number[] = [];
		const result = await client.callTool({ name: "progress", arguments: { steps: 3 } }, undefined, {
			onprogress: (update) => progress.push(update.progress),
		});
		expect(progress).toEqual([1, 2, 3]);
		expect(result.content).toEqual([{ type: "text", text: "done in 3 steps" }]);
		await client.close();
	});

	it("with no connector online, an initialize is answered at once with a sentence naming the server", async () => {
		const server = await registerConnectorServer();
		const { key } = await createKey();
		const response = await postInitialize(`/mcp/${server}`, key);
		const text = await response.text();
		expect(text).toContain(`No connector is online for server '${server}'`);
	});

	it("an aggregate leaves out a server with no connector online and says so in its instructions", async () => {
		const offline = await registerConnectorServer();
		const beta = await registerServer("beta");
		const { key } = await createKey({ servers: [offline, beta] });
		const { client } = await connectClient("/mcp", key);
		expect(client.getInstructions()).toContain(`No connector is online for these servers`);
		expect(client.getInstructions()).toContain(offline);
		const tools = (await client.listTools()).tools.map((tool) => tool.name);
		expect(tools).toContain(`${beta}__echo`);
		expect(tools.some((name) => name.startsWith(`${offline}__`))).toBe(false);
		await client.close();
	});

	it("a connector that closes mid-call fails that call at once, and the upstream received it once (not replayed)", async () => {
		const server = await registerConnectorServer();
		const { token } = await connectorToken(server);
		const text = uniqueName("sent-once");
		await startConnector(server, token, {
			upstream: upstreamUrl("beta"),
			dieAfterForwarding: (frame) => frame.body?.includes(text) === true,
		});
		const { key } = await createKey();
		const { client } = await connectClient(`/mcp/${server}`, key);
		const result = await client.callTool({ name: "echo", arguments: { text } });
		expect(result.isError).toBe(true);
		expect(JSON.stringify(result.content)).toContain("may or may not have taken effect");
		expect(await toolCallsOf("beta", "echo", { text })).toHaveLength(1);
		await client.close();
	});

	it("new sessions go to the least busy connector, and keep working when one connector goes", async () => {
		const server = await registerConnectorServer();
		const { token } = await connectorToken(server);
		const first = await startConnector(server, token, { upstream: upstreamUrl("beta") });
		const second = await startConnector(server, token, { upstream: upstreamUrl("beta") });
		const { key } = await createKey();
		const a = await connectClient(`/mcp/${server}`, key);
		const b = await connectClient(`/mcp/${server}`, key);
		expect([initializes(first.requests()), initializes(second.requests())]).toEqual([1, 1]);
		first.close();
		await first.closed;
		await eventually(async () => (await connectorObject(env, server).online()).length === 1, "one connector left");
		const c = await connectClient(`/mcp/${server}`, key);
		const result = await c.client.callTool({ name: "echo", arguments: { text: "still served" } });
		expect(result.content).toEqual([{ type: "text", text: "still served" }]);
		// The session the gone connector held recovers on the other one for a read.
		const tools = await a.client.listTools();
		expect(tools.tools.map((tool) => tool.name)).toContain("echo");
		for (const { client } of [a, b, c]) await client.close();
	});

	it("a session's requests stay on the connector that answered its initialize", async () => {
		const server = await registerConnectorServer();
		const { token } = await connectorToken(server);
		const holder = await startConnector(server, token, { upstream: upstreamUrl("beta") });
		const { key } = await createKey();
		const { client } = await connectClient(`/mcp/${server}`, key);
		const other = await startConnector(server, token, { upstream: upstreamUrl("beta") });
		for (let i = 0; i < 3; i++) await client.callTool({ name: "echo", arguments: { text: `stay ${i}` } });
		expect(holder.requests().filter((frame) => frame.body?.includes("stay "))).toHaveLength(3);
		expect(other.requests()).toHaveLength(0);
		await client.close();
	});

	it("the client's API key never appears in any frame a connector receives", async () => {
		const { server, connector } = await servedServer();
		const { key } = await createKey();
		const { client } = await connectClient(`/mcp/${server}`, key);
		await client.listTools();
		await client.callTool({ name: "echo", arguments: { text: "private" } });
		await client.close();
		expect(connector.received.length).toBeGreaterThan(2);
		for (const frame of connector.received) expect(frame).not.toContain(key);
		for (const request of connector.requests()) {
			expect(request.headers.map(([name]) => name.toLowerCase())).not.toContain("authorization");
		}
	});
});

describe("connectors: admission and operators", () => {
	it("a connector's connection records its token as seen, once, in the token list", async () => {
		const { server, tokenId } = await servedServer();
		const listed = await eventually(async () => {
			const response = await admin("GET", `/servers/${server}/connector-tokens`);
			const { connectorTokens } = (await response.json()) as {
				connectorTokens: Array<{ id: string; lastSeenAt: string | null }>;
			};
			return connectorTokens.find((entry) => entry.id === tokenId && entry.lastSeenAt !== null);
		}, "the token seen");
		expect(Date.parse(listed.lastSeenAt ?? "")).toBeGreaterThan(0);
	});

	it("online() lists a connector with its token, host, version and the sessions it holds", async () => {
		const { server, tokenId, connector } = await servedServer();
		const { key } = await createKey();
		const { client } = await connectClient(`/mcp/${server}`, key);
		const online = await connectorObject(env, server).online();
		expect(online).toEqual([
			expect.objectContaining({ id: connector.id, tokenId, host: "test-host", version: "test", sessions: 1 }),
		]);
		await client.close();
	});

	it("dropToken closes that token's connectors with 4001 and says how many", async () => {
		const { server, tokenId, connector } = await servedServer();
		expect(await connectorObject(env, server).dropToken(tokenId)).toBe(1);
		expect((await connector.closed).code).toBe(4001);
		expect(await connectorObject(env, server).online()).toEqual([]);
	});

	it("the server check reports no connector online, then reached through 1 connector", async () => {
		const server = await registerConnectorServer();
		const before = (await (await admin("GET", `/servers/${server}?check=true`)).json()) as {
			check: { detail: string };
		};
		expect(before.check.detail).toContain("No connector online");
		const { token } = await connectorToken(server);
		await startConnector(server, token, { upstream: upstreamUrl("beta") });
		const after = (await (await admin("GET", `/servers/${server}?check=true`)).json()) as {
			check: { detail: string; reachable: boolean };
		};
		expect(after.check.detail).toContain("Reached through 1 connector.");
		expect(after.check.reachable).toBe(true);
	});

	it("an unknown connector token is refused with 401 and a sentence", async () => {
		const server = await registerConnectorServer();
		const response = await dial(server, { authorization: `Bearer ${mintConnectorToken().token}` });
		expect(response.status).toBe(401);
		expect(await response.text()).toContain(`refused for server '${server}'`);
	});

	it("another server's connector token is refused with 401", async () => {
		const server = await registerConnectorServer();
		const elsewhere = await registerConnectorServer();
		const { token } = await connectorToken(elsewhere);
		expect((await dial(server, { authorization: `Bearer ${token}` })).status).toBe(401);
	});

	it("a browser's WebSocket (an Origin header) is refused with 403", async () => {
		const server = await registerConnectorServer();
		const { token } = await connectorToken(server);
		const response = await dial(server, { authorization: `Bearer ${token}`, origin: "https://evil.example" });
		expect(response.status).toBe(403);
	});

	it("a request that is not a WebSocket upgrade is refused with 400", async () => {
		const server = await registerConnectorServer();
		const { token } = await connectorToken(server);
		const response = await dial(server, { authorization: `Bearer ${token}`, upgrade: "h2c" });
		expect(response.status).toBe(400);
	});

	it("a first frame that is not hello closes the socket with 1008 and a sentence", async () => {
		const server = await registerConnectorServer();
		const { token } = await connectorToken(server);
		const response = await dial(server, { authorization: `Bearer ${token}` });
		const ws = response.webSocket;
		if (!ws) throw new Error(`no socket: ${response.status}`);
		ws.accept();
		const closed = new Promise<CloseEvent>((resolve) => ws.addEventListener("close", resolve));
		ws.send(JSON.stringify({ type: "draining" }));
		const event = await closed;
		expect(event.code).toBe(1008);
		expect(event.reason).toContain("the first frame must be hello");
	});

	it("a frame that does not parse closes the socket with 1008", async () => {
		const server = await registerConnectorServer();
		const { token } = await connectorToken(server);
		const response = await dial(server, { authorization: `Bearer ${token}` });
		const ws = response.webSocket;
		if (!ws) throw new Error(`no socket: ${response.status}`);
		ws.accept();
		const closed = new Promise<CloseEvent>((resolve) => ws.addEventListener("close", resolve));
		ws.send("{not json");
		expect((await closed).code).toBe(1008);
	});
});
