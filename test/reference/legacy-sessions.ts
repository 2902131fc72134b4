/**
 * 2025-era serving for the conformance reference: one sessionful
 * `WebStandardStreamableHTTPServerTransport` per `initialize`, found again by
 * `Mcp-Session-Id`, with an event store so an SSE reply the server closed can
 * be resumed with `Last-Event-ID` (SEP-1699, server-sse-polling), and DELETE
 * ending the session (server-session-lifecycle). SDK v2's own legacy fallback
 * in `createMcpHandler` is stateless, which has none of these.
 */
import { randomUUID } from "node:crypto";
import {
	isInitializeRequest,
	type McpServer,
	WebStandardStreamableHTTPServerTransport,
} from "@modelcontextprotocol/server";
import { MemoryEventStore } from "../../scripts/memory-event-store.ts";

/** The `retry` a priming event tells clients to wait before they resume; short, to keep runs fast. */
const RETRY_INTERVAL_MS = 1_000;

function jsonRpcError(status: number, code: number, message: string): Response {
	return Response.json({ jsonrpc: "2.0", id: null, error: { code, message } }, { status });
}

/** The body of a POST as JSON, or undefined when it is not JSON (the caller answers that). */
function parseBody(body: string): { ok: true; value: unknown } | { ok: false } {
	try {
		return { ok: true, value: JSON.parse(body) };
	} catch (error) {
		if (error instanceof SyntaxError) return { ok: false };
		throw error;
	}
}

export class LegacySessions {
	private readonly sessions = new Map<string, WebStandardStreamableHTTPServerTransport>();
	private readonly createServer: () => McpServer;

	constructor(createServer: () => McpServer) {
		this.createServer = createServer;
	}

	/** Serves one 2025-era request: within its session, or opening one with `initialize`. */
	async handle(request: Request): Promise<Response> {
		let parsedBody: unknown;
		if (request.method === "POST") {
			const parsed = parseBody(await request.text());
			if (!parsed.ok) return jsonRpcError(400, -32700, "Parse error: the body is not JSON");
			parsedBody = parsed.value;
		}
		const sessionId = request.headers.get("mcp-session-id");
		if (sessionId !== null) {
			const transport = this.sessions.get(sessionId);
			if (!transport) return jsonRpcError(404, -32001, "Session not found");
			return transport.handleRequest(request, { parsedBody });
		}
		if (!isInitializeRequest(parsedBody)) {
			return jsonRpcError(400, -32000, "Bad Request: no session; send initialize first");
		}
		return (await this.open()).handleRequest(request, { parsedBody });
	}

	/** Ends every session (the reference is stopping). */
	async closeAll(): Promise<void> {
		const open = [...this.sessions.values()];
		this.sessions.clear();
		await Promise.all(open.map((transport) => transport.close()));
	}

	private async open(): Promise<WebStandardStreamableHTTPServerTransport> {
		const transport = new WebStandardStreamableHTTPServerTransport({
			sessionIdGenerator: () => randomUUID(),
			eventStore: new MemoryEventStore(),
			retryInterval: RETRY_INTERVAL_MS,
			onsessioninitialized: (id) => {
				this.sessions.set(id, transport);
			},
		});
		transport.onclose = () => {
			if (transport.sessionId) this.sessions.delete(transport.sessionId);
		};
		await this.createServer().connect(transport);
		return transport;
	}
}
