/**
 * The benchmark's upstream for its 2026-07-28 measurements, as its own
 * process: SDK v2's `McpServer` behind `createMcpHandler` with
 * `legacy: "stateless"`, so one definition serves both eras, with the `echo`
 * tool the rest of the benchmark calls. The SDK's handler speaks web
 * `Request`/`Response`; the conformance reference's bridge serves it from
 * `node:http`, streaming bodies.
 *
 * It counts what it receives, by era and method (`GET /_counts`,
 * `POST /_counts/reset`): which requests a client's call turned into on the
 * way (a `server/discover` probe, a 2025 handshake) shows in these counts.
 *
 * Prints one line `ready <port>` once it listens. Exits on SIGTERM/SIGINT and
 * when its stdin closes, so it never outlives the benchmark that started it.
 */
import { createMcpHandler, McpServer, PROTOCOL_VERSION_META_KEY } from "@modelcontextprotocol/server";
import { z } from "zod";
import { serveFetch } from "../fixtures/node-fetch-bridge.ts";
import { exitWhenParentGoes, HOST } from "../processes.ts";

/** Requests received, by `<era> <method>` (`2026-07-28 tools/call`, `2025 initialize`, `GET`). */
const counts = new Map<string, number>();

function buildServer(): McpServer {
	const server = new McpServer({ name: "bench-modern", version: "2.0.0" });
	server.registerTool(
		"echo",
		{ description: "Echoes the text back.", inputSchema: z.object({ text: z.string() }) },
		async ({ text }) => ({ content: [{ type: "text", text }] }),
	);
	return server;
}

/** `<era> <method>` of a request: the era from the body's envelope (2026-07-28) or its absence (2025). */
async function kindOf(request: Request): Promise<string> {
	if (request.method !== "POST") return request.method;
	let body: unknown;
	try {
		body = JSON.parse(await request.clone().text());
	} catch (error) {
		return `unparsable POST (${error instanceof Error ? error.name : "error"})`;
	}
	if (typeof body !== "object" || body === null || Array.isArray(body)) return "POST (batch or not an object)";
	const { method, params } = body as { method?: unknown; params?: { _meta?: Record<string, unknown> } };
	const version = params?._meta?.[PROTOCOL_VERSION_META_KEY];
	return `${typeof version === "string" ? version : "2025"} ${typeof method === "string" ? method : "(response)"}`;
}

const handler = createMcpHandler(() => buildServer(), {
	legacy: "stateless",
	onerror: (error) => console.error(`bench modern upstream: ${error.message}`),
});

const server = await serveFetch(
	async (request) => {
		const path = new URL(request.url).pathname;
		if (path === "/_counts" && request.method === "GET") return Response.json(Object.fromEntries(counts));
		if (path === "/_counts/reset" && request.method === "POST") {
			counts.clear();
			return new Response(null, { status: 204 });
		}
		const kind = await kindOf(request);
		counts.set(kind, (counts.get(kind) ?? 0) + 1);
		return handler.fetch(request);
	},
	HOST,
	0,
);
console.log(`ready ${server.port}`);

exitWhenParentGoes(() => Promise.all([handler.close(), server.close()]));
