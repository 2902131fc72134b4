import {
	type InitializeResult,
	InitializeResultSchema,
	type JSONRPCMessage,
	type JSONRPCNotification,
	PaginatedResultSchema,
	type RequestId,
} from "@modelcontextprotocol/sdk/types.js";
import type { InitializeMessage } from "../mcp/client-message.ts";
import { describeError, GatewayError } from "../mcp/gateway-error.ts";
import { isListItem, LIST_KINDS, type ListItems, type ListKind } from "../mcp/list-kinds.ts";
import { INITIALIZE, NOTIFICATIONS_INITIALIZED } from "../mcp/methods.ts";
import { FIRST_MODERN_VERSION, isSupportedLegacyVersion } from "../mcp/protocol-version.ts";
import { pinnedEra, type UpstreamProtocol } from "../mcp/upstream-protocol.ts";
import { type ModernUpstreamSession, ModernWire, offersOnlyModern } from "./2026-07-28/wire.ts";
import { type Deadline, startDeadline } from "./deadline.ts";
import { upstreamFetch } from "./served-origins.ts";
import { type FetchLike, fetchUpstream, upstreamTimeout } from "./upstream-fetch.ts";
import { type Reply, readUpstreamReply, upstreamTooLarge } from "./upstream-reply.ts";
import { upstreamFailureOf, upstreamProtocolError, upstreamStatusError } from "./upstream-status.ts";
import type { UpstreamTarget } from "./upstream-target.ts";

/**
 * An initialize to send: the request as it goes (a transparent client's as it
 * came), and its params as parsed where it entered (or as the gateway made them).
 */
export type Initialize = Pick<InitializeMessage, "message" | "params">;

export type { FetchLike } from "./upstream-fetch.ts";

/** Which era to speak to an upstream: pinned by the operator, or found out ("auto"). */
export type { UpstreamProtocol };

/**
 * What a 2025 session holds of one upstream, by the era it is spoken to in,
 * decided when it is opened (`initialize`) and trusted from then on: a
 * `legacy` upstream's own session (its id null when the server keeps none),
 * or, for a `modern` upstream, which has no session, who the client is, sent
 * with every request.
 */
export type UpstreamSession =
	| { era: "legacy"; sessionId: string | null; protocolVersion: string }
	| ModernUpstreamSession;

/** Closing an upstream session is best effort and must not hold a client's DELETE for long. */
const CLOSE_TIMEOUT_MS = 5_000;

/** A bound on pagination, so a looping cursor cannot hold a session forever. */
const MAX_LIST_PAGES = 100;

let requestCounter = 0;

/** The JSON-RPC method a message names, if it names one (a request or notification). */
function rpcMethodOf(message: JSONRPCMessage | undefined): string | undefined {
	return message && "method" in message ? message.method : undefined;
}

/**
 * The client side of streamable HTTP towards one upstream server. It knows
 * nothing about gateway clients or principals: it sends messages, and turns
 * transport failures into GatewayErrors that name the server. Every reply is
 * read under the reply cap; redirects are never followed.
 *
 * Client-facing messages name the server and the kind of failure only: its
 * host, path and the raw fetch error go to the operator's log.
 */
export class UpstreamConnection {
	/** Requests sent, for cost reports. */
	requests = 0;
	/** How this connection speaks to a 2026-07-28 upstream for a 2025 session. */
	private readonly modern: ModernWire;

	constructor(
		private readonly target: UpstreamTarget,
		private readonly fetcher: FetchLike = upstreamFetch,
		/**
		 * The era the operator pinned for this upstream. "auto": the handshake is
		 * tried first and a 2026-07-28-only refusal switches to that era, so an
		 * upstream that speaks both is spoken to in the client's own era.
		 */
		private readonly protocol: () => UpstreamProtocol = () => "auto",
	) {
		this.modern = new ModernWire({
			target,
			fetcher,
			counted: () => {
				this.requests++;
			},
			listTools: (client) =>
				this.listAll({ era: "modern", sessionId: null, protocolVersion: FIRST_MODERN_VERSION, client }, "tools"),
			request: (session, method) => this.request(session, method, undefined),
		});
	}

	get serverName(): string {
		return this.target.name;
	}

	/** How long this upstream may take to answer. */
	get timeoutMs(): number {
		return this.target.timeoutMs;
	}

	/** Cap on one reply or SSE event from this upstream. */
	get maxReplyBytes(): number {
		return this.target.maxReplyBytes;
	}

