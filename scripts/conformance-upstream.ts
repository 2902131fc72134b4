/**
 * The upstream MCP server that `scripts/conformance.ts` puts behind the
 * gateway: it offers exactly what the server scenarios of the MCP conformance
 * suite (`@modelcontextprotocol/conformance`, requirement set 2025-11-25) call,
 * under the names the suite expects (`test_*` tools and prompts, `test://`
 * resources). The suite's own reference server is not published on npm, so
 * this one is written here, from the scenarios' stated requirements, with the
 * SDK's low-level Server over streamable HTTP on loopback.
 *
 * It also does what a well-behaved local server must at the HTTP level, so
 * that a run against it directly passes every scenario and any failure through
 * the gateway is the gateway's: it refuses a non-loopback Host (DNS rebinding),
 * keeps a per-session event store so SSE streams can be resumed with
 * Last-Event-ID (SEP-1699), and ends a session on DELETE.
 *
 *   node scripts/conformance-upstream.ts [port]   run it alone (default: a free port)
 */
import { randomUUID } from "node:crypto";
import { createServer, type Server as HttpServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
	CallToolRequestSchema,
	type CallToolResult,
	CompleteRequestSchema,
	CreateMessageResultSchema,
	ElicitResultSchema,
	ErrorCode,
	GetPromptRequestSchema,
	type GetPromptResult,
	ListPromptsRequestSchema,
	ListResourcesRequestSchema,
	ListResourceTemplatesRequestSchema,
	ListToolsRequestSchema,
	type LoggingLevel,
	McpError,
	ReadResourceRequestSchema,
	type ReadResourceResult,
	SetLevelRequestSchema,
	SubscribeRequestSchema,
	type Tool,
	UnsubscribeRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { MemoryEventStore } from "./memory-event-store.ts";

export interface RunningConformanceUpstream {
	port: number;
	url: string;
	close(): Promise<void>;
}

/** The `retry` an SSE priming event tells clients to wait before reconnecting; short, to keep runs fast. */
const RETRY_INTERVAL_MS = 1_000;
/** Hostnames a local server may be called by; anything else is a DNS rebinding attempt. */
const LOOPBACK_HOSTNAMES = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** A 1x1 red PNG and a minimal WAV: the smallest valid image and audio payloads. */
const PNG_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const WAV_BASE64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

const NO_ARGUMENTS = { type: "object", properties: {} } as const;

/** JSON Schema 2020-12 keywords that must survive tools/list unchanged (SEP-1613, SEP-2106). */
const JSON_SCHEMA_2020_12 = {
	$schema: "https://json-schema.org/draft/2020-12/schema",
	type: "object",
	$defs: {
		address: {
			$anchor: "addressDef",
			type: "object",
			properties: { street: { type: "string" }, city: { type: "string" } },
		},
	},
	properties: {
		name: { type: "string" },
		address: { $ref: "#/$defs/address" },
		contactMethod: { type: "string", enum: ["phone", "email"] },
		phone: { type: "string" },
		email: { type: "string" },
	},
	allOf: [{ anyOf: [{ required: ["phone"] }, { required: ["email"] }] }],
	if: { properties: { contactMethod: { const: "phone" } }, required: ["contactMethod"] },
	// biome-ignore lint/suspicious/noThenProperty: JSON Schema's "then" keyword; this object is never awaited.
	then: { required: ["phone"] },
	else: { required: ["email"] },
	additionalProperties: false,
};

const TOOLS: Tool[] = [
	{ name: "test_simple_text", description: "Returns a simple text.", inputSchema: NO_ARGUMENTS },
	{ name: "test_image_content", description: "Returns an image.", inputSchema: NO_ARGUMENTS },
	{ name: "test_audio_content", description: "Returns audio.", inputSchema: NO_ARGUMENTS },
	{ name: "test_embedded_resource", description: "Returns an embedded resource.", inputSchema: NO_ARGUMENTS },
	{ name: "test_multiple_content_types", description: "Returns text, image and resource.", inputSchema: NO_ARGUMENTS },
	{ name: "test_tool_with_logging", description: "Logs three messages while it runs.", inputSchema: NO_ARGUMENTS },
	{ name: "test_tool_with_progress", description: "Reports progress 0, 50, 100 of 100.", inputSchema: NO_ARGUMENTS },
	{ name: "test_error_handling", description: "Always fails as a tool result.", inputSchema: NO_ARGUMENTS },
	{
		name: "test_sampling",
		description: "Asks the client's LLM (sampling/createMessage).",
		inputSchema: { type: "object", properties: { prompt: { type: "string" } }, required: ["prompt"] },
	},
	{
		name: "test_elicitation",
		description: "Asks the user for input (elicitation/create).",
		inputSchema: { type: "object", properties: { message: { type: "string" } }, required: ["message"] },
	},
	{
		name: "test_elicitation_sep1034_defaults",
		description: "Elicits a form whose fields all have defaults (SEP-1034).",
		inputSchema: NO_ARGUMENTS,
	},
	{
		name: "test_elicitation_sep1330_enums",
		description: "Elicits a form with every kind of enum field (SEP-1330).",
		inputSchema: NO_ARGUMENTS,
	},
	{
		name: "test_reconnection",
		description: "Closes its SSE stream mid-call and answers after the client resumes (SEP-1699).",
		inputSchema: NO_ARGUMENTS,
	},
	{
		name: "json_schema_2020_12_tool",
		description: "Tool with JSON Schema 2020-12 features.",
		inputSchema: JSON_SCHEMA_2020_12 as Tool["inputSchema"],
	},
];

const RESOURCES = [
	{ uri: "test://static-text", name: "static-text", description: "A static text.", mimeType: "text/plain" },
	{ uri: "test://static-binary", name: "static-binary", description: "A static PNG.", mimeType: "image/png" },
	{
		uri: "test://watched-resource",
		name: "watched-resource",
		description: "A resource one may subscribe to.",
		mimeType: "text/plain",
	},
];
const TEMPLATE = /^test:\/\/template\/([^/]+)\/data$/;

const PROMPTS = [
	{ name: "test_simple_prompt", description: "A prompt without arguments." },
	{
		name: "test_prompt_with_arguments",
		description: "A prompt with two arguments.",
		arguments: [
			{ name: "arg1", description: "First argument.", required: true },
			{ name: "arg2", description: "Second argument.", required: true },
		],
	},
	{
		name: "test_prompt_with_embedded_resource",
		description: "A prompt embedding a resource.",
		arguments: [{ name: "resourceUri", description: "URI of the resource to embed.", required: true }],
	},
	{ name: "test_prompt_with_image", description: "A prompt with an image." },
];

/** Log levels from least to most severe: a message below the session's level is not sent. */
const LEVELS: LoggingLevel[] = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

function delay(ms: number): Promise<void> {
	return new Promise((resolve) => setTimeout(resolve, ms));
}

function text(value: string): CallToolResult {
	return { content: [{ type: "text", text: value }] };
}

/** One session's MCP server: the catalog above, with handlers that behave as each scenario requires. */
function createConformanceServer(): Server {
	const server = new Server(
		{ name: "mcp-conformance-upstream", version: "1.0.0" },
		{
			capabilities: {
				tools: {},
				resources: { subscribe: true },
				prompts: {},
				logging: {},
				completions: {},
			},
		},
	);
	let minimumLevel: LoggingLevel = "debug";
	const subscriptions = new Set<string>();

	server.setRequestHandler(SetLevelRequestSchema, async (request) => {
		minimumLevel = request.params.level;
		return {};
	});
	server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS }));
	server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
		const args = request.params.arguments ?? {};
		// Log messages and progress go out on the request's own stream, as they belong to it.
		const log = async (level: LoggingLevel, data: string) => {
			if (LEVELS.indexOf(level) < LEVELS.indexOf(minimumLevel)) return;
			await extra.sendNotification({ method: "notifications/message", params: { level, data } });
		};
		switch (request.params.name) {
			case "test_simple_text":
				return text("This is a simple text response for testing.");
			case "test_image_content":
				return { content: [{ type: "image", data: PNG_BASE64, mimeType: "image/png" }] };
			case "test_audio_content":
				return { content: [{ type: "audio", data: WAV_BASE64, mimeType: "audio/wav" }] };
			case "test_embedded_resource":
				return {
					content: [
						{
							type: "resource",
							resource: {
								uri: "test://embedded-resource",
								mimeType: "text/plain",
								text: "This is an embedded resource content.",
							},
						},
					],
				};
			case "test_multiple_content_types":
				return {
					content: [
						{ type: "text", text: "Multiple content types test:" },
						{ type: "image", data: PNG_BASE64, mimeType: "image/png" },
						{
							type: "resource",
							resource: {
								uri: "test://mixed-content-resource",
								mimeType: "application/json",
								text: JSON.stringify({ test: "data", value: 123 }),
							},
						},
					],
				};
			case "test_tool_with_logging":
				// Spaced out, so a client must keep reading the stream between messages.
				await log("info", "Tool execution started");
				await delay(50);
				await log("info", "Tool processing data");
				await delay(50);
				await log("info", "Tool execution completed");
				return text("Tool with logging executed successfully");
			case "test_tool_with_progress": {
				const token = extra._meta?.progressToken;
				for (const progress of [0, 50, 100]) {
					if (token !== undefined) {
						await extra.sendNotification({
							method: "notifications/progress",
							params: { progressToken: token, progress, total: 100 },
						});
					}
					if (progress < 100) await delay(50);
				}
				return text("Tool with progress executed successfully");
			}
			case "test_error_handling":
				return {
					isError: true,
					content: [{ type: "text", text: "This tool intentionally returns an error for testing" }],
				};
			case "test_sampling": {
				const result = await extra.sendRequest(
					{
						method: "sampling/createMessage",
						params: {
							messages: [{ role: "user", content: { type: "text", text: String(args.prompt ?? "") } }],
							maxTokens: 100,
						},
					},
					CreateMessageResultSchema,
				);
				const content = result.content;
				const answer = !Array.isArray(content) && content.type === "text" ? content.text : JSON.stringify(content);
				return text(`LLM response: ${answer}`);
			}
			case "test_elicitation":
				return elicit(extra, String(args.message ?? ""), {
					type: "object",
					properties: {
						username: { type: "string", description: "User's response" },
						email: { type: "string", description: "User's email address" },
					},
					required: ["username", "email"],
				});
			case "test_elicitation_sep1034_defaults":
				return elicit(extra, "Please review and update the form fields with defaults", {
					type: "object",
					properties: {
						name: { type: "string", description: "User name", default: "John Doe" },
						age: { type: "integer", description: "User age", default: 30 },
						score: { type: "number", description: "User score", default: 95.5 },
						status: {
							type: "string",
							description: "User status",
							enum: ["active", "inactive", "pending"],
							default: "active",
						},
						verified: { type: "boolean", description: "Verification status", default: true },
					},
					required: [],
				});
			case "test_elicitation_sep1330_enums":
				return elicit(extra, "Please select options from the enum fields", {
					type: "object",
					properties: {
						untitledSingle: {
							type: "string",
							description: "Choose an option",
							enum: ["option1", "option2", "option3"],
						},
						titledSingle: {
							type: "string",
							description: "Choose a titled option",
							oneOf: [
								{ const: "value1", title: "First Option" },
								{ const: "value2", title: "Second Option" },
								{ const: "value3", title: "Third Option" },
							],
						},
						legacyEnum: {
							type: "string",
							description: "Choose a legacy option",
							enum: ["opt1", "opt2", "opt3"],
							enumNames: ["Option One", "Option Two", "Option Three"],
						},
						untitledMulti: {
							type: "array",
							description: "Choose multiple options",
							items: { type: "string", enum: ["option1", "option2", "option3"] },
						},
						titledMulti: {
							type: "array",
							description: "Choose multiple titled options",
							items: {
								anyOf: [
									{ const: "value1", title: "First Choice" },
									{ const: "value2", title: "Second Choice" },
									{ const: "value3", title: "Third Choice" },
								],
							},
						},
					},
					required: [],
				});
			case "test_reconnection":
				// The POST stream ends here, after its priming event; the result is kept in the event
				// store and reaches the client only when it resumes with GET and Last-Event-ID.
				extra.closeSSEStream?.();
				await delay(100);
				return text(
					"Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure.",
				);
			case "json_schema_2020_12_tool":
				return text(`Received: ${JSON.stringify(args)}`);
			default:
				throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
		}
	});

	server.setRequestHandler(ListResourcesRequestSchema, async () => ({ resources: RESOURCES }));
	server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
		resourceTemplates: [
			{
				uriTemplate: "test://template/{id}/data",
				name: "template",
				description: "Data for an id.",
				mimeType: "application/json",
			},
		],
	}));
	server.setRequestHandler(ReadResourceRequestSchema, async (request) => readResource(request.params.uri));
	server.setRequestHandler(SubscribeRequestSchema, async (request) => {
		subscriptions.add(request.params.uri);
		return {};
	});
	server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
		subscriptions.delete(request.params.uri);
		return {};
	});

	server.setRequestHandler(ListPromptsRequestSchema, async () => ({ prompts: PROMPTS }));
	server.setRequestHandler(GetPromptRequestSchema, async (request) =>
		getPrompt(request.params.name, request.params.arguments ?? {}),
	);
	server.setRequestHandler(CompleteRequestSchema, async (request) => {
		// Minimal but real: candidates for the prompt's arguments, filtered by what was typed.
		const candidates = ["paris", "park", "party", "test", "testing"];
		const values = candidates.filter((value) => value.startsWith(request.params.argument.value));
		return { completion: { values, total: values.length, hasMore: false } };
	});
	return server;
}

