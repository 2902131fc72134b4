import { exports } from "cloudflare:workers";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { type ClientCapabilities, LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import { CfWorkerJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/cfworker";

/** The admin token the test bindings configure (a fixture, not a secret). */
export const TEST_ADMIN_BEARER = "test-admin-token-0123456789abcdefghij";
/** The gateway's host in tests; it is listed in the test Worker's ALLOWED_HOSTS. */
export const BASE = "http://gateway.test";
/** What a browser's navigation sends as Accept: the gateway answers it with a page. */
export const BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

/** A request through the gateway Worker's fetch handler. */
export function gatewayFetch(path: string, init: RequestInit = {}): Promise<Response> {
	return exports.default.fetch(new Request(`${BASE}${path}`, init));
}

export async function admin(method: string, path: string, body?: unknown): Promise<Response> {
	const headers: Record<string, string> = { authorization: `Bearer ${TEST_ADMIN_BEARER}` };
	if (body !== undefined) headers["content-type"] = "application/json";
	return gatewayFetch(`/admin${path}`, {
		method,
		headers,
		body: body === undefined ? undefined : JSON.stringify(body),
	});
}

let counter = 0;
/** A server name no other test uses, since storage is shared across tests of a file. */
export function uniqueName(prefix: string): string {
	counter++;
	return `${prefix}-${counter}-${Math.random().toString(36).slice(2, 7)}`;
}

/**
 * A client address of its own for one test (CF-Connecting-IP), from the
 * benchmarking range: per-address limits then see only that test's requests.
 */
export function testAddress(): string {
	const n = Math.floor(Math.random() * 65_534) + 1;
	return `198.18.${n >> 8}.${n & 255}`;
}

export async function createKey(
	input: {
		servers?: string[];
		userPath?: string;
		name?: string;
		rateClass?: string;
		disclosure?: "full" | "search" | "code";
		alwaysList?: string[];
	} = {},
) {
	const response = await admin("POST", "/keys", input);
	if (response.status !== 201) throw new Error(`key creation failed: ${await response.text()}`);
	return (await response.json()) as { id: string; key: string; userPath: string };
}

export function mcpHeaders(
	key: string,
	sessionId?: string,
	extra: Record<string, string> = {},
): Record<string, string> {
	const headers: Record<string, string> = {
		authorization: `Bearer ${key}`,
		accept: "application/json, text/event-stream",
		"content-type": "application/json",
		...extra,
	};
	if (sessionId) headers["mcp-session-id"] = sessionId;
	return headers;
}

export function initializeBody(id: number | string = 1, capabilities: ClientCapabilities = {}) {
	return {
		jsonrpc: "2.0",
		id,
		method: "initialize",
		params: {
			protocolVersion: LATEST_PROTOCOL_VERSION,
			capabilities,
			clientInfo: { name: "raw-test", version: "1" },
		},
	};
}

/** A raw initialize POST (no session yet), for exact status codes. */
export function postInitialize(
	path: string,
	key: string,
	id: number | string = 1,
	extra: Record<string, string> = {},
	capabilities: ClientCapabilities = {},
): Promise<Response> {
	return gatewayFetch(path, {
		method: "POST",
		headers: mcpHeaders(key, undefined, extra),
		body: JSON.stringify(initializeBody(id, capabilities)),
	});
}

/** Opens a session with raw fetch and returns its ID (`capabilities`: what the client declares). */
export async function openSession(
	path: string,
	key: string,
	extra: Record<string, string> = {},
	capabilities: ClientCapabilities = {},
): Promise<string> {
	const response = await postInitialize(path, key, 1, extra, capabilities);
	const sessionId = response.headers.get("mcp-session-id");
	if (response.status !== 200 || !sessionId) {
		throw new Error(`initialize failed: ${response.status} ${await response.text()}`);
	}
	await response.body?.cancel();
	await rpc(path, key, sessionId, { jsonrpc: "2.0", method: "notifications/initialized" });
	return sessionId;
}

/** Posts one JSON-RPC message in a session. */
export function rpc(
	path: string,
	key: string,
	sessionId: string,
	message: unknown,
	extra: Record<string, string> = {},
) {
	return gatewayFetch(path, {
		method: "POST",
		headers: mcpHeaders(key, sessionId, { "mcp-protocol-version": LATEST_PROTOCOL_VERSION, ...extra }),
		body: JSON.stringify(message),
	});
}

export interface RpcReply {
	id?: unknown;
	result?: Record<string, unknown>;
	error?: { code: number; message: string; data?: { kind?: string; server?: string } };
}

/** Every JSON-RPC message of a JSON or SSE response body, in order. */
export function messagesOf(text: string, contentType: string): Array<Record<string, unknown>> {
	if (!contentType.includes("text/event-stream")) return [JSON.parse(text) as Record<string, unknown>];
	return text
		.split(/\r?\n/)
		.filter((line) => line.startsWith("data:"))
		.map((line) => line.slice(5).trim())
		.filter((line) => line !== "")
		.map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** Reads a JSON-RPC reply from a JSON or SSE response: the last message with an id. */
export async function readReply(response: Response): Promise<RpcReply> {
	const messages = messagesOf(await response.text(), response.headers.get("content-type") ?? "");
	const replies = messages.filter((message) => message.id !== undefined && message.method === undefined);
	return replies[replies.length - 1] as RpcReply;
}

/**
 * The SDK client, connected through the gateway. `capabilities` and `setup`
 * (request handlers for sampling, elicitation, roots) make it a full peer.
 */
export async function connectClient(
	path: string,
	key: string,
	options: { capabilities?: ClientCapabilities; setup?: (client: Client) => void } = {},
): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
	const transport = new StreamableHTTPClientTransport(new URL(`${BASE}${path}`), {
		fetch: (url, init) => exports.default.fetch(new Request(url, init)),
		requestInit: { headers: { authorization: `Bearer ${key}` } },
	});
	const client = new Client(
		{ name: "gateway-test", version: "1.0.0" },
		{ jsonSchemaValidator: new CfWorkerJsonSchemaValidator(), capabilities: options.capabilities ?? {} },
	);
	options.setup?.(client);
	await client.connect(transport);
	return { client, transport };
}

/** Posts a message and reads the whole reply. */
export async function exchange(path: string, key: string, sessionId: string, message: unknown) {
	const response = await rpc(path, key, sessionId, message);
	return { status: response.status, body: await response.text() };
}
