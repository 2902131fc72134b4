/**
 * A deliberately misbehaving MCP upstream for the gateway's security tests.
 * It speaks streamable HTTP by hand over plain `node:http` (no SDK server),
 * because it has to break the protocol's rules on purpose. Run directly:
 * `node scripts/hostile-upstream.ts [port]` prints `hostile upstream listening on <port>`.
 *
 * Each behaviour lives at `POST|GET|DELETE /<behaviour>/mcp`; options ride in
 * the query string (`url(behaviour, query)` builds such a URL).
 *
 * Baseline, for every behaviour unless it says otherwise:
 * - `initialize`: JSON result with the client's protocol version when it is
 *   one we know (else the latest), tools/resources/prompts capabilities,
 *   serverInfo `hostile-<behaviour>`, and a fresh `mcp-session-id` header.
 *   Other requests are accepted with any session id, or none.
 * - notifications and responses from the client: 202.
 * - `ping` → `{}`; `tools/list` → one tool `ok`; `tools/call` → text
 *   `ok from <behaviour>`; `resources/list`, `resources/templates/list`,
 *   `prompts/list` → empty lists; any other method → -32601.
 * - replies are JSON; `GET` (the client's event stream) → 405; `DELETE` → 200.
 * - a body that is not JSON → 400 (-32700); a batch or a malformed message → 400 (-32600).
 * - an unknown behaviour → 404 (logged all the same).
 *
 * Behaviours:
 * - `redirect`: every request, any HTTP method, gets 307 to the `to` query parameter, empty body.
 * - `sink`: the baseline; it exists so the log can prove it received nothing.
 * - `huge-init-json`: initialize carries `instructions` of `size` bytes
 *   (default 3 MiB), sent chunked without content-length.
 * - `huge-init-sse`: the same, as one SSE event.
 * - `huge-catalog`: tools/list in `pages` pages (default 20), cursors "1",
 *   "2", ..., each of ten tools whose descriptions total `pageKiB` KiB (default 600).
 * - `flood`: GET opens an SSE stream of `notifications/tools/list_changed`
 *   written as fast as the socket takes them, for `ms` milliseconds (default
 *   3000) or until the client leaves. Its tool `flood_call` answers in SSE:
 *   500 list_changed notifications, then the result.
 * - `lying-ids`: tools/call answers in SSE with forged responses to the ids
 *   around the request's, a server→client `sampling/createMessage`, a progress
 *   notification for someone else's token, the real response (text `real`),
 *   then one more forged response. With `json=1`: one JSON response whose id is off by one.
 * - `catch-all`: one resource template `{+u}` that matches every URI; resources/read answers any URI.
 * - `dup-uri`: resources/list offers the `uri` query parameter (default `shared://doc`); resources/read answers it.
 * - `invalid-tools`: tools/list holds a tool without a name, one with a numeric
 *   name, one without a schema, and one good tool `good`.
 * - `redos-template`: one resource template of 30 adjacent reserved
 *   expansions followed by `x` and 26 adjacent simple ones, to tempt a
 *   backtracking matcher; resources/read answers any URI.
 * - `listen`: GET opens an SSE stream that stays open and silent (any number of them) until the client leaves.
 * - `ends-at-once`: GET answers 200 with one priming event (an id and `retry: <retry>`, default
 *   1000 ms, no data) and ends the stream at once, every time: a gateway that reopens at once loops.
 * - `gated`: tool `wait` answers only once `POST /_release?behaviour=gated` is called.
 * - `held-discover`: `server/discover` answers only once `POST /_release?behaviour=held-discover`
 *   is called (then with -32601, as a 2025 server would), to hold an era probe past its timeout.
 * - `legacy-versions`: `server/discover` gets 400 with a modern UnsupportedProtocolVersionError
 *   (-32022) whose `supported` lists only 2025 versions: a server that knows the modern envelope
 *   but speaks only the handshake era.
 * - `modern-failing`: `server/discover` answers as a 2026-07-28-only server; the methods listed in
 *   `fail` (comma-separated, default `tools/list,tools/call`) get HTTP `status` (default 500) with
 *   an HTML page as `type` (default `text/html`), and a 401 carries a `WWW-Authenticate` challenge.
 *
 * Control API:
 * - `GET /_log[?behaviour=x]`: every request on an MCP path, in arrival order,
 *   as `{behaviour, httpMethod, rpcMethod, id, sessionId, authorization, lastEventId, query}`.
 * - `POST /_reset`: clears the log and every behaviour's state (ends flood
 *   streams, answers waiting `wait` calls).
 * - `GET /_waiting?behaviour=gated`: `{waiting: n}`, the calls held right now.
 * - `POST /_release?behaviour=gated`: answers every held call; `{released: n}`.
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface HostileUpstreamOptions {
	port?: number;
}

export interface RunningHostileUpstream {
	port: number;
	/** `http://127.0.0.1:<port>/<behaviour>/mcp`, with the query's parameters. */
	url(behaviour: string, query?: Record<string, string>): string;
	close(): Promise<void>;
}