type ToolExtra = Parameters<Parameters<Server["setRequestHandler"]>[1]>[1];

/** Asks the client for input with `requestedSchema` and reports what it answered. */
async function elicit(extra: ToolExtra, message: string, requestedSchema: object): Promise<CallToolResult> {
	const result = await extra.sendRequest(
		{ method: "elicitation/create", params: { message, requestedSchema } } as never,
		ElicitResultSchema,
	);
	return text(`Elicitation completed: action=${result.action}, content=${JSON.stringify(result.content ?? {})}`);
}

function readResource(uri: string): ReadResourceResult {
	switch (uri) {
		case "test://static-text":
			return { contents: [{ uri, mimeType: "text/plain", text: "This is the content of the static text resource." }] };
		case "test://static-binary":
			return { contents: [{ uri, mimeType: "image/png", blob: PNG_BASE64 }] };
		case "test://watched-resource":
			return { contents: [{ uri, mimeType: "text/plain", text: "Watched resource content" }] };
	}
	const id = TEMPLATE.exec(uri)?.[1];
	if (id !== undefined) {
		const data = { id, templateTest: true, data: `Data for ID: ${id}` };
		return { contents: [{ uri, mimeType: "application/json", text: JSON.stringify(data) }] };
	}
	// SEP-2164: an unknown resource is an error naming it, never an empty result.
	throw new McpError(ErrorCode.InvalidParams, "Resource not found", { uri });
}

