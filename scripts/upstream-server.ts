/**
 * A real MCP server (the SDK's McpServer over streamable HTTP) on loopback,
 * used as the demo upstream of `npm start`, by the tests and by the
 * benchmarks. It records what it receives at `GET /_log` so tests can check
 * exactly what crossed the gateway.
 *
 * With `gates: true` (the test upstreams) it also offers the `gate` tool: a
 * call that does not answer until the test releases it, so a test can hold a
 * call under way for exactly as long as it needs, without sleeping:
 * - `GET /_gates/<name>`: `{ waiting, arrived, passed, cancelled, released }`;
 * - `POST /_gates/<name>/release`: lets every waiting and later call through.
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Server as McpLowLevelServer } from "@modelcontextprotocol/sdk/server/index.js";
import { McpServer, ResourceTemplate } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

export interface UpstreamOptions {
	/** Names the server in its serverInfo and tool outputs. */
	name: string;
	port?: number;
	/** When set, requests must carry `Authorization: Bearer <token>` or get 401. */
	requireToken?: string;
	/** Answer with JSON instead of SSE. */
	enableJsonResponse?: boolean;
	/**
	 * What the server offers: the demo catalog (default); the demo catalog plus a
	 * tool with a 70-character name; or a catalog that changes under a list
	 * (announces list_changed, then answers its first tools/list late with
	 * `stale_tool`, and `fresh_tool` from then on).
	 */
	catalog?: "demo" | "long-names" | "shifting" | "mutable" | "paged";
	/** Adds the `gate` tool to the demo catalog (tests); its control API answers in any case. */
	gates?: boolean;
	/** Adds tools that ask the client (sampling, elicitation, roots) and log outside requests (tests). */
	peer?: boolean;
	/**
	 * Keeps an event store per session, so SSE replies to 2025-11-25 clients
	 * start with a priming event (an id and this `retry`, in ms) and a lost
	 * reply can be resumed with GET and Last-Event-ID; adds the
	 * `close_stream_then_answer` tool to the demo catalog.
	 */
	resumable?: { retryMs: number };
}

import { registerClientRequestTools } from "./client-request-tools.ts";
import { LONG_TOOL_NAME } from "./fixture-names.ts";
import { MemoryEventStore } from "./memory-event-store.ts";

export interface RecordedRequest {
	method: string;
	authorization: string | null;
	sessionId: string | null;
	protocolVersion: string | null;
	lastEventId: string | null;
	body: unknown;
}

export interface RunningUpstream {
	port: number;
	url: string;
	close(): Promise<void>;
}