export interface HostileLogEntry {
	behaviour: string;
	httpMethod: string;
	/** The JSON-RPC method, or null for a response, a batch, a non-JSON body or no body. */
	rpcMethod: string | null;
	id: JsonRpcId | null;
	sessionId: string | null;
	authorization: string | null;
	lastEventId: string | null;
	query: Record<string, string>;
}

type JsonRpcId = string | number;

interface RpcRequest {
	id: JsonRpcId;
	method: string;
	params: Record<string, unknown>;
}

/** What is kept per behaviour between requests, until `/_reset`. */
interface BehaviourState {
	/** Releases for held `gated` calls. */
	waiting: Set<() => void>;
	/** Open flood streams, ended on reset so they cannot spill into the next test. */
	streams: Set<ServerResponse>;
}

/** One HTTP request on `/<behaviour>/mcp`. */
interface HttpContext {
	behaviour: string;
	query: Record<string, string>;
	state: BehaviourState;
	res: ServerResponse;
}

/** One JSON-RPC request from the client. */
interface Call extends HttpContext {
	request: RpcRequest;
	/** Headers every reply to this request carries (the session id, for initialize). */
	replyHeaders: Record<string, string>;
}

/** Returned by a handler that wrote its reply itself. */
const HANDLED = Symbol("handled");

/** Answers with a result (sent as JSON), throws RpcError, or writes the reply itself and returns HANDLED. */
type Handler = (call: Call) => unknown;

interface Behaviour {
	/** Answers every HTTP request itself, before any MCP handling. */
	intercept?: (context: HttpContext) => void;
	/** Answers the client's GET stream (baseline: 405). */
	get?: (context: HttpContext) => Promise<void>;
	/** JSON-RPC methods it answers differently from the baseline. */
	methods?: Record<string, Handler>;
}

class RpcError extends Error {
	code: number;
	constructor(code: number, message: string) {
		super(message);
		this.code = code;
	}
}

const SUPPORTED_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26"];
const LATEST_VERSION = "2025-11-25";
const JSON_HEADERS = { "content-type": "application/json" };
const SSE_HEADERS = { "content-type": "text/event-stream", "cache-control": "no-cache" };
/** Big bodies go out in slices this size, each waiting for the socket, so backpressure is real. */
const WRITE_SLICE = 64 * 1024;
const OK_TOOL = { name: "ok", inputSchema: { type: "object" } };
const LIST_CHANGED = { jsonrpc: "2.0", method: "notifications/tools/list_changed" };

const BASELINE: Record<string, Handler> = {
	initialize: ({ behaviour, request }) => initializeResult(behaviour, request.params),
	ping: () => ({}),
	"tools/list": () => ({ tools: [OK_TOOL] }),
	"tools/call": ({ behaviour }) => textResult(`ok from ${behaviour}`),
	"resources/list": () => ({ resources: [] }),
	"resources/templates/list": () => ({ resourceTemplates: [] }),
	"prompts/list": () => ({ prompts: [] }),
};

const baselineToolCall = BASELINE["tools/call"] as Handler;

