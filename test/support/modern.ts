import { exports } from "cloudflare:workers";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { BASE } from "./gateway.ts";

/** The protocol revision without sessions. */
export const MODERN = "2026-07-28";

/** A 2026-07-28 request envelope: what every request says of its client. */
export const ENVELOPE = {
	"io.modelcontextprotocol/protocolVersion": MODERN,
	"io.modelcontextprotocol/clientInfo": { name: "raw-modern", version: "1.0.0" },
	"io.modelcontextprotocol/clientCapabilities": {},
};

/** A raw 2026-07-28 POST request: routing headers derived from the body unless overridden. */
export function modernRequest(
	path: string,
	key: string,
	body: Record<string, unknown>,
	headers: Record<string, string> = {},
): Request {
	const params = (body.params ?? {}) as Record<string, unknown>;
	const name = params.name ?? params.uri;
	return new Request(`${BASE}${path}`, {
		method: "POST",
		headers: {
			authorization: `Bearer ${key}`,
			accept: "application/json, text/event-stream",
			"content-type": "application/json",
			"mcp-protocol-version": MODERN,
			"mcp-method": String(body.method),
			...(typeof name === "string" ? { "mcp-name": name } : {}),
			...headers,
		},
		body: JSON.stringify({ jsonrpc: "2.0", ...body }),
	});
}

/** Sends `modernRequest` through the gateway Worker. */
export function modernPost(
	path: string,
	key: string,
	body: Record<string, unknown>,
	headers: Record<string, string> = {},
): Promise<Response> {
	return exports.default.fetch(modernRequest(path, key, body, headers));
}

/** The text of a tool result's first content block. */
export function textOf(result: object): string | undefined {
	return ("content" in result ? (result.content as Array<{ text?: string }> | undefined) : undefined)?.[0]?.text;
}

/** An SDK v2 client pinned to 2026-07-28 (no fallback to 2025: it fails if not offered), connected through the gateway Worker. */
export async function connectModernClient(
	path: string,
	key: string,
	capabilities: Record<string, unknown> = {},
): Promise<Client> {
	const client = new Client(
		{ name: "modern-test", version: "1.0.0" },
		{ capabilities, versionNegotiation: { mode: { pin: MODERN } } },
	);
	await client.connect(
		new StreamableHTTPClientTransport(new URL(`${BASE}${path}`), {
			fetch: (url, init) => exports.default.fetch(new Request(url, init)),
			requestInit: { headers: { authorization: `Bearer ${key}` } },
		}),
	);
	return client;
}