/** Tools, a prompt and resources: enough to exercise every kind of MCP message. */
export function registerDemoCatalog(server: McpServer, name: string): void {
	server.registerTool(
		"echo",
		{ description: "Echoes the text back.", inputSchema: { text: z.string() } },
		async ({ text }) => ({ content: [{ type: "text", text }] }),
	);
	server.registerTool(
		"add",
		{
			description: "Adds two numbers.",
			inputSchema: { a: z.number(), b: z.number() },
			outputSchema: { sum: z.number() },
			annotations: { readOnlyHint: true },
		},
		async ({ a, b }) => ({ content: [{ type: "text", text: String(a + b) }], structuredContent: { sum: a + b } }),
	);
	server.registerTool("whoami", { description: "Names the upstream server that answered." }, async () => ({
		content: [{ type: "text", text: name }],
	}));
	server.registerTool(
		"sleep",
		{
			description: "Waits the given milliseconds, then answers.",
			inputSchema: { ms: z.number().int().min(0).max(600_000) },
		},
		async ({ ms }) => {
			await new Promise((resolve) => setTimeout(resolve, ms));
			return { content: [{ type: "text", text: `slept ${ms} ms` }] };
		},
	);
	server.registerTool(
		"progress",
		{
			description: "Sends progress notifications, optionally spaced by a delay, then answers.",
			inputSchema: { steps: z.number().int().min(1).max(100), delayMs: z.number().int().min(0).max(10_000).optional() },
		},
		async ({ steps, delayMs }, extra) => {
			const token = extra._meta?.progressToken;
			for (let step = 1; step <= steps; step++) {
				if (token !== undefined) {
					await extra.sendNotification({
						method: "notifications/progress",
						params: { progressToken: token, progress: step, total: steps },
					});
				}
				if (delayMs) await new Promise((resolve) => setTimeout(resolve, delayMs));
			}
			return { content: [{ type: "text", text: `done in ${steps} steps` }] };
		},
	);
	server.registerTool(
		"blob",
		{
			description: "Returns a text of the given size in KiB.",
			inputSchema: { kib: z.number().int().min(1).max(8192) },
		},
		async ({ kib }) => ({ content: [{ type: "text", text: "x".repeat(kib * 1024) }] }),
	);
	server.registerTool("fail", { description: "Always fails as a tool result." }, async () => ({
		content: [],
		isError: true,
	}));
	server.registerPrompt("greet", { description: "A greeting.", argsSchema: { who: z.string() } }, ({ who }) => ({
		messages: [{ role: "user", content: { type: "text", text: `Hello, ${who}, from ${name}!` } }],
	}));
	server.registerResource(
		"readme",
		`demo://${name}/readme`,
		{ description: "About this server.", mimeType: "text/plain" },
		async (uri) => ({ contents: [{ uri: uri.href, mimeType: "text/plain", text: `This is ${name}.` }] }),
	);
	server.registerResource(
		"note",
		new ResourceTemplate(`demo://${name}/notes/{id}`, { list: undefined }),
		{ description: "A note by id." },
		async (uri, { id }) => ({ contents: [{ uri: uri.href, text: `note ${String(id)}` }] }),
	);
}

/** What a gate has seen; `GET /_gates/<name>` answers with it. */
export interface GateStatus {
	/** Calls waiting at the gate now. */
	waiting: number;
	/** Calls that have arrived in all. */
	arrived: number;
	/** Calls the gate let through. */
	passed: number;
	/** Calls that ended while waiting: cancelled by notifications/cancelled, or their session closed. */
	cancelled: number;
	/** Whether the test has released the gate (later calls pass at once). */
	released: boolean;
}

interface GateState {
	status: GateStatus;
	open: Promise<void>;
	release: () => void;
}

/** Named gates, created on first use; a test uses a name of its own. */
export class Gates {
	private readonly gates = new Map<string, GateState>();

	private gate(name: string): GateState {
		let gate = this.gates.get(name);
		if (!gate) {
			let release = () => {};
			const open = new Promise<void>((resolve) => {
				release = resolve;
			});
			gate = { status: { waiting: 0, arrived: 0, passed: 0, cancelled: 0, released: false }, open, release };
			this.gates.set(name, gate);
		}
		return gate;
	}

	status(name: string): GateStatus {
		return { ...this.gate(name).status };
	}

	release(name: string): GateStatus {
		const gate = this.gate(name);
		gate.status.released = true;
		gate.release();
		return this.status(name);
	}

	/**
	 * Counts the call as waiting, runs `arrived`, then waits until the gate is
	 * released; fails (counted as cancelled) if `signal` aborts first.
	 */
	async pass(name: string, signal: AbortSignal, arrived: () => Promise<void> = async () => {}): Promise<void> {
		const gate = this.gate(name);
		const { status } = gate;
		status.arrived++;
		status.waiting++;
		try {
			await arrived();
			await new Promise<void>((resolve, reject) => {
				const abort = () => reject(signal.reason instanceof Error ? signal.reason : new Error("cancelled at the gate"));
				if (signal.aborted) return abort();
				signal.addEventListener("abort", abort, { once: true });
				void gate.open.then(() => {
					signal.removeEventListener("abort", abort);
					resolve();
				});
			});
			status.passed++;
		} catch (error) {
			status.cancelled++;
			throw error;
		} finally {
			status.waiting--;
		}
	}
}