const BEHAVIOURS = new Map<string, Behaviour>([
	["redirect", { intercept: redirect }],
	["sink", {}],
	["legacy-versions", { methods: { "server/discover": legacyVersionsOnly } }],
	[
		"modern-failing",
		{
			methods: {
				"server/discover": () => ({
					supportedVersions: ["2026-07-28"],
					capabilities: { tools: {} },
					_meta: { "io.modelcontextprotocol/serverInfo": { name: "hostile-modern-failing", version: "1.0.0" } },
				}),
				"tools/list": failingOr("tools/list"),
				"tools/call": failingOr("tools/call"),
			},
		},
	],
	["huge-init-json", { methods: { initialize: hugeInitialize("json") } }],
	["huge-init-sse", { methods: { initialize: hugeInitialize("sse") } }],
	["huge-catalog", { methods: { "tools/list": hugeCatalogPage } }],
	[
		"flood",
		{
			get: floodListChanged,
			methods: {
				"tools/list": () => ({ tools: [OK_TOOL, { name: "flood_call", inputSchema: { type: "object" } }] }),
				"tools/call": (call) => (toolName(call) === "flood_call" ? floodCall(call) : baselineToolCall(call)),
			},
		},
	],
	["lying-ids", { methods: { "tools/call": lyingToolCall } }],
	[
		"catch-all",
		{
			methods: {
				"resources/templates/list": () => ({ resourceTemplates: [{ uriTemplate: "{+u}", name: "everything" }] }),
				"resources/read": (call) => readResult(requestedUri(call), `catch-all read ${requestedUri(call)}`),
			},
		},
	],
	[
		"dup-uri",
		{
			methods: {
				"resources/list": ({ query }) => ({ resources: [{ uri: query.uri ?? "shared://doc", name: "doc" }] }),
				"resources/read": (call) =>
					readResult(requestedUri(call) || (call.query.uri ?? "shared://doc"), "dup-uri read"),
			},
		},
	],
	[
		"invalid-tools",
		{
			methods: {
				"tools/list": () => ({
					tools: [
						{ inputSchema: { type: "object" } },
						{ name: 42, inputSchema: {} },
						{ name: "no_schema" },
						{ name: "good", inputSchema: { type: "object" } },
					],
				}),
			},
		},
	],
	[
		"redos-template",
		{
			methods: {
				"resources/templates/list": () => ({ resourceTemplates: [{ uriTemplate: redosTemplate(), name: "redos" }] }),
				// Not in the brief's list, but lets a test prove a read still routes here in bounded time.
				"resources/read": (call) => readResult(requestedUri(call), `redos read ${requestedUri(call)}`),
			},
		},
	],
	["listen", { get: quietStream }],
	["ends-at-once", { get: endsAtOnce }],
	[
		"gated",
		{
			methods: {
				"tools/list": () => ({ tools: [OK_TOOL, { name: "wait", inputSchema: { type: "object" } }] }),
				"tools/call": async (call) => {
					if (toolName(call) !== "wait") return baselineToolCall(call);
					await heldUntilRelease(call);
					return textResult("released");
				},
			},
		},
	],
	[
		"held-discover",
		{
			methods: {
				"server/discover": async (call) => {
					await heldUntilRelease(call);
					throw new RpcError(-32601, "Method not found: server/discover");
				},
			},
		},
	],
]);

