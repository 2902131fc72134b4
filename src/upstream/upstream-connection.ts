import {
	type JSONRPCMessage,
	JSONRPCMessageSchema,
	type JSONRPCNotification,
	type JSONRPCRequest,
	type RequestId,
} from "@modelcontextprotocol/sdk/types.js";
import { GatewayError } from "../mcp/gateway-error.ts";
import { isSupportedSessionVersion } from "../mcp/protocol-version.ts";
import { readSseEvents } from "../mcp/sse.ts";
import { type Deadline, startDeadline } from "./deadline.ts";
import { displayUrl, type UpstreamTarget } from "./upstream-target.ts";

/** What the gateway holds of one upstream session. */
export interface UpstreamSession {
	sessionId: string | null;
	protocolVersion: string;
}

/** Replies above this size fail the call instead of the isolate. */
const MAX_REPLY_BYTES = 10 * 1024 * 1024;
/** Closing an upstream session is best effort and must not hold a client's DELETE for long. */
const CLOSE_TIMEOUT_MS = 5_000;

/** A bound on pagination, so a looping cursor cannot hold a session forever. */
const MAX_LIST_PAGES = 100;

let requestCounter = 0;

export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

/**
 * The client side of streamable HTTP towards one upstream server. It knows
 * nothing about gateway clients or principals: it sends messages, and turns
 * transport failures into GatewayErrors that name the server.
 */
export class UpstreamConnection {
	/** Requests sent, for cost reports. */
	requests = 0;

	constructor(
		private readonly target: UpstreamTarget,
		private readonly fetcher: FetchLike = (input, init) => fetch(input, init),
	) {}

	get serverName(): string {
		return this.target.name;
	}

	/**
	 * Runs the initialize handshake: sends the request, reads the response from
	 * JSON or SSE, and on success sends `notifications/initialized` so that the
	 * upstream session is ready before the client's first request.
	 */
	async initialize(request: JSONRPCRequest): Promise<{ reply: JSONRPCMessage; session: UpstreamSession | null }> {
		const protocolVersion = String(request.params?.protocolVersion ?? "");
		const deadline = startDeadline(this.target.timeoutMs);
		try {
			const response = await this.send("POST", { sessionId: null, protocolVersion }, request, deadline);
			if (!response.ok) {
				await response.body?.cancel();
				throw this.statusError(response.status, "initialize");
			}
			const reply = await this.readReply(response, request.id);
			if (!("result" in reply)) return { reply, session: null };
			const negotiated = (reply.result as { protocolVersion?: unknown }).protocolVersion;
			const session: UpstreamSession = {
				sessionId: response.headers.get("mcp-session-id"),
				protocolVersion: typeof negotiated === "string" ? negotiated : protocolVersion,
			};
			if (!isSupportedSessionVersion(session.protocolVersion)) {
				await this.close(session);
				throw new GatewayError(
					"upstream_error",
					`Upstream server '${this.target.name}' negotiated protocol version ${session.protocolVersion}, which this gateway does not support.`,
					{ server: this.target.name },
				);
			}
			const ack = await this.send("POST", session, { jsonrpc: "2.0", method: "notifications/initialized" }, deadline);
			await ack.body?.cancel();
			if (!ack.ok) throw this.statusError(ack.status, "notifications/initialized");
			return { reply, session };
		} finally {
			deadline.clear();
		}
	}

