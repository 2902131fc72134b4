/**
 * A real MCP server of the 2026-07-28 era (SDK v2's `McpServer` behind
 * `createMcpHandler`) on loopback, for the tests. `legacy: "reject"` serves
 * the modern era only; `legacy: "stateless"` also serves 2025-era clients from
 * the same factory, statelessly (both eras, one definition).
 *
 * The SDK's handler is web-standard (Request in, Response out); it is served
 * from `node:http` by the conformance reference's bridge, which streams the
 * response body so SSE replies reach the client as they are written.
 *
 * Tools: `echo` (text), `add` (structured), `whoami` (what the request's
 * envelope said: protocol version, clientInfo, clientCapabilities, and the
 * era that served it), `region_echo` (its `region` argument is mirrored into
 * the `Mcp-Param-Region` header, which it returns), `ask_name` (asks for a
 * name with a form elicitation as `inputRequired`, its state sealed by HMAC,
 * and answers `hello <name>` on the retry), `gate` (waits for the test, as the
 * 2025 fixtures' gate does); one resource (`demo://<name>/readme`) and one
 * prompt (`greet`).
 *
 * Control API, as the 2025 fixtures have it: `GET /_log` (every MCP request:
 * HTTP method, headers, body), `/_gates/<name>` and `/_gates/<name>/release`.
 */
import {
	acceptedContent,
	type CallToolResult,
	CLIENT_CAPABILITIES_META_KEY,
	CLIENT_INFO_META_KEY,
	createMcpHandler,
	createRequestStateCodec,
	InMemoryServerEventBus,
	type InputRequiredResult,
	inputRequired,
	McpServer,
	PROTOCOL_VERSION_META_KEY,
	type ServerContext,
} from "@modelcontextprotocol/server";
import { z } from "zod";
import { serveFetch } from "../test/reference/node-fetch-bridge.ts";
import { Gates, gateControlAnswer, loggedBody, type RunningUpstream } from "./upstream-server.ts";

export interface ModernUpstreamOptions {
	/** Names the server in its serverInfo and tool outputs. */
	name: string;
	/** What 2025-era requests get: an error naming the supported versions, or stateless service. */
	legacy: "reject" | "stateless";
	/** How modern replies are framed: JSON unless the handler streams (`auto`, the default), or always SSE. */
	responseMode?: "auto" | "sse";
	port?: number;
}

/** One request as the fixture received it, at `GET /_log`. */
export interface ModernRecordedRequest {
	method: string;
	/** Every header, lower-cased names. */
	headers: Record<string, string>;
	body: unknown;
}

/** What `ask_name` keeps between its rounds, sealed in `requestState`. */
interface AskNameState {
	step: "asked";
}

const NAME_FORM = {
	type: "object" as const,
	properties: { name: { type: "string" as const, description: "Your name" } },
	required: ["name"],
};

/** What `whoami` answers: what the request's envelope carried, and the era that served it. */
function whoami(name: string, era: "legacy" | "modern", ctx: ServerContext): CallToolResult {
	const envelope: Record<string, unknown> = ctx.mcpReq.envelope ?? {};
	const seen = {
		server: name,
		era,
		protocolVersion: envelope[PROTOCOL_VERSION_META_KEY] ?? null,
		clientInfo: envelope[CLIENT_INFO_META_KEY] ?? null,
		clientCapabilities: envelope[CLIENT_CAPABILITIES_META_KEY] ?? null,
	};
	return { content: [{ type: "text", text: JSON.stringify(seen) }], structuredContent: seen };
}

