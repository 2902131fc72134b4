import { describe, expect, it } from "vitest";
import { BASE, BROWSER_ACCEPT, gatewayFetch, readReply } from "./support/gateway.ts";
import { gatewayWith, ORIGIN } from "./support/oauth-client.ts";

describe("the gateway's address, /", () => {
	it("answers a browser with a short page: what this is, the /mcp endpoint to give a client, and where to go", async () => {
		const response = await gatewayFetch("/", { headers: { accept: BROWSER_ACCEPT } });
		expect(response.status).toBe(200);
		expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
		expect(response.headers.get("cache-control")).toBe("no-store");
		expect(response.headers.get("x-frame-options")).toBe("DENY");
		const html = await response.text();
		expect(html).toContain("<h1>This is an MCP gateway</h1>");
		expect(html).toContain(`<code>${BASE}/mcp</code>`);
		expect(html).toContain('href="/admin/"');
		expect(html).toContain('href="/admin/docs"');
		// This gateway signs nobody in: no connections page to point at.
		expect(html).not.toContain('href="/connections"');
	});

	it("points a browser at /connections when the gateway signs people in", async () => {
		const signingIn = gatewayWith({ OIDC_ISSUER: "http://127.0.0.1:1", OIDC_CLIENT_ID: "c", OIDC_CLIENT_SECRET: "s" });
		const html = await (await signingIn(`${ORIGIN}/`, { headers: { accept: BROWSER_ACCEPT } })).text();
		expect(html).toContain('href="/connections"');
		expect(html).toContain(`<code>${ORIGIN}/mcp</code>`);
	});

	it("answers anything that is not a browser's page load as before: 404 with the JSON-RPC error", async () => {
		const requests: RequestInit[] = [
			{},
			{ headers: { accept: "application/json, text/event-stream" } },
			{ method: "POST", headers: { accept: BROWSER_ACCEPT, "content-type": "application/json" }, body: "{}" },
		];
		for (const init of requests) {
			const response = await gatewayFetch("/", init);
			expect(response.status).toBe(404);
			expect(response.headers.get("content-type")).toContain("application/json");
			const { error } = await readReply(response);
			expect(error?.message).toBe("Not Found: / is not an endpoint of this gateway.");
		}
	});
});