	/**
	 * Sends a request of the gateway's own (a list, a ping) and returns its
	 * result. Notifications that arrive on the reply's stream are handed to
	 * `onNotification` (e.g. `list_changed` during a list). An upstream
	 * JSON-RPC error becomes an `upstream_error` naming the server.
	 */
	async request(
		session: UpstreamSession,
		method: string,
		params: Record<string, unknown> | undefined,
		onNotification?: (message: JSONRPCNotification) => void,
	): Promise<Record<string, unknown>> {
		const id = `gw-${++requestCounter}`;
		const deadline = startDeadline(this.target.timeoutMs);
		try {
			const message: JSONRPCMessage =
				params === undefined ? { jsonrpc: "2.0", id, method } : { jsonrpc: "2.0", id, method, params };
			const response = await this.send("POST", session, message, deadline);
			if (!response.ok) {
				await response.body?.cancel();
				throw this.statusError(response.status, method);
			}
			const reply = await this.readReply(response, id, onNotification);
			if ("error" in reply) {
				const error = reply.error as { message?: unknown; code?: unknown };
				throw new GatewayError(
					"upstream_error",
					`Upstream server '${this.target.name}' answered ${method} with an error: ${String(error.message ?? "unknown")}.`,
					{ server: this.target.name, upstreamCode: typeof error.code === "number" ? error.code : undefined },
				);
			}
			if (!("result" in reply)) throw this.protocolError(`a reply to ${method} without a result`);
			return reply.result as Record<string, unknown>;
		} catch (error) {
			if (deadline.signal.aborted && !(error instanceof GatewayError && error.kind === "upstream_timeout")) {
				throw this.timeoutError(error);
			}
			throw error;
		} finally {
			deadline.clear();
		}
	}

	/** Follows a list method's pagination to the end and returns every item. */
	async listAll(
		session: UpstreamSession,
		method: string,
		field: string,
		onNotification?: (message: JSONRPCNotification) => void,
	): Promise<unknown[]> {
		const items: unknown[] = [];
		let cursor: string | undefined;
		for (let page = 0; page < MAX_LIST_PAGES; page++) {
			const result = await this.request(session, method, cursor === undefined ? undefined : { cursor }, onNotification);
			const list = result[field];
			if (!Array.isArray(list)) throw this.protocolError(`a ${method} result without '${field}'`);
			items.push(...list);
			const next = result.nextCursor;
			if (typeof next !== "string" || next === "") return items;
			cursor = next;
		}
		throw this.protocolError(`more than ${MAX_LIST_PAGES} pages for ${method}`);
	}

	/**
	 * Sends one message in the session and returns the upstream's response as
	 * it streams. The caller owns `deadline` and clears it when the response
	 * has been read to the end.
	 */
	post(session: UpstreamSession, message: JSONRPCMessage, deadline: Deadline): Promise<Response> {
		return this.send("POST", session, message, deadline);
	}

	/** Starts the deadline a call to this server runs under. */
	startCallDeadline(parent?: AbortSignal): Deadline {
		return startDeadline(this.target.timeoutMs, parent);
	}

	/**
	 * Opens the upstream's GET stream for server-initiated messages. The
	 * timeout covers only the wait for the response headers: the stream itself
	 * may stay open as long as both sides want.
	 */
	async openStream(session: UpstreamSession, lastEventId: string | null, signal?: AbortSignal): Promise<Response> {
		const deadline = startDeadline(this.target.timeoutMs, signal);
		try {
			return await this.send("GET", session, undefined, deadline, lastEventId ?? undefined);
		} finally {
			deadline.clear();
		}
	}

	/** Ends the upstream session with DELETE; 404 and 405 count as done. Never throws. */
	async close(session: UpstreamSession): Promise<void> {
		if (session.sessionId === null) return;
		const deadline = startDeadline(CLOSE_TIMEOUT_MS);
		try {
			const response = await this.send("DELETE", session, undefined, deadline);
			await response.body?.cancel();
			if (!response.ok && response.status !== 404 && response.status !== 405) {
				console.warn(`upstream ${this.target.name}: DELETE of its session answered HTTP ${response.status}`);
			}
		} catch (error) {
			console.warn(`upstream ${this.target.name}: DELETE of its session failed: ${describe(error)}`);
		} finally {
			deadline.clear();
		}
	}