	/**
	 * Runs the initialize handshake: sends the request, reads the response from
	 * JSON or SSE, and on success sends `notifications/initialized` so that the
	 * upstream session is ready before the client's first request. `reply` is
	 * the upstream's message as it came; `result` its result, parsed.
	 */
	async initialize(
		hello: Initialize,
	): Promise<
		| { reply: JSONRPCMessage; session: UpstreamSession; result: InitializeResult }
		| { reply: JSONRPCMessage; session: null }
	> {
		const { message: request, params } = hello;
		const { protocolVersion } = params;
		const pinned = pinnedEra(this.protocol());
		if (pinned === "modern") return this.modern.initialize(hello);
		const deadline = startDeadline(this.target.timeoutMs);
		try {
			const response = await this.send("POST", { era: "legacy", sessionId: null, protocolVersion }, request, deadline);
			if (!response.ok) {
				// A 2026-07-28-only server refuses the handshake with the versions it speaks:
				// the gateway then speaks that era to it (unless the operator pinned 2025).
				if (
					pinned === null &&
					response.status === 400 &&
					(await offersOnlyModern(response, this.target.name, this.target.maxReplyBytes))
				) {
					return this.modern.initialize(hello);
				}
				await response.body?.cancel();
				throw this.statusError(response.status, INITIALIZE);
			}
			const { message: reply } = await this.readReply(response, request.id);
			if (!("result" in reply)) return { reply, session: null };
			const parsed = InitializeResultSchema.safeParse(reply.result);
			if (!parsed.success) throw this.protocolError("an initialize result that is not valid MCP");
			const session: UpstreamSession = {
				era: "legacy",
				sessionId: response.headers.get("mcp-session-id"),
				protocolVersion: parsed.data.protocolVersion,
			};
			if (!isSupportedLegacyVersion(session.protocolVersion)) {
				await this.close(session);
				throw new GatewayError(
					"upstream_error",
					`Upstream server '${this.target.name}' negotiated protocol version ${session.protocolVersion}, which this gateway does not support.`,
					{ server: this.target.name },
				);
			}
			const ack = await this.send("POST", session, { jsonrpc: "2.0", method: NOTIFICATIONS_INITIALIZED }, deadline);
			await ack.body?.cancel();
			if (!ack.ok) throw this.statusError(ack.status, NOTIFICATIONS_INITIALIZED);
			return { reply, session, result: parsed.data };
		} catch (error) {
			throw deadline.signal.aborted ? this.timeoutError(error) : error;
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
		return (await this.exchange(session, method, params, onNotification)).result;
	}

	/**
	 * Follows a list method's pagination to the end and returns every valid
	 * entry, as the upstream wrote it. Entries that are not valid MCP are
	 * dropped with one log line naming the server; all pages together are
	 * capped like one reply, so a long list cannot exhaust the isolate.
	 */
	async listAll<K extends ListKind>(
		session: UpstreamSession,
		kind: K,
		onNotification?: (message: JSONRPCNotification) => void,
	): Promise<Array<ListItems[K]>> {
		const { method, field } = LIST_KINDS[kind];
		const items: Array<ListItems[K]> = [];
		let dropped = 0;
		let total = 0;
		let cursor: string | undefined;
		for (let page = 0; page < MAX_LIST_PAGES; page++) {
			const { result, bytes } = await this.exchange(
				session,
				method,
				cursor === undefined ? undefined : { cursor },
				onNotification,
			);
			total += bytes;
			if (total > this.target.maxReplyBytes) {
				throw this.tooLarge(`its ${method} pages together are larger than ${this.target.maxReplyBytes} bytes`);
			}
			const entries = result[field];
			const paging = PaginatedResultSchema.safeParse(result);
			if (!Array.isArray(entries) || !paging.success) throw this.protocolError(`a ${method} result without '${field}'`);
			for (const entry of entries) {
				if (isListItem(kind, entry)) items.push(entry);
				else dropped++;
			}
			const next = paging.data.nextCursor;
			if (next === undefined || next === "") break;
			cursor = next;
			if (page === MAX_LIST_PAGES - 1) throw this.protocolError(`more than ${MAX_LIST_PAGES} pages for ${method}`);
		}
		if (dropped > 0) {
			console.warn(`upstream ${this.target.name}: dropped ${dropped} invalid ${field} entries of its ${method} reply`);
		}
		return items;
	}

	/** As `listAll`, but a list the upstream does not offer (it answers -32601) is an empty one. */
	async listOffered<K extends ListKind>(
		session: UpstreamSession,
		kind: K,
		onNotification?: (message: JSONRPCNotification) => void,
	): Promise<Array<ListItems[K]>> {
		try {
			return await this.listAll(session, kind, onNotification);
		} catch (error) {
			if (error instanceof GatewayError && error.upstreamCode === -32601) return [];
			throw error;
		}
	}

	/**
	 * Sends one message in the session and returns the upstream's response as
	 * it streams. The caller owns `deadline` and clears it when the response
	 * has been read to the end.
	 */
	post(session: UpstreamSession, message: JSONRPCMessage, deadline: Deadline): Promise<Response> {
		return this.send("POST", session, message, deadline);
	}

	/** Starts the deadline a call to this server runs under (`ms`: a longer one, for a call held as a task). */
	startCallDeadline(parent?: AbortSignal, ms = this.target.timeoutMs): Deadline {
		return startDeadline(ms, parent);
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
			console.warn(`upstream ${this.target.name}: DELETE of its session failed: ${describeError(error)}`);
		} finally {
			deadline.clear();
		}
	}