function getPrompt(name: string, args: Record<string, string>): GetPromptResult {
	switch (name) {
		case "test_simple_prompt":
			return {
				messages: [{ role: "user", content: { type: "text", text: "This is a simple prompt for testing." } }],
			};
		case "test_prompt_with_arguments":
			return {
				messages: [
					{
						role: "user",
						content: { type: "text", text: `Prompt with arguments: arg1='${args.arg1}', arg2='${args.arg2}'` },
					},
				],
			};
		case "test_prompt_with_embedded_resource":
			return {
				messages: [
					{
						role: "user",
						content: {
							type: "resource",
							resource: {
								uri: args.resourceUri ?? "test://example-resource",
								mimeType: "text/plain",
								text: "Embedded resource content for testing.",
							},
						},
					},
					{ role: "user", content: { type: "text", text: "Please process the embedded resource above." } },
				],
			};
		case "test_prompt_with_image":
			return {
				messages: [
					{ role: "user", content: { type: "image", data: PNG_BASE64, mimeType: "image/png" } },
					{ role: "user", content: { type: "text", text: "Please analyze the image above." } },
				],
			};
		default:
			throw new McpError(ErrorCode.InvalidParams, `Unknown prompt: ${name}`);
	}
}

/** True when the Host header names this machine (any port), as a local server must require. */
function isLoopbackHost(host: string | undefined): boolean {
	if (!host) return false;
	try {
		return LOOPBACK_HOSTNAMES.has(new URL(`http://${host}`).hostname);
	} catch {
		return false;
	}
}

