/**
 * The clients of the benchmark's 2026-07-28 measurements: one `tools/call
 * echo` at a time, sent with `fetch` exactly as the era defines it (no
 * initialize, no session id; the envelope in `params._meta`, the
 * `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers), and, for the
 * comparison, the same call over a 2025-11-25 session (initialize, then
 * `Mcp-Session-Id`). Every target gets the same client code, so the figures
 * differ only by what lies between the client and the upstream.
 *
 * Also the two counters read around each target's window: the gateway's
 * Durable Object requests (scripts/bench/durable-object-counter.ts) and what
 * the upstream received (scripts/bench/modern-upstream.ts).
 */
import { performance } from "node:perf_hooks";
import { COUNTS_PATH, type DurableObjectRequestCounts } from "./durable-object-counter.ts";
import type {
	ConnectorTargetId,
	ModernTargetId,
	PersonTargetId,
	PolicyTargetId,
	StdioTargetId,
	TelemetryTargetId,
} from "./results.ts";
import { rotated } from "./sessions.ts";

export const MODERN_VERSION = "2026-07-28";
export const LEGACY_VERSION = "2025-11-25";

const CLIENT_INFO = { name: "mcp-edge-bench", version: "1.0.0" };
const ECHO_TEXT = "bench";

export interface RawTarget {
	id: ModernTargetId | PersonTargetId | PolicyTargetId | TelemetryTargetId | ConnectorTargetId | StdioTargetId;
	/** The MCP endpoint. */
	url: string;
	/** The protocol revision the client speaks to it. */
	era: typeof MODERN_VERSION | typeof LEGACY_VERSION;
	/** Extra request headers (the gateway's API key). */
	headers?: Record<string, string>;
}

interface JsonRpcReply {
	id?: unknown;
	result?: { content?: Array<{ type?: string; text?: string }>; isError?: boolean; tools?: Array<{ name?: string }> };
	error?: { code?: number; message?: string };
}

/** The JSON-RPC response with `id` in a JSON body or an SSE stream. */
async function replyTo(response: Response, id: number, what: string): Promise<JsonRpcReply> {
	const text = await response.text();
	if (!response.ok) throw new Error(`${what} answered ${response.status}: ${text.slice(0, 300)}`);
	const type = response.headers.get("content-type") ?? "";
	const candidates = type.includes("text/event-stream")
		? [...text.matchAll(/^data: ?(.*)$/gm)].map((match) => match[1] ?? "")
		: [text];
	for (const candidate of candidates) {
		const message = JSON.parse(candidate) as JsonRpcReply;
		if (message.id === id && (message.result !== undefined || message.error !== undefined)) return message;
	}
	throw new Error(`${what}: no response with id ${id} in: ${text.slice(0, 300)}`);
}

/** A client of one target: a 2026-07-28 client sends every call on its own; a 2025 one holds a session. */
export class RawClient {
	readonly target: RawTarget;
	private sessionId: string | null = null;
	private nextId = 1;
	private readonly timeoutMs: number;

	private constructor(target: RawTarget, timeoutMs: number) {
		this.target = target;
		this.timeoutMs = timeoutMs;
	}

	/** A 2026-07-28 client as is; a 2025 client after initialize and notifications/initialized. */
	static async open(target: RawTarget, timeoutMs: number): Promise<RawClient> {
		const client = new RawClient(target, timeoutMs);
		if (target.era === LEGACY_VERSION) await client.initialize();
		return client;
	}

	/** One `tools/call echo`; throws unless the result is the echoed text. */
	async echo(): Promise<void> {
		const text = await this.callText("echo", { text: ECHO_TEXT });
		if (text !== ECHO_TEXT) throw new Error(`${this.target.id}: echo answered ${JSON.stringify(text).slice(0, 300)}`);
	}

	/** One `tools/call`; the result's first text, or an error when the result is an error or has no text. */
	async callText(name: string, args: Record<string, unknown>): Promise<string> {
		const id = this.nextId++;
		const params = { name, arguments: args };
		const reply = await this.post(
			this.target.era === MODERN_VERSION
				? {
						jsonrpc: "2.0",
						id,
						method: "tools/call",
						params: {
							...params,
							_meta: {
								"io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
								"io.modelcontextprotocol/clientInfo": CLIENT_INFO,
								"io.modelcontextprotocol/clientCapabilities": {},
							},
						},
					}
				: { jsonrpc: "2.0", id, method: "tools/call", params },
			{ "mcp-method": "tools/call", "mcp-name": name },
		);
		const { result, error } = await replyTo(reply, id, `${this.target.id}: tools/call ${name}`);
		const content = result?.content?.[0];
		if (error || result?.isError || content?.type !== "text" || content.text === undefined) {
			throw new Error(
				`${this.target.id}: unexpected result of ${name}: ${JSON.stringify(error ?? result).slice(0, 300)}`,
			);
		}
		return content.text;
	}

	/** The names a 2025 session's `tools/list` answers (one page). */
	async toolNames(): Promise<string[]> {
		const id = this.nextId++;
		const reply = await this.post({ jsonrpc: "2.0", id, method: "tools/list", params: {} });
		const { result, error } = await replyTo(reply, id, `${this.target.id}: tools/list`);
		if (error || !result?.tools) throw new Error(`${this.target.id}: tools/list failed: ${JSON.stringify(error)}`);
		return result.tools.map((tool) => tool.name ?? "");
	}

