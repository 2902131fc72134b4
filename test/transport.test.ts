import { env, listDurableObjectIds } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import {
	createKey,
	gatewayFetch,
	initializeBody,
	mcpHeaders,
	openSession,
	readReply,
	rpc,
	uniqueName,
} from "./support/gateway.ts";
import { upstreamSessionId } from "./support/session-object.ts";
import { registerServer, upstreamGate, upstreamSessionLog } from "./support/upstreams.ts";

async function setup() {
	const server = await registerServer("alpha");
	const path = `/mcp/${server}`;
	const { key } = await createKey();
	const sessionId = await openSession(path, key);
	/** What alpha received in this session's upstream session. */
	const upstreamReceived = async () => upstreamSessionLog("alpha", await upstreamSessionId(sessionId, server));
	return { path, key, sessionId, upstreamReceived };
}

describe("streamable HTTP transport checks", () => {
	it("a body over the limit gets 413", async () => {
		const { path, key, sessionId } = await setup();
		const big = JSON.stringify({
			jsonrpc: "2.0",
			id: 1,
			method: "tools/call",
			params: { name: "echo", arguments: { text: "x".repeat(4 * 1024 * 1024 + 1) } },
		});
		const response = await rpc(path, key, sessionId, JSON.parse(big));
		expect(response.status).toBe(413);
		expect((await readReply(response)).error?.data?.kind).toBe("payload_too_large");
	});

	it("a POST that does not accept both JSON and SSE gets 406", async () => {
		const { path, key, sessionId } = await setup();
		const response = await gatewayFetch(path, {
			method: "POST",
			headers: mcpHeaders(key, sessionId, { accept: "application/json" }),
			body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
		});
		expect(response.status).toBe(406);
	});

	it("a GET that does not accept SSE gets 406", async () => {
		const { path, key, sessionId } = await setup();
		const response = await gatewayFetch(path, {
			method: "GET",
			headers: mcpHeaders(key, sessionId, { accept: "application/json" }),
		});
		expect(response.status).toBe(406);
	});

	it("a POST that is not application/json gets 415", async () => {
		const { path, key, sessionId } = await setup();
		const response = await gatewayFetch(path, {
			method: "POST",
			headers: mcpHeaders(key, sessionId, { "content-type": "text/plain" }),
			body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
		});
		expect(response.status).toBe(415);
	});

	it("invalid JSON gets 400 with a -32700 parse error", async () => {
		const { path, key, sessionId } = await setup();
		const response = await gatewayFetch(path, { method: "POST", headers: mcpHeaders(key, sessionId), body: "{oops" });
		expect(response.status).toBe(400);
		expect((await readReply(response)).error?.code).toBe(-32700);
	});

	it("a body that is not a JSON-RPC message gets 400 with -32600", async () => {
		const { path, key, sessionId } = await setup();
		for (const body of ['{"hello":"world"}', "[]", "42"]) {
			const response = await gatewayFetch(path, { method: "POST", headers: mcpHeaders(key, sessionId), body });
			expect(response.status).toBe(400);
			expect((await readReply(response)).error?.code).toBe(-32600);
		}
	});

	it("a client notification is forwarded and gets 202", async () => {
		const { path, key, sessionId, upstreamReceived } = await setup();
		const response = await rpc(path, key, sessionId, {
			jsonrpc: "2.0",
			method: "notifications/cancelled",
			params: { requestId: 99, reason: "test" },
		});
		expect(response.status).toBe(202);
		const forwarded = (await upstreamReceived()).filter((entry) => entry.body?.method === "notifications/cancelled");
		expect(forwarded.map((entry) => entry.body?.params)).toEqual([{ requestId: 99, reason: "test" }]);
	});

	it("a client response is forwarded and gets 202", async () => {
		const { path, key, sessionId, upstreamReceived } = await setup();
		const id = uniqueName("srv");
		const response = await rpc(path, key, sessionId, { jsonrpc: "2.0", id, result: {} });
		expect(response.status).toBe(202);
		const forwarded = (await upstreamReceived()).filter((entry) => entry.body?.id === id);
		expect(forwarded.map((entry) => entry.body)).toEqual([{ jsonrpc: "2.0", id, result: {} }]);
	});

	it("other methods get 405 with Allow", async () => {
		const { path, key } = await setup();
		const response = await gatewayFetch(path, { method: "PUT", headers: mcpHeaders(key) });
		expect(response.status).toBe(405);
		expect(response.headers.get("allow")).toBe("GET, POST, DELETE");
	});

	it("a foreign Origin gets 403; the gateway's own origin passes", async () => {
		const { path, key, sessionId } = await setup();
		const foreign = await rpc(
			path,
			key,
			sessionId,
			{ jsonrpc: "2.0", id: 1, method: "tools/list" },
			{ origin: "https://evil.example" },
		);
		expect(foreign.status).toBe(403);
		const own = await rpc(
			path,
			key,
			sessionId,
			{ jsonrpc: "2.0", id: 1, method: "tools/list" },
			{ origin: "http://gateway.test" },
		);
		expect(own.status).toBe(200);
	});

	it("an origin listed in ALLOWED_ORIGINS passes and gets CORS headers, including a preflight", async () => {
		const { path, key, sessionId } = await setup();
		const preflight = await gatewayFetch(path, {
			method: "OPTIONS",
			headers: {
				origin: "https://app.example",
				"access-control-request-method": "POST",
				"access-control-request-headers": "authorization, content-type, mcp-session-id",
			},
		});
		expect(preflight.status).toBe(204);
		expect(preflight.headers.get("access-control-allow-origin")).toBe("https://app.example");
		const response = await rpc(
			path,
			key,
			sessionId,
			{ jsonrpc: "2.0", id: 1, method: "ping" },
			{ origin: "https://app.example" },
		);
		expect(response.status).toBe(200);
		expect(response.headers.get("access-control-expose-headers")).toContain("Mcp-Session-Id");
		const foreign = await gatewayFetch(path, {
			method: "OPTIONS",
			headers: { origin: "https://evil.example", "access-control-request-method": "POST" },
		});
		expect(foreign.headers.get("access-control-allow-origin")).toBeNull();
	});

	it("GET without a session ID gets 400", async () => {
		const { path, key } = await setup();
		const response = await gatewayFetch(path, {
			method: "GET",
			headers: mcpHeaders(key, undefined, { accept: "text/event-stream" }),
		});
		expect(response.status).toBe(400);
	});

	it("the GET stream is proxied as an event stream", async () => {
		const { path, key, sessionId, upstreamReceived } = await setup();
		const controller = new AbortController();
		const response = await gatewayFetch(path, {
			method: "GET",
			headers: mcpHeaders(key, sessionId, { accept: "text/event-stream" }),
			signal: controller.signal,
		});
		expect(response.status).toBe(200);
		expect(response.headers.get("content-type")).toContain("text/event-stream");
		expect(response.headers.get("mcp-session-id")).toBeNull();
		await response.body?.cancel();
		expect((await upstreamReceived()).filter((entry) => entry.method === "GET")).toHaveLength(1);
	});

	it("an SSE response is streamed, not buffered whole: the first event arrives before the call ends", async () => {
		const { path, key, sessionId } = await setup();
		// The gate tool sends one progress notification on arrival, then waits until the test releases it.
		const gate = upstreamGate("alpha");
		const response = await rpc(path, key, sessionId, gate.call(5, "gate", { progressToken: "p" }));
		expect(response.headers.get("content-type")).toContain("text/event-stream");
		const reader = (response.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader();
		const first = await reader.read();
		expect(first.value).toContain("notifications/progress");
		expect(first.value).not.toContain('"result"');
		// The call is still held at the upstream: the event came while it ran.
		expect((await gate.status()).waiting).toBe(1);
		await gate.release();
		let rest = "";
		for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) rest += chunk.value;
		expect(rest).toContain(`gate ${gate.name} passed`);
	});

	it("initialize with a body over the limit is refused before any session exists", async () => {
		const server = await registerServer("beta");
		const { key } = await createKey();
		const body = initializeBody();
		(body.params.clientInfo as { name: string }).name = "x".repeat(4 * 1024 * 1024);
		const before = (await listDurableObjectIds(env.SESSIONS)).length;
		const response = await gatewayFetch(`/mcp/${server}`, {
			method: "POST",
			headers: mcpHeaders(key),
			body: JSON.stringify(body),
		});
		expect(response.status).toBe(413);
		expect(response.headers.get("mcp-session-id")).toBeNull();
		expect((await listDurableObjectIds(env.SESSIONS)).length).toBe(before);
	});
});