/**
 * What the gate control API (`GET /_gates/<name>`, `POST /_gates/<name>/release`)
 * answers to `method path`; null when the path is not one of its routes.
 */
export function gateControlAnswer(
	gates: Gates,
	method: string,
	path: string,
): { status: number; body: unknown } | null {
	const route = /^\/_gates\/([^/]+)(\/release)?$/.exec(path);
	if (!route?.[1]) return null;
	const name = decodeURIComponent(route[1]);
	if (route[2] && method === "POST") return { status: 200, body: gates.release(name) };
	if (!route[2] && method === "GET") return { status: 200, body: gates.status(name) };
	return { status: 405, body: { error: `${method} is not a gate operation` } };
}

/** Answers the gate control API on a Node response; false when the path is not one of its routes. */
export function handleGateControl(gates: Gates, req: IncomingMessage, res: ServerResponse, path: string): boolean {
	const answer = gateControlAnswer(gates, req.method ?? "", path);
	if (!answer) return false;
	res.writeHead(answer.status, { "content-type": "application/json" }).end(JSON.stringify(answer.body));
	return true;
}

/**
 * The `gate` tool: answers only once the test releases the gate named in its
 * argument. With a progress token, it first sends one progress notification,
 * so a test can see a reply stream open while the call is still under way.
 */
export function registerGateTool(server: McpServer, gates: Gates): void {
	server.registerTool(
		"gate",
		{
			description:
				"Test fixture: waits until the named gate is released (POST /_gates/<name>/release), then answers. " +
				"Sends one progress notification on arrival when the call carries a progress token.",
			inputSchema: { name: z.string().min(1).max(200) },
		},
		async ({ name }, extra) => {
			const token = extra._meta?.progressToken;
			await gates.pass(name, extra.signal, async () => {
				if (token === undefined) return;
				await extra.sendNotification({
					method: "notifications/progress",
					params: { progressToken: token, progress: 0, message: `waiting at gate ${name}` },
				});
			});
			return { content: [{ type: "text", text: `gate ${name} passed` }] };
		},
	);
}

/**
 * The `close_stream_then_answer` tool (resumable upstreams): closes its own
 * reply stream right after the priming event, as a server that polls its
 * client does (SEP-1699), waits until the test releases the named gate, then
 * answers. The answer is kept in the event store and reaches a client that
 * resumes with GET and Last-Event-ID.
 */
export function registerCloseStreamTool(server: McpServer, gates: Gates): void {
	server.registerTool(
		"close_stream_then_answer",
		{
			description:
				"Test fixture: closes its SSE reply stream, waits until the named gate is released, then answers; " +
				"the answer is delivered to a client that resumes with Last-Event-ID.",
			inputSchema: { name: z.string().min(1).max(200) },
		},
		async ({ name }, extra) => {
			// Without an event store, or for a client older than 2025-11-25, the transport offers no way to close.
			if (!extra.closeSSEStream) throw new Error("this reply cannot be resumed, so its stream is not closed");
			extra.closeSSEStream();
			await gates.pass(name, extra.signal);
			return { content: [{ type: "text", text: `answered after gate ${name}` }] };
		},
	);
}

/**
 * A low-level server whose tool list changes while it is being listed: the
 * first tools/list of a session announces list_changed on its own reply
 * stream, then answers late with the now stale list.
 */
