import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { BASE, createKey, mcpHeaders, openSession, readReply } from "./support/gateway.ts";
import { registerServer } from "./support/upstreams.ts";

/** A request through the second edge Worker (own isolate, same Durable Object namespaces). */
function edgeB(path: string, init: RequestInit): Promise<Response> {
	return env.EDGE_B.fetch(new Request(`${BASE}${path}`, init));
}

function post(path: string, key: string, sessionId: string, message: unknown) {
	return edgeB(path, {
		method: "POST",
		headers: mcpHeaders(key, sessionId, { "mcp-protocol-version": "2025-11-25" }),
		body: JSON.stringify(message),
	});
}

describe("many stateless edges, one session", () => {
	it("a session opened through one Worker continues through the other, with the scope it opened with", async () => {
		const server = await registerServer("alpha");
		const { key } = await createKey();
		const sessionId = await openSession(`/mcp/${server}`, key);

		const listed = await readReply(
			await post(`/mcp/${server}`, key, sessionId, { jsonrpc: "2.0", id: 1, method: "tools/list" }),
		);
		// The demo catalog's seven tools and the tests' gate.
		expect(((listed.result?.tools ?? []) as unknown[]).length).toBe(8);
		const called = await readReply(
			await post(`/mcp/${server}`, key, sessionId, {
				jsonrpc: "2.0",
				id: 2,
				method: "tools/call",
				params: { name: "whoami", arguments: {} },
			}),
		);
		expect(called.result?.content).toEqual([{ type: "text", text: "alpha" }]);

		const other = await createKey();
		expect((await post(`/mcp/${server}`, other.key, sessionId, { jsonrpc: "2.0", id: 3, method: "ping" })).status).toBe(
			404,
		);
	});

	it("DELETE through the second Worker ends the session on both", async () => {
		const server = await registerServer("beta");
		const { key } = await createKey();
		const sessionId = await openSession(`/mcp/${server}`, key);
		const deleted = await edgeB(`/mcp/${server}`, { method: "DELETE", headers: mcpHeaders(key, sessionId) });
		expect(deleted.status).toBe(204);
		expect((await post(`/mcp/${server}`, key, sessionId, { jsonrpc: "2.0", id: 1, method: "ping" })).status).toBe(404);
		const { exports } = await import("cloudflare:workers");
		const viaA = await exports.default.fetch(
			new Request(`${BASE}/mcp/${server}`, {
				method: "POST",
				headers: mcpHeaders(key, sessionId),
				body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "ping" }),
			}),
		);
		expect(viaA.status).toBe(404);
	});
});
