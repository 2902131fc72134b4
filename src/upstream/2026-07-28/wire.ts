import { DiscoverResultSchema } from "@modelcontextprotocol/core";
import {
	ImplementationSchema,
	InitializeRequestSchema,
	type InitializeResult,
	isJSONRPCRequest,
	type JSONRPCMessage,
	type JSONRPCRequest,
	LATEST_PROTOCOL_VERSION,
	type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import { SERVER_INFO_META_KEY } from "@modelcontextprotocol/server";
import { type ModernClient, modernHeaders, withEnvelope } from "../../mcp/2026-07-28/modern-outgoing.ts";
import { HEADER_MISMATCH } from "../../mcp/2026-07-28/modern-request.ts";
import { type ParamHeader, paramHeadersOf, paramHeaderValues } from "../../mcp/2026-07-28/param-headers.ts";
import type { InitializeMessage } from "../../mcp/client-message.ts";
import { describeError } from "../../mcp/gateway-error.ts";
import { isNotification, parseJsonRpcMessage } from "../../mcp/jsonrpc.ts";
import {
	LOGGING_SET_LEVEL,
	NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED,
	PING,
	RESOURCES_SUBSCRIBE,
	RESOURCES_UNSUBSCRIBE,
	SERVER_DISCOVER,
	SUBSCRIPTIONS_LISTEN,
	TOOLS_CALL,
} from "../../mcp/methods.ts";
import { FIRST_MODERN_VERSION, isSupportedLegacyVersion, supportedVersionsOf } from "../../mcp/protocol-version.ts";
import { readCapped } from "../../mcp/read-capped.ts";
import { SseMessageReader, sseMessage } from "../../mcp/sse.ts";
import { randomToken } from "../../primitives/crypto.ts";
import type { Deadline } from "../deadline.ts";
import { type FetchLike, fetchUpstream } from "../upstream-fetch.ts";
import { upstreamProtocolError } from "../upstream-status.ts";
import type { UpstreamTarget } from "../upstream-target.ts";

/** What a 2025 session holds of a 2026-07-28 upstream: no session there, only who the client is. */
export interface ModernUpstreamSession {
	era: "modern";
	sessionId: null;
	protocolVersion: string;
	client: ModernClient;
}

/** What the wire needs of its connection. */
export interface ModernWireHost {
	target: UpstreamTarget;
	fetcher: FetchLike;
	/** Counts one request sent (cost reports). */
	counted(): void;
	/** The upstream's tools, every page (for their `x-mcp-header` declarations). */
	listTools(client: ModernClient): Promise<Tool[]>;
	/** A request of the gateway's own, and its result (the connection's `request`). */
	request(session: ModernUpstreamSession, method: string): Promise<Record<string, unknown>>;
}

/**
 * Whether a refused initialize came from a server that speaks only
 * 2026-07-28: a JSON-RPC UnsupportedProtocolVersion error (-32022) whose
 * `supported` versions are all of the modern era.
 */
export async function offersOnlyModern(response: Response, server: string, maxBytes: number): Promise<boolean> {
	if (!response.body) return false;
	const bytes = await readCapped(response.body, maxBytes).catch((error: unknown) => {
		// Unread, the refusal counts as a 2025 server's: the handshake's own failure is reported.
		console.warn(`upstream ${server}: its refusal of initialize could not be read: ${describeError(error)}`);
		return null;
	});
	if (bytes === null) return false;
	const reply = parseJsonRpcMessage(new TextDecoder().decode(bytes));
	const supported = (reply && "error" in reply ? supportedVersionsOf(reply.error) : null) ?? [];
	return supported.includes(FIRST_MODERN_VERSION) && !supported.some(isSupportedLegacyVersion);
}

/**
 * How a 2025 session speaks to a 2026-07-28 upstream, message by message:
 * there is no session on that side, so every request carries the client's
 * envelope and routing headers, and what that era removed is settled here.
 */
export class ModernWire {
	/** The upstream's `x-mcp-header` declarations by tool; null until first needed. */
	private toolHeaders: Map<string, ParamHeader[]> | null = null;

	constructor(private readonly host: ModernWireHost) {}

	/**
	 * A 2025 client's initialize, answered for a 2026-07-28 upstream, which has
	 * no handshake: its `server/discover` gives the capabilities, identity and
	 * instructions, and the client's own version is kept (the gateway speaks
	 * 2025 to the client and 2026-07-28 to the upstream, request by request).
	 */
	async initialize(
		hello: Pick<InitializeMessage, "message" | "params">,
	): Promise<{ reply: JSONRPCMessage; session: ModernUpstreamSession; result: InitializeResult }> {
		const { message: request } = hello;
		// What a 2026-07-28 upstream is told of the client is what the SDK's schema knows of it: the
		// params of a 2026-07-28 client's session are made from its envelope as it sent it.
		const params = InitializeRequestSchema.shape.params.parse(hello.params);
		const session: ModernUpstreamSession = {
			era: "modern",
			sessionId: null,
			protocolVersion: FIRST_MODERN_VERSION,
			client: { info: params.clientInfo, capabilities: params.capabilities },
		};
		const discovered = DiscoverResultSchema.safeParse(await this.host.request(session, SERVER_DISCOVER));
		if (!discovered.success) {
			throw upstreamProtocolError(this.host.target.name, "a server/discover result that is not valid MCP");
		}
		const { capabilities, instructions, _meta } = discovered.data;
		const serverInfo = ImplementationSchema.safeParse(_meta?.[SERVER_INFO_META_KEY]);
		const result: InitializeResult = {
			protocolVersion: isSupportedLegacyVersion(params.protocolVersion)
				? params.protocolVersion
				: LATEST_PROTOCOL_VERSION,
			capabilities,
			serverInfo: serverInfo.success ? serverInfo.data : { name: this.host.target.name, version: "unknown" },
		};
		if (instructions !== undefined) result.instructions = instructions;
		return { reply: { jsonrpc: "2.0", id: request.id, result }, session, result };
	}

	/**
	 * A message of a 2025 session to a 2026-07-28 upstream: a request carries
	 * the client's envelope and the routing headers; what that era does not
	 * have (notifications, responses, the GET stream, DELETE) is settled here
	 * without a request, as the upstream would answer it.
	 */
	send(
		method: "POST" | "GET" | "DELETE",
		client: ModernClient,
		message: JSONRPCMessage | undefined,
		deadline: Deadline,
	): Promise<Response> {
		if (method === "GET") return this.listen(client, deadline);
		if (method === "DELETE" || !message || !isJSONRPCRequest(message)) {
			return Promise.resolve(new Response(null, { status: method === "DELETE" ? 200 : 202 }));
		}
		// Methods 2026-07-28 removed are settled here: ping needs no upstream, and the log
		// level travels with every later request instead of being set once.
		if (message.method === PING) {
			return Promise.resolve(Response.json({ jsonrpc: "2.0", id: message.id, result: {} }));
		}
		if (message.method === LOGGING_SET_LEVEL && typeof message.params?.level === "string") {
			client.logLevel = message.params.level;
			return Promise.resolve(Response.json({ jsonrpc: "2.0", id: message.id, result: {} }));
		}
		// Subscriptions are part of the listen stream's filter in 2026-07-28: kept here, they
		// join it when the session's GET stream next opens (its next listening window).
		const uri = message.params?.uri;
		if (
			(message.method === RESOURCES_SUBSCRIBE || message.method === RESOURCES_UNSUBSCRIBE) &&
			typeof uri === "string"
		) {
			const subscribed = new Set(client.subscriptions ?? []);
			if (message.method === RESOURCES_SUBSCRIBE) subscribed.add(uri);
			else subscribed.delete(uri);
			client.subscriptions = [...subscribed];
			return Promise.resolve(Response.json({ jsonrpc: "2.0", id: message.id, result: {} }));
		}
		const outgoing = withEnvelope(message, client);
		return this.post(client, outgoing, deadline);
	}

	/**
	 * POSTs a 2026-07-28 request. A tools/call mirrors the arguments its tool
	 * marks with `x-mcp-header` into `Mcp-Param-*` headers, from the tool list
	 * (fetched once per connection); a HeaderMismatch refusal means the list
	 * changed, so it is fetched again and the call sent once more, as the spec
	 * asks of clients.
	 */
	private async post(client: ModernClient, outgoing: JSONRPCRequest, deadline: Deadline): Promise<Response> {
		const send = async () => {
			const headers = modernHeaders(this.host.target.headers, outgoing);
			if (outgoing.method === TOOLS_CALL) {
				for (const [name, value] of await this.paramHeaders(client, outgoing.params)) headers.set(name, value);
			}
			this.host.counted();
			return fetchUpstream(
				this.host.target,
				{ method: "POST", headers, body: JSON.stringify(outgoing) },
				deadline,
				this.host.fetcher,
				outgoing.method,
			);
		};
		const response = await send();
		if (outgoing.method !== TOOLS_CALL || response.status !== 400) return response;
		const text = await response.text();
		const refusal = parseJsonRpcMessage(text);
		if (!refusal || !("error" in refusal) || refusal.error.code !== HEADER_MISMATCH) {
			return new Response(text, { status: response.status, headers: response.headers });
		}
		this.toolHeaders = null;
		return send();
	}

	/** The `Mcp-Param-*` headers of a tools/call, from the tools' declarations. */
	private async paramHeaders(client: ModernClient, params: JSONRPCRequest["params"]): Promise<Array<[string, string]>> {
		if (this.toolHeaders === null) {
			try {
				const tools = await this.host.listTools(client);
				this.toolHeaders = new Map(tools.map((tool) => [tool.name, paramHeadersOf(tool.inputSchema)]));
			} catch (error) {
				// The call still goes out (the upstream may take it, or refuse it with -32020); the list
				// is not remembered as empty, so the next call asks for it again.
				console.warn(
					`upstream ${this.host.target.name}: its tool list could not be read (${describeError(error)}), so this tools/call goes out without Mcp-Param-* headers`,
				);
				return [];
			}
		}
		// The call was parsed where it entered; the connection carries any request, so its name is read as it is.
		const name = params?.name;
		const declarations = typeof name === "string" ? this.toolHeaders.get(name) : undefined;
		return declarations ? paramHeaderValues(declarations, params?.arguments) : [];
	}

	/**
	 * A 2025 session's GET stream from a 2026-07-28 upstream: its
	 * `subscriptions/listen`, opted in to every list change, with the
	 * acknowledgement left out (a 2025 client has no use for it).
	 */
	private async listen(client: ModernClient, deadline: Deadline): Promise<Response> {
		const listen = withEnvelope(
			{
				jsonrpc: "2.0",
				id: `gw-listen-${randomToken(8)}`,
				method: SUBSCRIPTIONS_LISTEN,
				params: {
					notifications: {
						toolsListChanged: true,
						promptsListChanged: true,
						resourcesListChanged: true,
						...(client.subscriptions?.length ? { resourceSubscriptions: client.subscriptions } : {}),
					},
				},
			},
			client,
		);
		this.host.counted();
		const response = await fetchUpstream(
			this.host.target,
			{ method: "POST", headers: modernHeaders(this.host.target.headers, listen), body: JSON.stringify(listen) },
			deadline,
			this.host.fetcher,
		);
		if (
			!response.ok ||
			!response.body ||
			!(response.headers.get("content-type") ?? "").startsWith("text/event-stream")
		) {
			await response.body?.cancel();
			return new Response(null, { status: 405 });
		}
		const reader = new SseMessageReader(response.body, this.host.target.maxReplyBytes, parseJsonRpcMessage);
		const body = new ReadableStream<Uint8Array>({
			pull: async (controller) => {
				for (;;) {
					const message = await reader.next();
					if (message === null) {
						controller.close();
						return;
					}
					if (!isNotification(message) || message.method === NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED) continue;
					controller.enqueue(sseMessage(message));
					return;
				}
			},
			cancel: () => reader.cancel(),
		});
		return new Response(body, { headers: { "content-type": "text/event-stream" } });
	}
}
