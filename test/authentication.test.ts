import { describe, expect, it } from "vitest";
import {
	admin,
	connectClient,
	createKey,
	gatewayFetch,
	initializeBody,
	mcpHeaders,
	postInitialize,
} from "./support/gateway.ts";
import { registerServer, upstreamLog } from "./support/upstreams.ts";

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
		const response = await postInitialize(`/mcp/${server}`, "mcpgw_unknown");
		expect(response.status).toBe(401);
		expect(response.headers.get("www-authenticate")).toMatch(/^Bearer/);
	});

	it("a revoked API key gets 401", async () => {
		const server = await registerServer("beta");
		const { id, key } = await createKey();
		await admin("DELETE", `/keys/${id}`);
		const response = await postInitialize(`/mcp/${server}`, key);
		expect(response.status).toBe(401);
	});

	it("the client's Authorization never travels upstream; the upstream gets its configured credential", async () => {
		const server = await registerServer("alpha");
		const { key } = await createKey();
		const { client } = await connectClient(`/mcp/${server}`, key);
		await client.callTool({ name: "whoami", arguments: { marker: server } });
		await client.close();
		const log = await upstreamLog("alpha");
		expect(JSON.stringify(log)).not.toContain(key);
		// This session's upstream requests: the ones in the upstream session its marked call used.
		const marked = log.find((entry) => JSON.stringify(entry.body ?? null).includes(server));
		const mine = log.filter((entry) => entry.sessionId !== null && entry.sessionId === marked?.sessionId);
		expect(mine.length).toBeGreaterThan(0);
		expect(mine.every((entry) => entry.authorization === "Bearer alpha-secret")).toBe(true);
	});
});