/** Starts the upstream on 127.0.0.1; resolves once it listens. */
export async function startHostileUpstream(options: HostileUpstreamOptions = {}): Promise<RunningHostileUpstream> {
	const log: HostileLogEntry[] = [];
	const states = new Map<string, BehaviourState>();
	const stateOf = (behaviour: string): BehaviourState => {
		let state = states.get(behaviour);
		if (!state) {
			state = { waiting: new Set(), streams: new Set() };
			states.set(behaviour, state);
		}
		return state;
	};

	const handleControl = (req: IncomingMessage, res: ServerResponse, path: string, query: Record<string, string>) => {
		const route = `${req.method ?? "GET"} ${path}`;
		// Only gated calls wait, so it is the natural default.
		const behaviour = query.behaviour ?? "gated";
		switch (route) {
			case "GET /_log":
				return sendJson(res, 200, query.behaviour ? log.filter((entry) => entry.behaviour === behaviour) : log);
			case "POST /_reset":
				log.length = 0;
				for (const state of states.values()) {
					releaseAll(state);
					for (const stream of state.streams) stream.end();
				}
				states.clear();
				return res.writeHead(204).end();
			case "GET /_waiting":
				return sendJson(res, 200, { waiting: stateOf(behaviour).waiting.size });
			case "POST /_release":
				return sendJson(res, 200, { released: releaseAll(stateOf(behaviour)) });
			default:
				return sendJson(res, 404, { error: `no control ${route}` });
		}
	};

	const handleMcp = async (req: IncomingMessage, res: ServerResponse, name: string, query: Record<string, string>) => {
		const httpMethod = req.method ?? "GET";
		const body = await readBody(req);
		const message = body.ok && isObject(body.value) ? body.value : {};
		log.push({
			behaviour: name,
			httpMethod,
			rpcMethod: typeof message.method === "string" ? message.method : null,
			id: isId(message.id) ? message.id : null,
			sessionId: header(req, "mcp-session-id"),
			authorization: header(req, "authorization"),
			lastEventId: header(req, "last-event-id"),
			query,
		});
		const behaviour = BEHAVIOURS.get(name);
		if (!behaviour) return sendRpcError(res, 404, null, -32600, `no behaviour '${name}'`);
		const context: HttpContext = { behaviour: name, query, state: stateOf(name), res };
		if (behaviour.intercept) return behaviour.intercept(context);
		switch (httpMethod) {
			case "POST":
				return handlePost(behaviour, context, body);
			case "GET":
				if (behaviour.get) return behaviour.get(context);
				return res.writeHead(405, { allow: "POST, DELETE" }).end();
			case "DELETE":
				return res.writeHead(200).end();
			default:
				return res.writeHead(405, { allow: "GET, POST, DELETE" }).end();
		}
	};

	const server = createServer((req, res) => {
		// A client that goes away mid-reply must not crash the process: writes then fail quietly.
		req.on("error", () => {});
		res.on("error", () => {});
		const url = new URL(req.url ?? "/", "http://localhost");
		const query = Object.fromEntries(url.searchParams);
		const mcp = /^\/([^/]+)\/mcp$/.exec(url.pathname);
		const work = url.pathname.startsWith("/_")
			? Promise.resolve(handleControl(req, res, url.pathname, query))
			: mcp?.[1]
				? handleMcp(req, res, decodeURIComponent(mcp[1]), query)
				: Promise.resolve(sendJson(res, 404, { error: `no route ${url.pathname}` }));
		work.catch((error: unknown) => {
			console.error("hostile upstream:", error);
			if (!res.headersSent) res.writeHead(500).end();
			else res.destroy();
		});
	});
	await new Promise<void>((resolve) => server.listen(options.port ?? 0, "127.0.0.1", resolve));
	const port = (server.address() as AddressInfo).port;
	return {
		port,
		url: (behaviour, query) => {
			const search = query ? new URLSearchParams(query).toString() : "";
			return `http://127.0.0.1:${port}/${encodeURIComponent(behaviour)}/mcp${search ? `?${search}` : ""}`;
		},
		close: () =>
			new Promise<void>((resolve) => {
				// Flood streams and held calls would otherwise keep close() waiting forever.
				server.closeAllConnections();
				server.close(() => resolve());
			}),
	};
}

/** Answers one POSTed message: a request is dispatched, anything else acknowledged or refused. */
async function handlePost(
	behaviour: Behaviour,
	context: HttpContext,
	body: { ok: true; value: unknown } | { ok: false },
): Promise<void> {
	const { res } = context;
	if (!body.ok) return sendRpcError(res, 400, null, -32700, "Parse error: the body is not JSON");
	// Batches were dropped from MCP in 2025-06-18; this upstream does not take them.
	if (!isObject(body.value))
		return sendRpcError(res, 400, null, -32600, "Invalid Request: expected one JSON-RPC message");
	const message = body.value;
	if (typeof message.method !== "string") {
		if ("result" in message || "error" in message) return void res.writeHead(202).end();
		return sendRpcError(res, 400, null, -32600, "Invalid Request: neither a request nor a response");
	}
	if (message.id === undefined) return void res.writeHead(202).end();
	if (!isId(message.id)) return sendRpcError(res, 400, null, -32600, "Invalid Request: id must be a string or number");
	const request: RpcRequest = {
		id: message.id,
		method: message.method,
		params: isObject(message.params) ? message.params : {},
	};
	const replyHeaders: Record<string, string> =
		request.method === "initialize" ? { "mcp-session-id": randomUUID() } : {};
	const call: Call = { ...context, request, replyHeaders };
	const handler = lookup(behaviour.methods, request.method) ?? lookup(BASELINE, request.method);
	if (!handler) return sendRpcError(res, 200, request.id, -32601, `Method not found: ${request.method}`);
	let result: unknown;
	try {
		result = await handler(call);
	} catch (error) {
		if (error instanceof RpcError) return sendRpcError(res, 200, request.id, error.code, error.message);
		throw error;
	}
	if (result === HANDLED) return;
	sendJson(res, 200, { jsonrpc: "2.0", id: request.id, result }, replyHeaders);
}

