/**
 * One realistic request for the per-stage microbenchmark: what the MCP SDK
 * client sends for `callTool({ name: "echo" })`, the upstream's replies, the
 * credentials minted for it, and the helpers the stages' checks share.
 */

import { createHash } from "node:crypto";
import { createParser } from "eventsource-parser";
import type { Gateway, GatewaySettings, RelayOptions } from "./stages-gateway.ts";

export const encoder = new TextEncoder();
export const secret = (seed: string) => createHash("sha256").update(`bench-stages ${seed}`).digest("base64url");
export const ENV = {
	ADMIN_TOKEN: secret("admin"),
	SESSION_SECRET: secret("session"),
	KEY_SECRET: secret("key"),
	ALLOW_HTTP_UPSTREAMS: "true",
};

export const URL_TEXT = "http://127.0.0.1:8787/mcp/bench";
export const REQUEST_ID = 7;
export const BODY = JSON.stringify({
	method: "tools/call",
	params: { name: "echo", arguments: { text: "bench" } },
	jsonrpc: "2.0",
	id: REQUEST_ID,
});
/** The upstream SDK server's reply to it: one SSE event, as its `writeSSEEvent` frames it. */
export const EVENT_DATA = JSON.stringify({
	result: { content: [{ type: "text", text: "bench" }] },
	jsonrpc: "2.0",
	id: REQUEST_ID,
});
export const SSE_REPLY = encoder.encode(`event: message\ndata: ${EVENT_DATA}\n\n`);
/** The reply to the benchmark's `blob {kib: 64}`, as it may arrive: in chunks of 16 KiB. */
export const BLOB_DATA = JSON.stringify({
	result: { content: [{ type: "text", text: "x".repeat(64 * 1024) }] },
	jsonrpc: "2.0",
	id: REQUEST_ID,
});
export const BLOB_REPLY = encoder.encode(`event: message\ndata: ${BLOB_DATA}\n\n`);
export const BLOB_CHUNKS = Array.from({ length: Math.ceil(BLOB_REPLY.byteLength / 16_384) }, (_, i) =>
	BLOB_REPLY.subarray(i * 16_384, (i + 1) * 16_384),
);

/** A key and a session ID minted under their secrets. */
export interface Credentials {
	keySecret: string;
	sessionSecret: string;
	apiKey: string;
	sessionId: string;
}

export async function credentials(g: Gateway, keySecret: string, sessionSecret: string): Promise<Credentials> {
	return {
		keySecret,
		sessionSecret,
		apiKey: await g.mintApiKey(keySecret, g.newKeyId()),
		sessionId: await g.mintSessionId(sessionSecret),
	};
}

/** The request's headers as the edge sees them under wrangler dev: the SDK client's, undici's, the proxy's. */
export function requestHeaders(c: Credentials): Record<string, string> {
	return {
		host: "127.0.0.1:8787",
		accept: "application/json, text/event-stream",
		"accept-encoding": "br, gzip",
		"accept-language": "*",
		authorization: `Bearer ${c.apiKey}`,
		"cf-connecting-ip": "127.0.0.1",
		connection: "keep-alive",
		"content-length": String(encoder.encode(BODY).byteLength),
		"content-type": "application/json",
		"mcp-protocol-version": "2025-11-25",
		"mcp-session-id": c.sessionId,
		"sec-fetch-mode": "cors",
		"user-agent": "node",
		"x-forwarded-proto": "http",
	};
}

/** A body that delivers these chunks, then ends. */
export function streamOf(...chunks: Uint8Array[]): ReadableStream<Uint8Array> {
	return new ReadableStream<Uint8Array>({
		start(controller) {
			for (const chunk of chunks) controller.enqueue(chunk);
			controller.close();
		},
	});
}

/** Reads a stream to its end; the bytes, joined. */
export async function drain(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
	return new Uint8Array(await new Response(stream).arrayBuffer());
}

export function expect(condition: boolean, what: string): void {
	if (!condition) throw new Error(`bench-stages: ${what}`);
}

export function sameBytes(output: unknown, expected: Uint8Array): boolean {
	return output instanceof Uint8Array && Buffer.from(output).equals(Buffer.from(expected));
}

/** Feeds the chunks to eventsource-parser as relaySse does; the number of events. */
export function sseEvents(chunks: readonly Uint8Array[]): number {
	let events = 0;
	const decoder = new TextDecoder();
	const parser = createParser({
		onEvent: () => {
			events++;
		},
	});
	for (const chunk of chunks) parser.feed(decoder.decode(chunk, { stream: true }));
	return events;
}

/** The transparent relay's options for the echo reply: any ending but the response's is an error here. */
export function relayOptions(settings: GatewaySettings): RelayOptions {
	return {
		requestId: REQUEST_ID,
		maxEventBytes: settings.maxReplyBytes,
		onIncomplete: () => {
			throw new Error("bench-stages: the relay saw no response");
		},
		onOversize: () => {
			throw new Error("bench-stages: the relay found the event over the cap");
		},
		onDone: () => undefined,
	};
}