	/** Ends a 2025 session (DELETE); nothing for a 2026-07-28 client, which has none. */
	async close(): Promise<void> {
		if (this.sessionId === null) return;
		const response = await this.fetchFor("DELETE", {
			method: "DELETE",
			headers: { ...this.target.headers, ...this.sessionHeaders() },
		});
		await response.body?.cancel();
		this.sessionId = null;
	}

	private async initialize(): Promise<void> {
		const id = this.nextId++;
		const response = await this.post({
			jsonrpc: "2.0",
			id,
			method: "initialize",
			params: { protocolVersion: LEGACY_VERSION, capabilities: {}, clientInfo: CLIENT_INFO },
		});
		const sessionId = response.headers.get("mcp-session-id");
		const { error } = await replyTo(response, id, `${this.target.id}: initialize`);
		if (error) throw new Error(`${this.target.id}: initialize failed: ${JSON.stringify(error)}`);
		// A stateless 2025 upstream (the SDK's `legacy: "stateless"`) gives no session id; the gateway does.
		this.sessionId = sessionId;
		const initialized = await this.post({ jsonrpc: "2.0", method: "notifications/initialized" });
		if (initialized.status !== 202) {
			throw new Error(`${this.target.id}: notifications/initialized answered ${initialized.status}`);
		}
		await initialized.body?.cancel();
	}

	private sessionHeaders(): Record<string, string> {
		return {
			"mcp-protocol-version": this.target.era,
			...(this.sessionId === null ? {} : { "mcp-session-id": this.sessionId }),
		};
	}

	private async post(body: unknown, modernHeaders: Record<string, string> = {}): Promise<Response> {
		const method = (body as { method?: string }).method;
		const isInitialize = method === "initialize";
		return await this.fetchFor(`POST ${method}`, {
			method: "POST",
			headers: {
				...this.target.headers,
				accept: "application/json, text/event-stream",
				"content-type": "application/json",
				...(isInitialize ? {} : this.sessionHeaders()),
				...(this.target.era === MODERN_VERSION ? modernHeaders : {}),
			},
			body: JSON.stringify(body),
		});
	}

	/** A request of this client, failing with the target and what it was when it does not get an answer. */
	private async fetchFor(what: string, init: RequestInit): Promise<Response> {
		try {
			return await fetch(this.target.url, { ...init, signal: AbortSignal.timeout(this.timeoutMs) });
		} catch (error) {
			throw new Error(
				`${this.target.id}: ${what} got no answer: ${error instanceof Error ? error.message : String(error)}`,
				{
					cause: error,
				},
			);
		}
	}
}

/**
 * `calls` echoes per client, alternating between the clients call by call in an order rotated each
 * call (starting at `round`), so that drift of the machine falls on all alike; each client's latencies in ms.
 */
export async function alternatingEchoes<T extends string>(
	clients: Record<T, RawClient>,
	ids: readonly T[],
	round: number,
	calls: number,
): Promise<Record<T, number[]>> {
	const samples = Object.fromEntries(ids.map((id) => [id, [] as number[]])) as Record<T, number[]>;
	for (let i = 0; i < calls; i++) {
		for (const id of rotated(ids, round + i)) {
			const start = performance.now();
			await clients[id].echo();
			samples[id].push(performance.now() - start);
		}
	}
	return samples;
}

/** Every Durable Object request the gateway has made so far, by `Class.method`. */
export async function durableObjectRequests(
	gatewayUrl: string,
	timeoutMs: number,
): Promise<DurableObjectRequestCounts> {
	const response = await fetch(`${gatewayUrl}${COUNTS_PATH}`, { signal: AbortSignal.timeout(timeoutMs) });
	if (!response.ok) throw new Error(`the gateway's Durable Object counter answered ${response.status}`);
	return (await response.json()) as DurableObjectRequestCounts;
}

/** What the 2026-07-28 upstream received since its last reset, by `<era> <method>`. */
export async function modernUpstreamCounts(upstreamUrl: string, timeoutMs: number): Promise<Record<string, number>> {
	const response = await fetch(new URL("/_counts", upstreamUrl), { signal: AbortSignal.timeout(timeoutMs) });
	if (!response.ok) throw new Error(`the 2026-07-28 upstream's /_counts answered ${response.status}`);
	return (await response.json()) as Record<string, number>;
}

export async function resetModernUpstreamCounts(upstreamUrl: string, timeoutMs: number): Promise<void> {
	const response = await fetch(new URL("/_counts/reset", upstreamUrl), {
		method: "POST",
		signal: AbortSignal.timeout(timeoutMs),
	});
	await response.body?.cancel();
}

/** Adds `after − before` of each name to `total`. */
export function addDifference(
	total: Record<string, number>,
	before: Record<string, number>,
	after: Record<string, number>,
): void {
	for (const [name, count] of Object.entries(after)) {
		const added = count - (before[name] ?? 0);
		if (added !== 0) total[name] = (total[name] ?? 0) + added;
	}
}