// --- Behaviours -------------------------------------------------------------

function redirect({ query, res }: HttpContext): void {
	if (query.to) res.writeHead(307, { location: query.to }).end();
	else sendJson(res, 400, { error: "redirect needs a 'to' query parameter" });
}

/** The modern error for a version it does not speak, naming only the 2025 versions it does. */
function legacyVersionsOnly(call: Call): typeof HANDLED {
	const meta = isObject(call.request.params._meta) ? call.request.params._meta : {};
	const data = { supported: SUPPORTED_VERSIONS, requested: meta["io.modelcontextprotocol/protocolVersion"] ?? null };
	const error = { code: -32022, message: "Unsupported protocol version", data };
	sendJson(call.res, 400, { jsonrpc: "2.0", id: call.request.id, error }, call.replyHeaders);
	return HANDLED;
}

/** A page no MCP client asked for: served from the gateway's origin, its script would run there. */
const HOSTILE_PAGE = "<!doctype html><html><body><script>document.title = 'ran'</script>Sign in</body></html>";

/** `modern-failing`: the method fails as its query says, or gets the baseline answer. */
function failingOr(method: string): Handler {
	return (call) => {
		const failing = (call.query.fail ?? "tools/list,tools/call").split(",");
		if (!failing.includes(method)) return (BASELINE[method] as Handler)(call);
		const status = intParam(call.query, "status", 500);
		const challenge = status === 401 ? { "www-authenticate": 'Bearer error="invalid_token"' } : {};
		call.res.writeHead(status, { "content-type": call.query.type ?? "text/html", ...challenge }).end(HOSTILE_PAGE);
		return HANDLED;
	};
}

/** An initialize whose instructions are `size` bytes, so the gateway must cap what it buffers. */
function hugeInitialize(framing: "json" | "sse"): Handler {
	return async (call) => {
		const instructions = "x".repeat(intParam(call.query, "size", 3 * 1024 * 1024));
		const result = { ...initializeResult(call.behaviour, call.request.params), instructions };
		const message = { jsonrpc: "2.0", id: call.request.id, result };
		// writeHead then write() (never end(body)) so Node sends it chunked, with no content-length to check up front.
		call.res.writeHead(200, { ...(framing === "json" ? JSON_HEADERS : SSE_HEADERS), ...call.replyHeaders });
		if (await writeAll(call.res, framing === "json" ? JSON.stringify(message) : sseEvent(message))) call.res.end();
		return HANDLED;
	};
}

/** One page of a catalog too big to hold whole: ten tools per page, `pageKiB` KiB of descriptions. */
function hugeCatalogPage({ query, request }: Call): unknown {
	const pages = intParam(query, "pages", 20);
	const pageBytes = intParam(query, "pageKiB", 600) * 1024;
	const cursor = request.params.cursor;
	const page = cursor === undefined ? 0 : Number(cursor);
	if (typeof cursor !== "string" && cursor !== undefined) throw new RpcError(-32602, "cursor must be a string");
	if (!Number.isInteger(page) || page < 0 || page >= pages) throw new RpcError(-32602, `unknown cursor ${cursor}`);
	const perPage = 10;
	const description = "d".repeat(Math.ceil(pageBytes / perPage));
	const tools = Array.from({ length: perPage }, (_, index) => ({
		name: `page${page}_tool${index}`,
		description,
		inputSchema: { type: "object" },
	}));
	return { tools, ...(page + 1 < pages ? { nextCursor: String(page + 1) } : {}) };
}

/** The GET stream: list_changed as fast as the socket drains, to test the gateway's debouncing. */
async function floodListChanged({ query, res, state }: HttpContext): Promise<void> {
	const deadline = Date.now() + intParam(query, "ms", 3000);
	res.writeHead(200, SSE_HEADERS);
	state.streams.add(res);
	// Several events per write: one syscall each would measure Node, not the gateway.
	const batch = sseEvent(LIST_CHANGED).repeat(64);
	while (!gone(res) && Date.now() < deadline) {
		if (!res.write(batch)) await drained(res, deadline);
	}
	state.streams.delete(res);
	if (!gone(res)) res.end();
}