function jsonRpcError(res: ServerResponse, status: number, message: string): void {
	res
		.writeHead(status, { "content-type": "application/json" })
		.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32000, message } }));
}

/** Starts the upstream on loopback; resolves once it listens. */
export async function startConformanceUpstream(port = 0): Promise<RunningConformanceUpstream> {
	const sessions = new Map<string, StreamableHTTPServerTransport>();

	const handle = async (req: IncomingMessage, res: ServerResponse) => {
		if (new URL(req.url ?? "/", "http://localhost").pathname !== "/mcp") return jsonRpcError(res, 404, "Not found");
		if (!isLoopbackHost(req.headers.host)) return jsonRpcError(res, 403, `Invalid Host: ${req.headers.host}`);
		const body = req.method === "POST" ? await readJson(req) : undefined;
		const sessionId = req.headers["mcp-session-id"];
		let transport = typeof sessionId === "string" ? sessions.get(sessionId) : undefined;
		if (!transport) {
			const isInitialize = (body as { method?: unknown } | undefined)?.method === "initialize";
			if (sessionId !== undefined) return jsonRpcError(res, 404, "Session not found");
			if (!isInitialize) return jsonRpcError(res, 400, "Bad Request: no session; send initialize first");
			const created = new StreamableHTTPServerTransport({
				sessionIdGenerator: () => randomUUID(),
				eventStore: new MemoryEventStore(),
				retryInterval: RETRY_INTERVAL_MS,
				onsessioninitialized: (id) => {
					sessions.set(id, created);
				},
			});
			created.onclose = () => {
				if (created.sessionId) sessions.delete(created.sessionId);
			};
			await createConformanceServer().connect(created);
			transport = created;
		}
		await transport.handleRequest(req, res, body);
	};

	const server: HttpServer = createServer((req, res) => {
		handle(req, res).catch((error: unknown) => {
			console.error("conformance upstream:", error);
			if (!res.headersSent) res.writeHead(500).end();
		});
	});
	await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
	const actualPort = (server.address() as AddressInfo).port;
	return {
		port: actualPort,
		url: `http://127.0.0.1:${actualPort}/mcp`,
		close: () =>
			new Promise<void>((resolve) => {
				for (const transport of sessions.values()) void transport.close();
				server.closeAllConnections();
				server.close(() => resolve());
			}),
	};
}

async function readJson(req: IncomingMessage): Promise<unknown> {
	const chunks: Buffer[] = [];
	for await (const chunk of req) chunks.push(chunk as Buffer);
	const body = Buffer.concat(chunks).toString("utf8");
	try {
		return body ? JSON.parse(body) : undefined;
	} catch (error) {
		// Let the transport answer a malformed body with its own parse error.
		if (error instanceof SyntaxError) return body;
		throw error;
	}
}

// Run directly: `node scripts/conformance-upstream.ts [port]`.
if (import.meta.url === `file://${process.argv[1]}`) {
	const upstream = await startConformanceUpstream(Number(process.argv[2] ?? 0));
	console.log(`conformance upstream listening at ${upstream.url}`);
}