/** The one definition both eras are served from. */
function buildServer(
	options: ModernUpstreamOptions,
	era: "legacy" | "modern",
	gates: Gates,
	stateCodec: ReturnType<typeof createRequestStateCodec<AskNameState>>,
	bus: InMemoryServerEventBus,
): McpServer {
	const { name } = options;
	const server = new McpServer(
		{ name, version: "2.0.0" },
		{
			instructions: `Tools of ${name}.`,
			requestState: { verify: stateCodec.verify },
			capabilities: { tools: { listChanged: true }, resources: { subscribe: true } },
		},
	);
	server.registerTool(
		"touch_resource",
		{
			description: "Tells subscriptions/listen streams subscribed to the URI that the resource changed.",
			inputSchema: z.object({ uri: z.string() }),
		},
		async ({ uri }) => {
			bus.publish({ kind: "resource_updated", uri });
			return { content: [{ type: "text", text: `touched ${uri}` }] };
		},
	);
	server.registerTool(
		"announce_tools_changed",
		{ description: "Tells subscriptions/listen streams (and 2025 sessions) that the tool list changed." },
		async () => {
			bus.publish({ kind: "tools_list_changed" });
			if (era === "legacy") await server.sendToolListChanged();
			return { content: [{ type: "text", text: "announced" }] };
		},
	);
	server.registerTool(
		"echo",
		{ description: "Echoes the text back.", inputSchema: z.object({ text: z.string() }) },
		async ({ text }) => ({ content: [{ type: "text", text }] }),
	);
	server.registerTool(
		"add",
		{
			description: "Adds two numbers.",
			inputSchema: z.object({ a: z.number(), b: z.number() }),
			outputSchema: z.object({ sum: z.number() }),
			annotations: { readOnlyHint: true },
		},
		async ({ a, b }) => ({ content: [{ type: "text", text: String(a + b) }], structuredContent: { sum: a + b } }),
	);
	server.registerTool(
		"whoami",
		{
			description: "Says what the request's envelope carried (clientInfo, clientCapabilities) and which era served it.",
		},
		async (ctx) => whoami(name, era, ctx),
	);
	server.registerTool(
		"region_echo",
		{
			description: "Returns the Mcp-Param-Region header it received; `region` is mirrored into it.",
			inputSchema: z.object({ region: z.string().meta({ "x-mcp-header": "Region" }) }),
		},
		async ({ region }, ctx) => {
			const header = ctx.http?.req?.headers.get("mcp-param-region") ?? null;
			return {
				content: [{ type: "text", text: header ?? "(no Mcp-Param-Region header)" }],
				structuredContent: { region, header },
			};
		},
	);
	server.registerTool(
		"ask_name",
		{ description: "Asks the user's name (a form elicitation), then greets them." },
		async (ctx): Promise<CallToolResult | InputRequiredResult> => {
			const answer = acceptedContent<{ name?: unknown }>(ctx.mcpReq.inputResponses, "name");
			const asked = ctx.mcpReq.requestState<AskNameState>()?.step === "asked";
			if (asked && typeof answer?.name === "string") {
				return { content: [{ type: "text", text: `hello ${answer.name}` }] };
			}
			return inputRequired({
				inputRequests: { name: inputRequired.elicit({ message: "What is your name?", requestedSchema: NAME_FORM }) },
				requestState: await stateCodec.mint({ step: "asked" }),
			});
		},
	);
	server.registerTool(
		"gate",
		{
			description: "Test fixture: waits until the named gate is released (POST /_gates/<name>/release), then answers.",
			inputSchema: z.object({ name: z.string().min(1).max(200) }),
		},
		async ({ name: gate }, ctx) => {
			await gates.pass(gate, ctx.mcpReq.signal);
			return { content: [{ type: "text", text: `gate ${gate} passed` }] };
		},
	);
	server.registerResource(
		"readme",
		`demo://${name}/readme`,
		// The same for everyone, for a minute: a shared cache may keep it.
		{ description: "About this server.", mimeType: "text/plain", cacheHint: { ttlMs: 60_000, cacheScope: "public" } },
		async (uri) => ({ contents: [{ uri: uri.href, mimeType: "text/plain", text: `This is ${name}.` }] }),
	);
	let reads = 0;
	server.registerResource(
		"private-note",
		`demo://${name}/private`,
		// No cache hint: the SDK marks it private (ttlMs 0), never to be shared.
		{ description: "A note for the caller only.", mimeType: "text/plain" },
		async (uri) => ({ contents: [{ uri: uri.href, mimeType: "text/plain", text: `private read ${++reads}` }] }),
	);
	server.registerPrompt(
		"greet",
		{ description: "A greeting.", argsSchema: z.object({ who: z.string() }) },
		({ who }) => ({ messages: [{ role: "user", content: { type: "text", text: `Hello, ${who}, from ${name}!` } }] }),
	);
	return server;
}

/** Starts the upstream; resolves once it listens. */
export async function startModernUpstream(options: ModernUpstreamOptions): Promise<RunningUpstream> {
	const gates = new Gates();
	const log: ModernRecordedRequest[] = [];
	// One key per process: every round of an `ask_name` flow reaches this process.
	const stateCodec = createRequestStateCodec<AskNameState>({ key: crypto.getRandomValues(new Uint8Array(32)) });
	// The bus subscriptions/listen streams are served from, so a tool can announce list changes.
	const bus = new InMemoryServerEventBus();
	const handler = createMcpHandler(({ era }) => buildServer(options, era, gates, stateCodec, bus), {
		legacy: options.legacy,
		bus,
		responseMode: options.responseMode ?? "auto",
		onerror: (error) => console.error(`modern upstream ${options.name}:`, error.message),
	});
	const serve = async (request: Request): Promise<Response> => {
		const path = new URL(request.url).pathname;
		if (path === "/_log") return Response.json(log);
		const gate = gateControlAnswer(gates, request.method, path);
		if (gate) return Response.json(gate.body, { status: gate.status });
		log.push({
			method: request.method,
			headers: Object.fromEntries(request.headers),
			body: loggedBody(await request.clone().text()),
		});
		return handler.fetch(request);
	};
	const server = await serveFetch(serve, "127.0.0.1", options.port ?? 0);
	return {
		port: server.port,
		url: `http://127.0.0.1:${server.port}/mcp`,
		close: async () => {
			await handler.close();
			await server.close();
		},
	};
}

// Run directly: `node scripts/modern-upstream.ts [port] [name] [reject|stateless]`.
if (import.meta.url === `file://${process.argv[1]}`) {
	const port = Number(process.argv[2] ?? 8789);
	const name = process.argv[3] ?? "modern";
	const legacy = process.argv[4] === "stateless" ? "stateless" : "reject";
	const upstream = await startModernUpstream({ name, legacy, port });
	console.log(`modern upstream '${name}' (legacy: ${legacy}) listening at ${upstream.url}`);
}