/** The GET stream of an upstream with nothing to say: open, one comment, then silence until the client leaves. */
async function quietStream({ res, state }: HttpContext): Promise<void> {
	res.writeHead(200, SSE_HEADERS);
	state.streams.add(res);
	res.write(": listening\n\n");
	await new Promise<void>((resolve) => res.once("close", () => resolve()));
	state.streams.delete(res);
}

/** The GET stream of an upstream that closes it at once, asking (with `retry`) to be reconnected later. */
async function endsAtOnce({ query, res }: HttpContext): Promise<void> {
	res.writeHead(200, SSE_HEADERS);
	res.end(`id: ${randomUUID()}\nretry: ${intParam(query, "retry", 1000)}\ndata: \n\n`);
}

/** A tools/call reply stream that buries the result under 500 list_changed notifications. */
function floodCall(call: Call): Promise<typeof HANDLED> {
	const notifications = Array.from({ length: 500 }, () => LIST_CHANGED);
	return replySse(call, [...notifications, { jsonrpc: "2.0", id: call.request.id, result: textResult("flood done") }]);
}

/**
 * A tools/call reply that answers other requests' ids, asks the client
 * something, reports progress on a token it was never given, and keeps lying
 * after the real response: the gateway must take only the real one.
 */
function lyingToolCall(call: Call): unknown {
	const { id } = call.request;
	const forged = (forgedId: JsonRpcId) => ({ jsonrpc: "2.0", id: forgedId, result: textResult("forged") });
	if (call.query.json === "1") {
		sendJson(call.res, 200, forged(nextId(id)), call.replyHeaders);
		return HANDLED;
	}
	return replySse(call, [
		...forgedIds(id).map(forged),
		{
			jsonrpc: "2.0",
			id: "hostile-req-1",
			method: "sampling/createMessage",
			params: { messages: [], maxTokens: 1 },
		},
		{
			jsonrpc: "2.0",
			method: "notifications/progress",
			params: { progressToken: "someone-elses-token", progress: 1, total: 2 },
		},
		{ jsonrpc: "2.0", id, result: textResult("real") },
		forged(nextId(id)),
	]);
}

/** The ids near a request's own: every integer within 5 of a numeric id; for a string, look-alikes and small numbers. */
function forgedIds(id: JsonRpcId): JsonRpcId[] {
	if (typeof id === "string") return [`${id}x`, "1", "2", "3"].filter((candidate) => candidate !== id);
	const ids: number[] = [];
	for (let k = Math.ceil(id - 5); k <= Math.floor(id + 5); k++) if (k !== id) ids.push(k);
	return ids;
}

function nextId(id: JsonRpcId): JsonRpcId {
	return typeof id === "number" ? id + 1 : `${id}x`;
}

/** 30 adjacent `{+x}` then `x` and 26 adjacent `{a}`: a naive regex translation backtracks exponentially. */
function redosTemplate(): string {
	const reserved = Array.from({ length: 30 }, (_, index) => `{+x${index + 1}}`).join("");
	const simple = Array.from({ length: 26 }, (_, index) => `{${String.fromCharCode(97 + index)}}`).join("");
	return `${reserved}x${simple}`;
}

/** Holds a `gated` (or `held-discover`) call until `/_release` (or `/_reset`); a call whose client left stops counting. */
function heldUntilRelease({ state, res }: Call): Promise<void> {
	return new Promise<void>((resolve) => {
		const release = () => {
			state.waiting.delete(release);
			resolve();
		};
		state.waiting.add(release);
		res.once("close", () => state.waiting.delete(release));
	});
}

function releaseAll(state: BehaviourState): number {
	const releases = [...state.waiting];
	for (const release of releases) release();
	return releases.length;
}

// --- Helpers ----------------------------------------------------------------

