import { describe, expect, it } from "vitest";
import {
	admin,
	connectClient,
	createKey,
	gatewayFetch,
	initializeBody,
	mcpHeaders,
	registerServer,
	upstreamLog,
} from "./helpers.ts";

describe("authentication at the edge", () => {
	it("a request without an API key gets 401 with WWW-Authenticate and a JSON-RPC error", async () => {
		const server = await registerServer("beta");
		const headers = mcpHeaders("x");
		delete headers.authorization;
		const response = await gatewayFetch(`/mcp/${server}`, {
			method: "POST",
			headers,
			body: JSON.stringify(initializeBody()),
		});
		expect(response.status).toBe(401);
		expect(response.headers.get("www-authenticate")).toMatch(/^Bearer/);
		const body = (await response.json()) as {
			jsonrpc: string;
			error: { code: number; message: string; data: { kind: string } };
		};
		expect(body.jsonrpc).toBe("2.0");
		expect(body.error.data.kind).toBe("unauthenticated");
		expect(body.error.message).toMatch(/Authorization: Bearer/);
	});

	it("an unknown API key gets 401", async () => {
		const server = await registerServer("beta");
		const response = await gatewayFetch(`/mcp/${server}`, {
			method: "POST",
			headers: mcpHeaders("mcpgw_unknown"),
			body: JSON.stringify(initializeBody()),
		});
		expect(response.status).toBe(401);
		expect(response.headers.get("www-authenticate")).toMatch(/^Bearer/);
	});

	it("a revoked API key gets 401", async () => {
		const server = await registerServer("beta");
		const { id, key } = await createKey();
		await admin("DELETE", `/keys/${id}`);
		const response = await gatewayFetch(`/mcp/${server}`, {
			method: "POST",
			headers: mcpHeaders(key),
			body: JSON.stringify(initializeBody()),
		});
		expect(response.status).toBe(401);
	});

	it("the client's Authorization never travels upstream; the upstream gets its configured credential", async () => {
		const server = await registerServer("alpha");
		const { key } = await createKey();
		const { client } = await connectClient(`/mcp/${server}`, key);
		await client.callTool({ name: "whoami", arguments: {} });
		await client.close();
		const log = await upstreamLog("alpha");
		expect(log.length).toBeGreaterThan(0);
		expect(JSON.stringify(log)).not.toContain(key);
		expect(log.every((entry) => entry.authorization === "Bearer alpha-secret")).toBe(true);
	});
});