	/** Reads the JSON-RPC response for `id` from a JSON or SSE body, under this upstream's reply cap. */
	readReply(
		response: Response,
		id: RequestId,
		onNotification?: (message: JSONRPCNotification) => void,
	): Promise<Reply> {
		return readUpstreamReply(response, id, {
			server: this.target.name,
			maxBytes: this.target.maxReplyBytes,
			onNotification,
		});
	}

	/** What to tell the client when a streamed reply broke off. */
	midStreamError(error: unknown, timedOut: boolean): GatewayError {
		if (timedOut) return this.timeoutError(error);
		console.warn(`upstream ${this.target.name}: reply broke off: ${describeError(error)}`);
		return new GatewayError(
			"upstream_unavailable",
			`Upstream server '${this.target.name}' closed the connection before it answered.`,
			{ server: this.target.name, cause: error },
		);
	}

	/** The failure an upstream's HTTP error answer means, its body read when it may say more (see upstreamFailureOf). */
	failureOf(response: Response, what: string): Promise<GatewayError> {
		return upstreamFailureOf(this.target.name, response, what);
	}

	/** The failure an upstream HTTP status means (see upstreamStatusError); `challenge` is its WWW-Authenticate. */
	statusError(status: number, what: string, challenge: string | null = null): GatewayError {
		return upstreamStatusError(this.target.name, status, what, challenge);
	}

	protocolError(what: string): GatewayError {
		return upstreamProtocolError(this.target.name, what);
	}

	private async exchange(
		session: UpstreamSession,
		method: string,
		params: Record<string, unknown> | undefined,
		onNotification?: (message: JSONRPCNotification) => void,
	): Promise<{ result: Record<string, unknown>; bytes: number }> {
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
			const { message: reply, bytes } = await this.readReply(response, id, onNotification);
			if ("error" in reply) {
				throw new GatewayError(
					"upstream_error",
					`Upstream server '${this.target.name}' answered ${method} with an error: ${reply.error.message}.`,
					{ server: this.target.name, upstreamCode: reply.error.code },
				);
			}
			if (!("result" in reply)) throw this.protocolError(`a reply to ${method} without a result`);
			return { result: reply.result, bytes };
		} catch (error) {
			if (deadline.signal.aborted && !(error instanceof GatewayError && error.kind === "upstream_timeout")) {
				throw this.timeoutError(error);
			}
			throw error;
		} finally {
			deadline.clear();
		}
	}

	/** One HTTP request to the upstream with its configured headers and the session's. */
	private send(
		method: "POST" | "GET" | "DELETE",
		session: UpstreamSession,
		message: JSONRPCMessage | undefined,
		deadline: Deadline,
		lastEventId?: string,
	): Promise<Response> {
		if (session.era === "modern") return this.modern.send(method, session.client, message, deadline);
		const headers = new Headers(this.target.headers);
		headers.set("accept", method === "GET" ? "text/event-stream" : "application/json, text/event-stream");
		if (message) headers.set("content-type", "application/json");
		if (session.sessionId !== null) headers.set("mcp-session-id", session.sessionId);
		if (session.protocolVersion) headers.set("mcp-protocol-version", session.protocolVersion);
		if (lastEventId !== undefined) headers.set("last-event-id", lastEventId);
		this.requests++;
		const body = message ? JSON.stringify(message) : undefined;
		return fetchUpstream(this.target, { method, headers, body }, deadline, this.fetcher, rpcMethodOf(message));
	}

	private timeoutError(cause: unknown): GatewayError {
		return upstreamTimeout(this.target, cause);
	}

	private tooLarge(what: string): GatewayError {
		return upstreamTooLarge(this.target.name, what);
	}
}