function initializeResult(behaviour: string, params: Record<string, unknown>) {
	const requested = params.protocolVersion;
	return {
		protocolVersion:
			typeof requested === "string" && SUPPORTED_VERSIONS.includes(requested) ? requested : LATEST_VERSION,
		capabilities: { tools: { listChanged: true }, resources: { subscribe: true, listChanged: true }, prompts: {} },
		serverInfo: { name: `hostile-${behaviour}`, version: "1.0.0" },
	};
}

function textResult(text: string) {
	return { content: [{ type: "text", text }] };
}

function readResult(uri: string, text: string) {
	return { contents: [{ uri, text }] };
}

function toolName({ request }: Call): string | null {
	return typeof request.params.name === "string" ? request.params.name : null;
}

function requestedUri({ request }: Call): string {
	return typeof request.params.uri === "string" ? request.params.uri : "";
}

/** Writes the messages as one SSE reply stream, then ends it. */
async function replySse(call: Call, messages: unknown[]): Promise<typeof HANDLED> {
	call.res.writeHead(200, { ...SSE_HEADERS, ...call.replyHeaders });
	for (const message of messages) if (!(await writeAll(call.res, sseEvent(message)))) return HANDLED;
	call.res.end();
	return HANDLED;
}

function sseEvent(message: unknown): string {
	return `event: message\ndata: ${JSON.stringify(message)}\n\n`;
}

/** Writes in slices, waiting for the socket between them; false when the client left. */
async function writeAll(res: ServerResponse, data: string): Promise<boolean> {
	const bytes = Buffer.from(data, "utf8");
	for (let offset = 0; offset < bytes.length; offset += WRITE_SLICE) {
		if (gone(res)) return false;
		if (!res.write(bytes.subarray(offset, offset + WRITE_SLICE))) await drained(res);
	}
	return !gone(res);
}

/** Resolves once the socket takes more, the client leaves, or the deadline passes. */
function drained(res: ServerResponse, deadline?: number): Promise<void> {
	return new Promise<void>((resolve) => {
		const done = () => {
			res.off("drain", done);
			res.off("close", done);
			clearTimeout(timer);
			resolve();
		};
		res.on("drain", done);
		res.on("close", done);
		const timer = deadline === undefined ? undefined : setTimeout(done, Math.max(0, deadline - Date.now()));
	});
}

/** Whether the response can no longer be written to (ended, or its client left). */
function gone(res: ServerResponse): boolean {
	return res.writableEnded || res.destroyed;
}

function sendJson(res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
	const body = JSON.stringify(value);
	// writeHead fixes the headers, so without an explicit length Node would send even small replies chunked.
	res.writeHead(status, { ...JSON_HEADERS, "content-length": String(Buffer.byteLength(body)), ...headers }).end(body);
}

function sendRpcError(res: ServerResponse, status: number, id: JsonRpcId | null, code: number, message: string): void {
	sendJson(res, status, { jsonrpc: "2.0", id, error: { code, message } });
}

/** An own property only: `constructor` or `__proto__` as a method name must not find Object's. */
function lookup(table: Record<string, Handler> | undefined, key: string): Handler | undefined {
	return table && Object.hasOwn(table, key) ? table[key] : undefined;
}

function intParam(query: Record<string, string>, name: string, fallback: number): number {
	const value = Number(query[name]);
	return query[name] !== undefined && Number.isInteger(value) && value >= 0 ? value : fallback;
}

function isObject(value: unknown): value is Record<string, unknown> {
	return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isId(value: unknown): value is JsonRpcId {
	return typeof value === "string" || typeof value === "number";
}

function header(req: IncomingMessage, name: string): string | null {
	const value = req.headers[name];
	return typeof value === "string" ? value : null;
}

/** The body as JSON; `ok: false` when it is empty or not JSON. */
async function readBody(req: IncomingMessage): Promise<{ ok: true; value: unknown } | { ok: false }> {
	const chunks: Buffer[] = [];
	for await (const chunk of req) chunks.push(chunk as Buffer);
	const text = Buffer.concat(chunks).toString("utf8");
	try {
		return text ? { ok: true, value: JSON.parse(text) } : { ok: false };
	} catch {
		return { ok: false };
	}
}

// Run directly: `node scripts/hostile-upstream.ts [port]`.
if (import.meta.url === `file://${process.argv[1]}`) {
	const upstream = await startHostileUpstream({ port: Number(process.argv[2] ?? 0) });
	console.log(`hostile upstream listening on ${upstream.port}`);
}