function createShiftingServer(name: string): McpLowLevelServer {
	const server = new McpLowLevelServer({ name, version: "1.0.0" }, { capabilities: { tools: { listChanged: true } } });
	let lists = 0;
	server.setRequestHandler(ListToolsRequestSchema, async (_request, extra) => {
		lists++;
		if (lists === 1) {
			await extra.sendNotification({ method: "notifications/tools/list_changed" });
			await new Promise((resolve) => setTimeout(resolve, 200));
			return { tools: [{ name: "stale_tool", inputSchema: { type: "object" } }] };
		}
		return { tools: [{ name: "fresh_tool", inputSchema: { type: "object" } }] };
	});
	server.setRequestHandler(CallToolRequestSchema, async (request) => ({
		content: [{ type: "text", text: `called ${request.params.name}` }],
	}));
	return server;
}

/** A server that lists its five tools two per page, with cursors. */
function createPagedServer(name: string): McpLowLevelServer {
	const server = new McpLowLevelServer({ name, version: "1.0.0" }, { capabilities: { tools: {} } });
	const tools = ["p1", "p2", "p3", "p4", "p5"].map((tool) => ({
		name: tool,
		inputSchema: { type: "object" as const },
	}));
	server.setRequestHandler(ListToolsRequestSchema, async (request) => {
		const start = Number(request.params?.cursor ?? 0);
		const next = start + 2;
		return { tools: tools.slice(start, next), ...(next < tools.length ? { nextCursor: String(next) } : {}) };
	});
	server.setRequestHandler(CallToolRequestSchema, async (request) => ({
		content: [{ type: "text", text: `called ${request.params.name}` }],
	}));
	return server;
}

/**
 * A server whose tool list changes on request: `grow` adds a tool (and the SDK
 * announces list_changed on the GET stream); `poke` announces list_changed
 * `times` times without changing anything; `say` sends a log message on the
 * GET stream, which tests use as a marker: what the client receives before it
 * was sent before it.
 */
function createMutableServer(name: string): McpServer {
	const server = new McpServer(
		{ name, version: "1.0.0" },
		{ capabilities: { tools: { listChanged: true }, logging: {} } },
	);
	let grown = 0;
	server.registerTool("grow", { description: "Adds a tool." }, async () => {
		grown++;
		server.registerTool(`grown_${grown}`, { description: "A tool added at run time." }, async () => ({
			content: [{ type: "text", text: `grown ${grown}` }],
		}));
		return { content: [{ type: "text", text: `now ${grown} grown` }] };
	});
	server.registerTool(
		"poke",
		{
			description: "Announces list_changed without changing the list.",
			inputSchema: { times: z.number().int().min(1).max(50) },
		},
		async ({ times }) => {
			for (let i = 0; i < times; i++) server.sendToolListChanged();
			return { content: [{ type: "text", text: `poked ${times}` }] };
		},
	);
	server.registerTool(
		"say",
		{
			description: "Sends notifications/message with the text on the session's GET stream.",
			inputSchema: { text: z.string() },
		},
		async ({ text }) => {
			await server.server.notification({ method: "notifications/message", params: { level: "info", data: text } });
			return { content: [{ type: "text", text: `said ${text}` }] };
		},
	);
	return server;
}