	/** Reads the JSON-RPC response for `id` from a JSON or SSE body. */
	async readReply(
		response: Response,
		id: RequestId,
		onNotification?: (message: JSONRPCNotification) => void,
	): Promise<JSONRPCMessage> {
		const type = response.headers.get("content-type") ?? "";
		if (!response.body) throw this.protocolError("an empty body");
		if (type.includes("text/event-stream")) {
			let reply: JSONRPCMessage | undefined;
			await readSseEvents(
				response.body,
				(event) => {
					const message = parseMessage(event.data);
					if (!message) return false;
					if ("method" in message && !("id" in message)) onNotification?.(message as JSONRPCNotification);
					else if ("id" in message && message.id === id && !("method" in message)) reply = message;
					return reply !== undefined;
				},
				MAX_REPLY_BYTES,
			);
			if (!reply) throw this.protocolError("an event stream that ended before the response");
			return reply;
		}
		if (type.includes("application/json")) {
			const text = await response.text();
			if (text.length > MAX_REPLY_BYTES) throw this.protocolError(`a reply over ${MAX_REPLY_BYTES} bytes`);
			const message = parseMessage(text);
			if (!message) throw this.protocolError("a body that is not a JSON-RPC message");
			return message;
		}
		await response.body.cancel();
		throw this.protocolError(`an unexpected content type (${type || "none"})`);
	}

	private async send(
		method: "POST" | "GET" | "DELETE",
		session: UpstreamSession,
		message: JSONRPCMessage | undefined,
		deadline: Deadline,
		lastEventId?: string,
	): Promise<Response> {
		const headers = new Headers(this.target.headers);
		headers.set("accept", method === "GET" ? "text/event-stream" : "application/json, text/event-stream");
		if (message) headers.set("content-type", "application/json");
		if (session.sessionId !== null) headers.set("mcp-session-id", session.sessionId);
		if (session.protocolVersion) headers.set("mcp-protocol-version", session.protocolVersion);
		if (lastEventId !== undefined) headers.set("last-event-id", lastEventId);
		this.requests++;
		try {
			return await this.fetcher(this.target.url, {
				method,
				headers,
				body: message ? JSON.stringify(message) : undefined,
				signal: deadline.signal,
			});
		} catch (error) {
			if (deadline.signal.aborted) throw this.timeoutError(error);
			throw new GatewayError(
				"upstream_unavailable",
				`Upstream server '${this.target.name}' is unreachable at ${displayUrl(this.target.url)}: ${describe(error)}.`,
				{ server: this.target.name, cause: error },
			);
		}
	}

	/** What to tell the client when a streamed reply broke off. */
	midStreamError(error: unknown, timedOut: boolean): GatewayError {
		if (timedOut) return this.timeoutError(error);
		return new GatewayError(
			"upstream_unavailable",
			`Upstream server '${this.target.name}' closed the connection before it answered: ${describe(error)}.`,
			{ server: this.target.name, cause: error },
		);
	}

	private timeoutError(cause: unknown): GatewayError {
		return new GatewayError(
			"upstream_timeout",
			`Upstream server '${this.target.name}' did not answer within ${this.target.timeoutMs / 1000} s.`,
			{ server: this.target.name, cause },
		);
	}

	/** An error for an upstream HTTP status outside a JSON-RPC exchange. */
	statusError(status: number, what: string): GatewayError {
		const detail =
			status === 401 || status === 403
				? "its credentials were rejected; check the headers configured for it"
				: `it answered HTTP ${status}`;
		return new GatewayError("upstream_error", `Upstream server '${this.target.name}' failed ${what}: ${detail}.`, {
			server: this.target.name,
		});
	}

	protocolError(what: string): GatewayError {
		return new GatewayError("upstream_error", `Upstream server '${this.target.name}' sent ${what}.`, {
			server: this.target.name,
		});
	}
}

function parseMessage(text: string): JSONRPCMessage | null {
	try {
		const parsed = JSONRPCMessageSchema.safeParse(JSON.parse(text));
		return parsed.success ? parsed.data : null;
	} catch (error) {
		if (error instanceof SyntaxError) return null;
		throw error;
	}
}

/** An error's message as a clause: no trailing period, so it can sit inside a sentence. */
function describe(error: unknown): string {
	return (error instanceof Error ? error.message : String(error)).replace(/\.+$/, "");
}
