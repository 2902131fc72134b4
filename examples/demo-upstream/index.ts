/**
 * The demo upstream as a Worker of its own: a real MCP server (SDK v2, both
 * protocol eras, no state) with the tools `echo` and `add`, for the smoke test
 * after a deploy (docs/deploy.md, step 9). It needs no secret and keeps nothing.
 *
 *   npx wrangler deploy --config examples/demo-upstream/wrangler.toml
 *
 * It answers `/mcp` (streamable HTTP) and `/healthz`; nothing else.
 */
import { createMcpHandler, McpServer } from "@modelcontextprotocol/server";
import { registerEchoAndAdd } from "../../scripts/fixtures/demo-tools.ts";

/** One server per request: the handler serves each request on its own, 2025 clients statelessly. */
function demoServer(): McpServer {
	const server = new McpServer({ name: "demo-upstream", version: "1.0.0" }, { instructions: "Tools of the demo." });
	registerEchoAndAdd(server);
	return server;
}

const handler = createMcpHandler(demoServer, { legacy: "stateless" });

export default {
	fetch(request: Request): Promise<Response> | Response {
		const { pathname } = new URL(request.url);
		if (pathname === "/mcp") return handler.fetch(request);
		if (pathname === "/healthz") return Response.json({ ok: true });
		return new Response("Not Found: this Worker is an MCP server at /mcp.\n", { status: 404 });
	},
} satisfies ExportedHandler;