/** Starts the upstream; resolves once it listens. */
export async function startUpstream(options: UpstreamOptions): Promise<RunningUpstream> {
	const sessions = new Map<string, StreamableHTTPServerTransport>();
	const log: RecordedRequest[] = [];
	const gates = new Gates();

	const handle = async (req: IncomingMessage, res: ServerResponse) => {
		const path = new URL(req.url ?? "/", "http://localhost").pathname;
		if (path.startsWith("/_gates/")) {
			req.resume();
			if (!handleGateControl(gates, req, res, path)) res.writeHead(404).end();
			return;
		}
		if (path === "/_log") {
			res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(log));
			return;
		}
		if (path === "/_reset") {
			log.length = 0;
			res.writeHead(204).end();
			return;
		}
		const body = req.method === "POST" ? await readJson(req) : undefined;
		const sessionId = header(req, "mcp-session-id");
		log.push({
			method: req.method ?? "",
			authorization: header(req, "authorization"),
			sessionId,
			protocolVersion: header(req, "mcp-protocol-version"),
			lastEventId: header(req, "last-event-id"),
			body,
		});
		if (options.requireToken && header(req, "authorization") !== `Bearer ${options.requireToken}`) {
			res.writeHead(401, { "www-authenticate": 'Bearer realm="upstream"' }).end("unauthorized");
			return;
		}
		let transport = sessionId ? sessions.get(sessionId) : undefined;
		if (!transport) {
			const isInitialize = (body as { method?: unknown } | undefined)?.method === "initialize";
			if (sessionId || !isInitialize) {
				res
					.writeHead(sessionId ? 404 : 400, { "content-type": "application/json" })
					.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32000, message: "No such session" } }));
				return;
			}
			const created = new StreamableHTTPServerTransport({
				sessionIdGenerator: () => randomUUID(),
				enableJsonResponse: options.enableJsonResponse ?? false,
				...(options.resumable ? { eventStore: new MemoryEventStore(), retryInterval: options.resumable.retryMs } : {}),
				onsessioninitialized: (id) => {
					sessions.set(id, created);
				},
			});
			created.onclose = () => {
				if (created.sessionId) sessions.delete(created.sessionId);
			};
			if (options.catalog === "shifting") {
				await createShiftingServer(options.name).connect(created);
			} else if (options.catalog === "paged") {
				await createPagedServer(options.name).connect(created);
			} else if (options.catalog === "mutable") {
				await createMutableServer(options.name).connect(created);
			} else {
				const server = new McpServer(
					{ name: options.name, version: "1.0.0" },
					{ instructions: `Tools of ${options.name}.` },
				);
				registerDemoCatalog(server, options.name);
				if (options.gates) registerGateTool(server, gates);
				if (options.peer) registerClientRequestTools(server, options.name, gates);
				if (options.resumable) registerCloseStreamTool(server, gates);
				if (options.catalog === "long-names") {
					server.registerTool(LONG_TOOL_NAME, { description: "A tool with a long name." }, async () => ({
						content: [{ type: "text", text: "long name reached" }],
					}));
				}
				await server.connect(created);
			}
			transport = created;
		}
		await transport.handleRequest(req, res, body);
	};

	const server: Server = createServer((req, res) => {
		handle(req, res).catch((error: unknown) => {
			console.error(`upstream ${options.name}:`, error);
			if (!res.headersSent) res.writeHead(500).end();
		});
	});
	await new Promise<void>((resolve) => server.listen(options.port ?? 0, "127.0.0.1", resolve));
	const port = (server.address() as AddressInfo).port;
	return {
		port,
		url: `http://127.0.0.1:${port}/mcp`,
		close: () =>
			new Promise<void>((resolve) => {
				for (const transport of sessions.values()) void transport.close();
				server.closeAllConnections();
				server.close(() => resolve());
			}),
	};
}

function header(req: IncomingMessage, name: string): string | null {
	const value = req.headers[name];
	return typeof value === "string" ? value : null;
}

async function readJson(req: IncomingMessage): Promise<unknown> {
	const chunks: Buffer[] = [];
	for await (const chunk of req) chunks.push(chunk as Buffer);
	return loggedBody(Buffer.concat(chunks).toString("utf8"));
}

/** A request body as a fixture's log keeps it: parsed JSON, the text when it is not JSON, undefined when empty. */
export function loggedBody(text: string): unknown {
	try {
		return text ? JSON.parse(text) : undefined;
	} catch (error) {
		if (error instanceof SyntaxError) return text;
		throw error;
	}
}

// Run directly: `node scripts/upstream-server.ts [port] [name]`.
if (import.meta.url === `file://${process.argv[1]}`) {
	const port = Number(process.argv[2] ?? 8788);
	const name = process.argv[3] ?? "demo";
	const upstream = await startUpstream({ name, port });
	console.log(`upstream '${name}' listening at ${upstream.url}`);
}
