/**
 * A model's session with an aggregate endpoint, spoken in raw JSON-RPC (the SDK's latest 2025 era, one session) so
 * that every byte is counted as it crosses: what the model reads (each reply it sees, as the message
 * the gateway sent less the result's `_meta`) and writes (each request it produces: a tool's name and arguments, a program),
 * and each request to the gateway a round trip. `initialize` is the client's, not the model's, and
 * is not counted.
 */

import { type CallToolResult, CallToolResultSchema, LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

const REQUEST_TIMEOUT_MS = 60_000;

/** What one scripted task cost the model. */
export interface Tally {
	read: number;
	written: number;
	roundTrips: number;
}

const ReplySchema = z.object({
	jsonrpc: z.literal("2.0"),
	id: z.union([z.string(), z.number()]).optional(),
	result: z.unknown().optional(),
	error: z.object({ code: z.number(), message: z.string() }).optional(),
});

const utf8 = (text: string) => new TextEncoder().encode(text).byteLength;

/** The reply to request `id` in a JSON body or an SSE stream, as the text of the message sent. */
function replyText(body: string, contentType: string, id: number): string {
	if (!contentType.includes("text/event-stream")) return body;
	for (const event of body.split(/\r?\n\r?\n/)) {
		const data = event
			.split(/\r?\n/)
			.filter((line) => line.startsWith("data:"))
			.map((line) => line.slice(5).trimStart())
			.join("\n");
		if (data === "") continue;
		const message = ReplySchema.safeParse(JSON.parse(data));
		if (message.success && message.data.id === id) return data;
	}
	throw new Error(`the stream ended without the reply to request ${id}: ${body.slice(0, 300)}`);
}

/**
 * The reply as a model reads it: the message without its result's `_meta`, which is for the client
 * (for `execute_code`, the inner calls' notes), not passed to a model. The gateway sends compact
 * JSON, so the rest is byte for byte what it sent.
 */
function forTheModel(reply: z.infer<typeof ReplySchema>): unknown {
	const result = z.record(z.string(), z.unknown()).safeParse(reply.result);
	if (!result.success || !("_meta" in result.data)) return reply;
	const { _meta: _forTheClient, ...rest } = result.data;
	return { ...reply, result: rest };
}

export class ModelSession {
	readonly tally: Tally = { read: 0, written: 0, roundTrips: 0 };
	private nextId = 1;
	private sessionId: string | undefined;
	private readonly url: string;
	private readonly key: string;

	private constructor(url: string, key: string) {
		this.url = url;
		this.key = key;
	}

	/** A session of the key's `/mcp`, initialized; its tally starts at zero. */
	static async open(gatewayUrl: string, key: string): Promise<ModelSession> {
		const session = new ModelSession(`${gatewayUrl}/mcp`, key);
		await session.send("initialize", {
			protocolVersion: LATEST_PROTOCOL_VERSION,
			capabilities: {},
			clientInfo: { name: "code-mode-bench", version: "1.0.0" },
		});
		await session.post({ jsonrpc: "2.0", method: "notifications/initialized" });
		session.tally.read = 0;
		session.tally.roundTrips = 0;
		return session;
	}

	/** Starts a new tally (the session stays): the figures of the next task alone. */
	resetTally(): void {
		Object.assign(this.tally, { read: 0, written: 0, roundTrips: 0 });
	}

	/** tools/list: a round trip and a reply the model reads; the model writes nothing for it. */
	async listTools(): Promise<unknown> {
		return this.send("tools/list", {});
	}

	/** tools/call of `name`: the model writes the name and arguments, and reads the reply. */
	async callTool(name: string, args: Record<string, unknown>): Promise<CallToolResult> {
		const params = { name, arguments: args };
		this.tally.written += utf8(JSON.stringify(params));
		const result = CallToolResultSchema.parse(await this.send("tools/call", params));
		if (result.isError === true) throw new Error(`${name} answered an error: ${JSON.stringify(result.content)}`);
		return result;
	}

	private async send(method: string, params: unknown): Promise<unknown> {
		const id = this.nextId++;
		const response = await this.post({ jsonrpc: "2.0", id, method, params });
		const text = replyText(await response.text(), response.headers.get("content-type") ?? "", id);
		const reply = ReplySchema.parse(JSON.parse(text));
		this.tally.read += utf8(JSON.stringify(forTheModel(reply)));
		this.tally.roundTrips += 1;
		if (reply.error !== undefined) throw new Error(`${method} answered ${reply.error.code}: ${reply.error.message}`);
		return reply.result;
	}

	private async post(message: unknown): Promise<Response> {
		const response = await fetch(this.url, {
			method: "POST",
			headers: {
				authorization: `Bearer ${this.key}`,
				"content-type": "application/json",
				accept: "application/json, text/event-stream",
				"mcp-protocol-version": LATEST_PROTOCOL_VERSION,
				...(this.sessionId === undefined ? {} : { "mcp-session-id": this.sessionId }),
			},
			body: JSON.stringify(message),
			signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
		});
		if (!response.ok) throw new Error(`POST ${this.url} answered ${response.status}: ${await response.text()}`);
		this.sessionId ??= response.headers.get("mcp-session-id") ?? undefined;
		return response;
	}
}
