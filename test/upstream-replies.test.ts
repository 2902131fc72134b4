import { describe, expect, it } from "vitest";
import { admin, createKey, openSession, postInitialize, readReply, rpc, uniqueName } from "./support/gateway.ts";
import { registerServer, upstreamUrl } from "./support/upstreams.ts";

type ToolResult = { isError?: boolean; content: Array<{ text?: string }>; _meta?: Record<string, unknown> };

describe("bounded replies", () => {
	for (const which of ["alpha", "beta"] as const) {
		it(`a reply over MAX_REPLY_BYTES fails that call with kind reply_too_large (${which === "alpha" ? "SSE" : "JSON"}), and the session carries on`, async () => {
			const server = await registerServer(which);
			const path = `/mcp/${server}`;
			const { key } = await createKey();
			const sessionId = await openSession(path, key);
			const reply = await readReply(
				await rpc(path, key, sessionId, {
					jsonrpc: "2.0",
					id: 5,
					method: "tools/call",
					params: { name: "blob", arguments: { kib: 3000 } },
				}),
			);
			const result = reply.result as ToolResult;
			expect(result.isError).toBe(true);
			expect(result._meta?.["mcp-edge-gateway/error"]).toEqual({ kind: "reply_too_large", server });
			const small = await readReply(
				await rpc(path, key, sessionId, {
					jsonrpc: "2.0",
					id: 6,
					method: "tools/call",
					params: { name: "blob", arguments: { kib: 64 } },
				}),
			);
			expect((small.result as ToolResult).content[0]?.text).toHaveLength(64 * 1024);
		});
	}
});

describe("credentials stay secret", () => {
	it("error texts never contain credentials from the upstream URL or headers", async () => {
		const name = uniqueName("leaky");
		// Credentials in the URL's user part are refused at PUT (schemas.ts); a query and headers are not.
		const put = await admin("PUT", `/servers/${name}`, {
			url: "http://127.0.0.1:9/mcp?token=url-token-secret",
			headers: { Authorization: "Bearer header-token-secret" },
		});
		expect(put.status).toBe(201);
		const registered = await put.text();
		const { key } = await createKey();
		const response = await postInitialize(`/mcp/${name}`, key);
		const text = await response.text();
		// The registered server's own failure, not a 404 for a server that was never written.
		expect(JSON.parse(text)).toMatchObject({ error: { data: { kind: "upstream_unavailable", server: name } } });
		for (const secret of ["url-token-secret", "header-token-secret"]) {
			expect(text).not.toContain(secret);
			expect(registered).not.toContain(secret);
		}
	});

	it("an upstream's 401 at initialize is reported as rejected credentials, never with the configured credential", async () => {
		const name = uniqueName("wrongcred");
		await admin("PUT", `/servers/${name}`, {
			url: upstreamUrl("alpha"),
			headers: { Authorization: "Bearer wrong-secret" },
		});
		const { key } = await createKey();
		const response = await postInitialize(`/mcp/${name}`, key);
		const text = await response.text();
		expect(text).toContain("rejected the gateway's credentials (HTTP 401) for initialize");
		expect(text).toContain('"kind":"upstream_auth_required"');
		expect(text).not.toContain("wrong-secret");
	});
});
