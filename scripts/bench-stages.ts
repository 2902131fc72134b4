/**
 * Per-stage cost of one request: a Node microbenchmark of the plain-code work
 * the edge Worker and the SessionDO do for one `tools/call echo` through
 * `/mcp/<server>` with an SSE reply of one event, using the project's own
 * functions from src/ (bundled from the working tree with esbuild, as wrangler
 * bundles them). Each stage runs many times after a warm-up; the table gives
 * per-operation mean, p50 and p99 in microseconds, and the number of timed
 * operations.
 *
 *   node scripts/bench-stages.ts            about 8 s
 *   node scripts/bench-stages.ts --quick    under 2 s
 *   node scripts/bench-stages.ts --json     the results as JSON
 *   node scripts/bench-stages.ts --filter relay
 *
 * `npm run bench` runs it once (`measureStages`) and reports it in docs/benchmarks.md.
 *
 * What it does not cover: the Durable Object RPC (and the reply stream crossing
 * back to the edge), the runtime's own work (HTTP parsing, the hops between
 * workerd processes, wrangler's logging), the upstream fetch, KV reads and the
 * rate-limiter binding; only the end-to-end gateway − floor difference shows
 * those. Node is not workerd: Node runs WebCrypto on libuv's thread pool, where
 * workerd computes it in the calling thread (its source says so), so every
 * WebCrypto stage is measured twice, as Node runs it and with a synchronous
 * WebCrypto (node:crypto underneath); and web streams, Request and Headers are
 * JavaScript here, C++ in workerd.
 *
 * To add a stage, add a `stage({...})` to `builtInStages` (or pass
 * `extraStages` to `measureStages`): a name, the code it measures, its section
 * and how many times one transparent tools/call runs it (`perCall`, 0 for
 * other paths, parts and references), an optional untimed `prepare` (a fresh
 * input per operation), the timed `run` (sync or async: a returned promise is
 * awaited) and a `check` of its output, run once first so that a stage never
 * measures an error path.
 */

import { createHash, createHmac, createSecretKey, type KeyObject, timingSafeEqual } from "node:crypto";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import type { JSONRPCMessage, JSONRPCNotification, RequestId } from "@modelcontextprotocol/sdk/types.js";
import { build } from "esbuild";
import { createParser } from "eventsource-parser";
import { Hono } from "hono";

/** Where a stage runs on the path of one transparent tools/call, or that it is not on it. */
export type StageSection = "edge" | "session" | "workerd" | "other" | "reference";

export const SECTION_LABELS: Record<StageSection, string> = {
	edge: "edge Worker, every request",
	session: "SessionDO, every call",
	workerd: "the WebCrypto stages again, computed synchronously as workerd does (node:crypto underneath)",
	other: "other paths (aggregate endpoints, a 64 KiB reply, initialize)",
	reference: "parts of the stages above, and references (not added up)",
};

export interface StageResult {
	name: string;
	/** The code measured, e.g. `src/edge/session-id.ts verifySessionId`. */
	code: string;
	section: StageSection;
	/** How many times one transparent tools/call runs it; 0 for other paths, parts and references. */
	perCall: number;
	/** Whether it makes a WebCrypto call (measured again in the `workerd` section). */
	webCrypto: boolean;
	/** Timed operations (warm-up not included). */
	iterations: number;
	/** Operations per timed sample: p50 and p99 are over the samples' per-operation times. */
	batch: number;
	meanUs: number;
	p50Us: number;
	p99Us: number;
}

export interface StageOptions {
	/** Short warm-up and measurement: the whole run under 2 s. */
	quick?: boolean;
	/** Only the stages whose name or code contains this text (case-insensitive). */
	filter?: string;
	/** More stages, measured after the built-in ones. */
	extraStages?: readonly Stage[];
	/** Called after each stage (progress output). */
	onStage?: (result: StageResult) => void;
}

/** One stage as defined (see `stage`). */
export interface StageDef<T> {
	name: string;
	code: string;
	section: StageSection;
	perCall: number;
	/** The operation makes a WebCrypto call. */
	webCrypto?: boolean;
	/** Measure it with the synchronous WebCrypto installed (the `workerd` section). */
	syncWebCrypto?: boolean;
	/** A fresh input for one operation, made outside the timing (e.g. a Request with an unread body). */
	prepare?: () => T;
	/** The operation timed; a returned promise is awaited. */
	run: (input: T) => unknown;
	/** Throws when the operation's output is not what the stage is meant to measure (run once first). */
	check?: (output: unknown) => void | Promise<void>;
	/** Bound on timed operations (e.g. for stages that grow a cache). */
	maxIterations?: number;
}

/** A stage with its input type erased, ready to measure. */
export interface Stage {
	name: string;
	code: string;
	section: StageSection;
	perCall: number;
	webCrypto: boolean;
	syncWebCrypto: boolean;
	maxIterations: number | undefined;
	prepare: () => unknown;
	run: (input: unknown) => unknown;
	check: (output: unknown) => void | Promise<void>;
}

export function stage<T>(def: StageDef<T>): Stage {
	const prepare = def.prepare;
	return {
		name: def.name,
		code: def.code,
		section: def.section,
		perCall: def.perCall,
		webCrypto: def.webCrypto ?? false,
		syncWebCrypto: def.syncWebCrypto ?? false,
		maxIterations: def.maxIterations,
		prepare: prepare ? () => prepare() : () => undefined,
		run: (input) => def.run(input as T),
		check: def.check ?? (() => undefined),
	};
}

// ---------------------------------------------------------------------------------------------
// The gateway's code, from src/

/**
 * The src/ functions measured, as this file calls them. src/ is bundled with
 * esbuild rather than imported: Node's type stripping does not take all of its
 * syntax (parameter properties), and src/ is type-checked against Workers'
 * types, not Node's. A stage's `check` catches a function that no longer
 * behaves as described here.
 */
interface Gateway {
	settingsFrom(env: object): GatewaySettings;
	sha256Hex(text: string): Promise<string>;
	bearerToken(request: Request): string | null;
	mintSessionId(secret: string): Promise<string>;
	verifySessionId(secret: string, id: string): Promise<boolean>;
	sessionDigest(id: string): Promise<string>;
	checkHost(request: Request, settings: GatewaySettings): void;
	checkOrigin(request: Request, settings: GatewaySettings): void;
	checkPostHeaders(request: Request): void;
	checkProtocolVersion(request: Request): void;
	readBodyWithin(request: Request, limit: number): Promise<string>;
	parseClientMessage(text: string): { kind: string; message: JSONRPCMessage };
	parseJsonRpcMessage(text: string): JSONRPCMessage | null;
	normalizeOutgoing(message: JSONRPCMessage): JSONRPCMessage;
	relaySse(body: ReadableStream<Uint8Array>, options: RelayOptions): ReadableStream<Uint8Array>;
	afterLastEvent(chunk: Uint8Array, previous: Uint8Array | undefined): number;
	EventSizeLimit: new (maxEventBytes: number) => { add(chunk: Uint8Array): number };
	mintApiKey(secret: string, id: string): Promise<string>;
	newKeyId(): string;
	verifyApiKey(secret: string, key: string): Promise<string | null>;
	withCompletion(body: ReadableStream<Uint8Array>, onDone: () => void): ReadableStream<Uint8Array>;
	startDeadline(ms: number, parent?: AbortSignal): { signal: AbortSignal; clear(): void };
}

/** What the stages read of src/config.ts's Settings. */
interface GatewaySettings {
	maxBodyBytes: number;
	maxReplyBytes: number;
}

/** src/mcp/sse-relay.ts SseRelayOptions. */
interface RelayOptions {
	requestId: RequestId;
	maxEventBytes: number;
	isolation?: {
		keepNotification: (message: JSONRPCNotification) => boolean;
		onForeign: (message: JSONRPCMessage) => void;
	};
	onIncomplete: (error: unknown) => JSONRPCMessage | null;
	onOversize: () => JSONRPCMessage;
	onDone: () => void;
}

/** Where each function measured lives. */
const SOURCES = {
	"src/config.ts": ["settingsFrom"],
	"src/primitives/crypto.ts": ["sha256Hex"],
	"src/edge/bearer.ts": ["bearerToken"],
	"src/edge/session-id.ts": ["mintSessionId", "verifySessionId", "sessionDigest"],
	"src/edge/transport-checks.ts": [
		"checkHost",
		"checkOrigin",
		"checkPostHeaders",
		"checkProtocolVersion",
		"readBodyWithin",
	],
	"src/mcp/jsonrpc.ts": ["parseClientMessage", "parseJsonRpcMessage"],
	"src/mcp/outgoing.ts": ["normalizeOutgoing"],
	"src/mcp/sse-relay.ts": ["relaySse"],
	"src/mcp/sse.ts": ["afterLastEvent", "EventSizeLimit"],
	"src/registry/api-key.ts": ["mintApiKey", "newKeyId", "verifyApiKey"],
	"src/session/streams/stream-completion.ts": ["withCompletion"],
	"src/upstream/deadline.ts": ["startDeadline"],
} as const satisfies Record<string, ReadonlyArray<keyof Gateway>>;

const ROOT = fileURLToPath(new URL("..", import.meta.url));

/** Bundles the functions of SOURCES from the working tree (esbuild, in memory) and imports the bundle. */
async function loadGateway(): Promise<Gateway> {
	const entry = Object.entries(SOURCES)
		.map(([file, names]) => `export { ${names.join(", ")} } from "./${file}";`)
		.join("\n");
	const built = await build({
		stdin: { contents: entry, resolveDir: ROOT, sourcefile: "bench-stages-entry.ts", loader: "ts" },
		bundle: true,
		format: "esm",
		platform: "neutral",
		target: "es2024",
		mainFields: ["module", "main"],
		conditions: ["workerd", "worker", "import"],
		write: false,
		logLevel: "silent",
	});
	const code = built.outputFiles[0]?.text;
	if (code === undefined) throw new Error("bench-stages: esbuild produced no bundle of src/");
	const loaded = (await import(`data:text/javascript;base64,${Buffer.from(code).toString("base64")}`)) as Record<
		string,
		unknown
	>;
	for (const [file, names] of Object.entries(SOURCES)) {
		for (const name of names) {
			if (typeof loaded[name] !== "function") throw new Error(`bench-stages: ${file} no longer exports ${name}`);
		}
	}
	return loaded as unknown as Gateway;
}

// ---------------------------------------------------------------------------------------------
// Workers' WebCrypto in Node

function bytesOf(data: ArrayBuffer | ArrayBufferView): Uint8Array {
	return data instanceof ArrayBuffer
		? new Uint8Array(data)
		: new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/** Workers' constant-time compare (src/primitives/crypto.ts uses it); Node has it in node:crypto only. */
function installTimingSafeEqual(): void {
	const subtle = crypto.subtle as SubtleCrypto & { timingSafeEqual?: unknown };
	if (typeof subtle.timingSafeEqual === "function") return;
	Object.defineProperty(subtle, "timingSafeEqual", {
		value: (a: ArrayBuffer | ArrayBufferView, b: ArrayBuffer | ArrayBufferView) =>
			timingSafeEqual(bytesOf(a), bytesOf(b)),
		configurable: true,
	});
}

/** Keys made by the synchronous importKey, and their secret. */
const syncKeys = new WeakMap<object, KeyObject>();

function sha256Only(algorithm: unknown): void {
	const name = typeof algorithm === "string" ? algorithm : (algorithm as { name?: unknown } | null)?.name;
	if (name !== "SHA-256") throw new Error(`bench-stages: the synchronous WebCrypto has no ${String(name)}`);
}

/**
 * WebCrypto as workerd runs it: computed in the calling thread, the promise
 * already resolved. Only what src/ uses: SHA-256 digests, raw HMAC-SHA256 keys
 * and their signatures.
 */
const SYNC_SUBTLE = {
	digest(algorithm: unknown, data: ArrayBuffer | ArrayBufferView): Promise<ArrayBuffer> {
		sha256Only(algorithm);
		return Promise.resolve(Uint8Array.from(createHash("sha256").update(bytesOf(data)).digest()).buffer);
	},
	importKey(format: string, keyData: ArrayBuffer | ArrayBufferView, algorithm: { name?: string; hash?: unknown }) {
		if (format !== "raw" || algorithm.name !== "HMAC") {
			throw new Error(`bench-stages: the synchronous WebCrypto imports raw HMAC keys only`);
		}
		sha256Only(algorithm.hash);
		const key = { type: "secret", algorithm: { name: "HMAC", hash: { name: "SHA-256" } } };
		syncKeys.set(key, createSecretKey(bytesOf(keyData)));
		return Promise.resolve(key);
	},
	sign(_algorithm: unknown, key: object, data: ArrayBuffer | ArrayBufferView): Promise<ArrayBuffer> {
		const secret = syncKeys.get(key);
		if (!secret) throw new Error("bench-stages: a key of Node's WebCrypto reached the synchronous one");
		return Promise.resolve(Uint8Array.from(createHmac("sha256", secret).update(bytesOf(data)).digest()).buffer);
	},
};

/** Runs `action` with the synchronous WebCrypto in place of Node's. */
async function withSyncWebCrypto<T>(action: () => Promise<T>): Promise<T> {
	for (const [name, value] of Object.entries(SYNC_SUBTLE)) {
		Object.defineProperty(crypto.subtle, name, { value, configurable: true, writable: true });
	}
	try {
		return await action();
	} finally {
		for (const name of Object.keys(SYNC_SUBTLE)) Reflect.deleteProperty(crypto.subtle, name);
	}
}

// ---------------------------------------------------------------------------------------------
// One realistic request: what the MCP SDK client sends for `callTool({ name: "echo" })`

const encoder = new TextEncoder();
const secret = (seed: string) => createHash("sha256").update(`bench-stages ${seed}`).digest("base64url");
const ENV = {
	ADMIN_TOKEN: secret("admin"),
	SESSION_SECRET: secret("session"),
	KEY_SECRET: secret("key"),
	ALLOW_HTTP_UPSTREAMS: "true",
};

const URL_TEXT = "http://127.0.0.1:8787/mcp/bench";
const REQUEST_ID = 7;
const BODY = JSON.stringify({
	method: "tools/call",
	params: { name: "echo", arguments: { text: "bench" } },
	jsonrpc: "2.0",
	id: REQUEST_ID,
});
/** The upstream SDK server's reply to it: one SSE event, as its `writeSSEEvent` frames it. */
const EVENT_DATA = JSON.stringify({
	result: { content: [{ type: "text", text: "bench" }] },
	jsonrpc: "2.0",
	id: REQUEST_ID,
});
const SSE_REPLY = encoder.encode(`event: message\ndata: ${EVENT_DATA}\n\n`);
/** The reply to the benchmark's `blob {kib: 64}`, as it may arrive: in chunks of 16 KiB. */
const BLOB_DATA = JSON.stringify({
	result: { content: [{ type: "text", text: "x".repeat(64 * 1024) }] },
	jsonrpc: "2.0",
	id: REQUEST_ID,
});
const BLOB_REPLY = encoder.encode(`event: message\ndata: ${BLOB_DATA}\n\n`);
const BLOB_CHUNKS = Array.from({ length: Math.ceil(BLOB_REPLY.byteLength / 16_384) }, (_, i) =>
	BLOB_REPLY.subarray(i * 16_384, (i + 1) * 16_384),
);

/** A key and a session ID minted under their secrets. */
interface Credentials {
	keySecret: string;
	sessionSecret: string;
	apiKey: string;
	sessionId: string;
}

async function credentials(g: Gateway, keySecret: string, sessionSecret: string): Promise<Credentials> {
	return {
		keySecret,
		sessionSecret,
		apiKey: await g.mintApiKey(keySecret, g.newKeyId()),
		sessionId: await g.mintSessionId(sessionSecret),
	};
}

/** The request's headers as the edge sees them under wrangler dev: the SDK client's, undici's, the proxy's. */
function requestHeaders(c: Credentials): Record<string, string> {
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
function streamOf(...chunks: Uint8Array[]): ReadableStream<Uint8Array> {
	return new ReadableStream<Uint8Array>({
		start(controller) {
			for (const chunk of chunks) controller.enqueue(chunk);
			controller.close();
		},
	});
}

/** Reads a stream to its end; the bytes, joined. */
async function drain(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
	return new Uint8Array(await new Response(stream).arrayBuffer());
}

function expect(condition: boolean, what: string): void {
	if (!condition) throw new Error(`bench-stages: ${what}`);
}

function sameBytes(output: unknown, expected: Uint8Array): boolean {
	return output instanceof Uint8Array && Buffer.from(output).equals(Buffer.from(expected));
}

/** Feeds the chunks to eventsource-parser as relaySse does; the number of events. */
function sseEvents(chunks: readonly Uint8Array[]): number {
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

function relayOptions(settings: GatewaySettings, isolated: boolean): RelayOptions {
	return {
		requestId: REQUEST_ID,
		maxEventBytes: settings.maxReplyBytes,
		isolation: isolated ? { keepNotification: () => true, onForeign: () => undefined } : undefined,
		onIncomplete: () => {
			throw new Error("bench-stages: the relay saw no response");
		},
		onOversize: () => {
			throw new Error("bench-stages: the relay found the event over the cap");
		},
		onDone: () => undefined,
	};
}

// ---------------------------------------------------------------------------------------------
// The stages

/** The edge's four WebCrypto stages, under the given credentials. */
function cryptoStages(g: Gateway, c: Credentials, section: "edge" | "workerd") {
	const syncWebCrypto = section === "workerd";
	const hex = (what: string) => (output: unknown) =>
		expect(typeof output === "string" && output.length === 64, `${what} gave no digest`);
	return {
		keyMac: stage({
			name: "key check: MAC (shape + HMAC-SHA256)",
			code: "src/registry/api-key.ts verifyApiKey",
			section,
			perCall: 1,
			webCrypto: true,
			syncWebCrypto,
			run: () => g.verifyApiKey(c.keySecret, c.apiKey),
			check: (id) => expect(typeof id === "string", "verifyApiKey refused a minted key"),
		}),
		keyDigest: stage({
			name: "key check: digest of the key (SHA-256)",
			code: "src/primitives/crypto.ts sha256Hex (authenticate.ts digestMatches)",
			section,
			perCall: 1,
			webCrypto: true,
			syncWebCrypto,
			run: () => g.sha256Hex(c.apiKey),
			check: hex("sha256Hex"),
		}),
		sessionCheck: stage({
			name: "session-ID check (HMAC-SHA256, cached key)",
			code: "src/edge/session-id.ts verifySessionId",
			section,
			perCall: 1,
			webCrypto: true,
			syncWebCrypto,
			run: () => g.verifySessionId(c.sessionSecret, c.sessionId),
			check: (ok) => expect(ok === true, "verifySessionId refused a minted ID"),
		}),
		sessionDigest: stage({
			name: "session digest (SHA-256)",
			code: "src/edge/session-id.ts sessionDigest",
			section,
			perCall: 1,
			webCrypto: true,
			syncWebCrypto,
			run: () => g.sessionDigest(c.sessionId),
			check: hex("sessionDigest"),
		}),
	};
}

function builtInStages(g: Gateway, c: Credentials, cSync: Credentials): Stage[] {
	const settings = g.settingsFrom(ENV);
	const headers = requestHeaders(c);
	const request = () => new Request(URL_TEXT, { method: "POST", headers, body: BODY });
	const shared = request();
	const message = g.parseClientMessage(BODY).message;
	const sseHeaders = { "content-type": "text/event-stream", "cache-control": "no-cache" };
	const edgeCrypto = cryptoStages(g, c, "edge");
	const workerdCrypto = cryptoStages(g, cSync, "workerd");
	// The key MAC stand-in: a raw HMAC-SHA256 sign + compare of the key's 90 bytes.
	const keyBody = encoder.encode(c.apiKey.slice(0, c.apiKey.lastIndexOf(".")));
	const macKey = crypto.subtle.importKey("raw", encoder.encode(c.keySecret), { name: "HMAC", hash: "SHA-256" }, false, [
		"sign",
	]);
	const macKeyObject = createSecretKey(encoder.encode(c.keySecret));
	const expectedMac = createHmac("sha256", macKeyObject).update(keyBody).digest();
	let coldSecrets = 0;
	// The shape of app.ts: a first middleware for every request, the /mcp/* one, then the route.
	const hono = new Hono();
	hono.use("*", async (_c, next) => {
		g.settingsFrom(ENV);
		await next();
	});
	// The CORS middleware runs only for requests with an Origin, which this one has not.
	hono.use("/mcp/*", (h, next) => (h.req.header("origin") === undefined ? next() : Promise.resolve()));
	hono.all("/mcp", () => new Response(null, { status: 202 }));
	hono.all("/mcp/:name", (h) => new Response(h.req.param("name"), { status: 202 }));

	return [
		// The edge Worker, in the order of app.ts, mcp-routes.ts and authenticate.ts.
		stage({
			name: "settings (cached per env object)",
			code: "src/config.ts settingsFrom",
			section: "edge",
			perCall: 2,
			run: () => g.settingsFrom(ENV),
		}),
		stage({
			name: "header check: Host",
			code: "src/edge/transport-checks.ts checkHost",
			section: "edge",
			perCall: 1,
			run: () => g.checkHost(shared, settings),
		}),
		stage({
			name: "header check: Origin (none sent)",
			code: "src/edge/transport-checks.ts checkOrigin",
			section: "edge",
			perCall: 1,
			run: () => g.checkOrigin(shared, settings),
		}),
		stage({
			name: "key check: Bearer token",
			code: "src/edge/bearer.ts bearerToken",
			section: "edge",
			perCall: 1,
			run: () => g.bearerToken(shared),
			check: (token) => expect(token === c.apiKey, "bearerToken did not find the key"),
		}),
		edgeCrypto.keyMac,
		edgeCrypto.keyDigest,
		stage({
			name: "header check: MCP-Protocol-Version",
			code: "src/edge/transport-checks.ts checkProtocolVersion",
			section: "edge",
			perCall: 1,
			run: () => g.checkProtocolVersion(shared),
		}),
		stage({
			name: "header check: Accept, Content-Type",
			code: "src/edge/transport-checks.ts checkPostHeaders",
			section: "edge",
			perCall: 1,
			run: () => g.checkPostHeaders(shared),
		}),
		stage({
			name: "body: read the request body",
			code: "src/edge/transport-checks.ts readBodyWithin",
			section: "edge",
			perCall: 1,
			prepare: request,
			run: (r) => g.readBodyWithin(r, settings.maxBodyBytes),
			check: (text) => expect(text === BODY, "readBodyWithin read something else"),
		}),
		stage({
			name: "body: parse + validate the message",
			code: "src/mcp/jsonrpc.ts parseClientMessage",
			section: "edge",
			perCall: 1,
			run: () => g.parseClientMessage(BODY),
			check: (parsed) => expect((parsed as { kind?: unknown }).kind === "request", "not parsed as a request"),
		}),
		edgeCrypto.sessionCheck,
		edgeCrypto.sessionDigest,

		// The SessionDO, for a transparent session (upstream-calls.ts, upstream-connection.ts).
		stage({
			name: "body: normalize the outgoing message",
			code: "src/mcp/outgoing.ts normalizeOutgoing",
			section: "session",
			perCall: 1,
			run: () => g.normalizeOutgoing(message),
		}),
		stage({
			name: "call deadline: start + clear",
			code: "src/upstream/deadline.ts startDeadline",
			section: "session",
			perCall: 1,
			run: () => g.startDeadline(60_000).clear(),
		}),
		stage({
			name: "upstream request: headers + JSON body",
			code: "replica of UpstreamConnection.send's own work (private)",
			section: "session",
			perCall: 1,
			run: () => {
				const upstreamHeaders = new Headers({ authorization: "Bearer upstream-credential" });
				upstreamHeaders.set("accept", "application/json, text/event-stream");
				upstreamHeaders.set("content-type", "application/json");
				upstreamHeaders.set("mcp-session-id", "3f0c1e2a-6a7b-4c9d-8e0f-1a2b3c4d5e6f");
				upstreamHeaders.set("mcp-protocol-version", "2025-11-25");
				return [upstreamHeaders, JSON.stringify(message)];
			},
		}),
		stage({
			name: "relay: SSE reply, transparent, read to the end",
			code: "src/mcp/sse-relay.ts relaySse",
			section: "session",
			perCall: 1,
			prepare: () => streamOf(SSE_REPLY),
			run: (body) => drain(g.relaySse(body, relayOptions(settings, false))),
			check: (bytes) => expect(sameBytes(bytes, SSE_REPLY), "the transparent relay changed the reply"),
		}),
		stage({
			name: "reply: new Response(stream, SSE headers)",
			code: "upstream-calls.ts relay: new Response",
			section: "session",
			perCall: 1,
			prepare: () => streamOf(SSE_REPLY),
			run: (body) => new Response(body, { headers: sseHeaders }),
		}),

		// The same WebCrypto stages, computed as workerd computes them.
		workerdCrypto.keyMac,
		workerdCrypto.keyDigest,
		workerdCrypto.sessionCheck,
		workerdCrypto.sessionDigest,

		// Other paths.
		stage({
			name: "relay: SSE reply, isolated (aggregate), read to the end",
			code: "src/mcp/sse-relay.ts relaySse with isolation",
			section: "other",
			perCall: 0,
			prepare: () => streamOf(SSE_REPLY),
			run: (body) => drain(g.relaySse(body, relayOptions(settings, true))),
			check: (bytes) => {
				const text = new TextDecoder().decode(bytes as Uint8Array);
				expect(text.includes(`"id":${REQUEST_ID}`) && text.endsWith("\n\n"), "the isolated relay dropped the reply");
			},
		}),
		stage({
			name: `relay: 64 KiB SSE reply (${BLOB_CHUNKS.length} chunks), transparent`,
			code: "src/mcp/sse-relay.ts relaySse (the benchmark's blob call)",
			section: "other",
			perCall: 0,
			prepare: () => streamOf(...BLOB_CHUNKS),
			run: (body) => drain(g.relaySse(body, relayOptions(settings, false))),
			check: (bytes) => expect(sameBytes(bytes, BLOB_REPLY), "the relay changed the 64 KiB reply"),
		}),
		stage({
			name: "session ID: mint (initialize)",
			code: "src/edge/session-id.ts mintSessionId",
			section: "other",
			perCall: 0,
			webCrypto: true,
			run: () => g.mintSessionId(c.sessionSecret),
		}),

		// Parts and references.
		stage({
			name: "key MAC check (HMAC-SHA256)",
			code: "stand-in: crypto.subtle.sign + timingSafeEqual of the key's 90 bytes",
			section: "reference",
			perCall: 0,
			webCrypto: true,
			run: async () =>
				timingSafeEqual(new Uint8Array(await crypto.subtle.sign("HMAC", await macKey, keyBody)), expectedMac),
			check: (ok) => expect(ok === true, "the stand-in MAC did not match"),
		}),
		stage({
			name: "HMAC-SHA256 of the key (node:crypto, sync)",
			code: "createHmac with a key object made once, + timingSafeEqual",
			section: "reference",
			perCall: 0,
			run: () => timingSafeEqual(createHmac("sha256", macKeyObject).update(keyBody).digest(), expectedMac),
			check: (ok) => expect(ok === true, "the node:crypto MAC did not match"),
		}),
		stage({
			name: "SHA-256 of the session ID (WebCrypto alone)",
			code: "crypto.subtle.digest",
			section: "reference",
			perCall: 0,
			webCrypto: true,
			run: () => crypto.subtle.digest("SHA-256", encoder.encode(c.sessionId)),
		}),
		stage({
			name: "SHA-256 of the session ID (node:crypto, sync)",
			code: "createHash: the hashing itself",
			section: "reference",
			perCall: 0,
			run: () => createHash("sha256").update(c.sessionId).digest(),
		}),
		stage({
			name: "session-ID check, first use of a secret",
			code: "verifySessionId: importKey + HMAC (the per-secret key cache saves this)",
			section: "reference",
			perCall: 0,
			webCrypto: true,
			maxIterations: 2_000,
			// A new secret each time: the MAC is computed under a key not yet imported (and does not match).
			prepare: () => secret(`cold ${coldSecrets++}`),
			run: (coldSecret) => g.verifySessionId(coldSecret, c.sessionId),
			check: (ok) => expect(ok === false, "an ID verified under another secret"),
		}),
		stage({
			name: "JSON.parse of the request body",
			code: "part of parseClientMessage",
			section: "reference",
			perCall: 0,
			run: () => JSON.parse(BODY),
		}),
		stage({
			name: "parse + validate the reply event's data",
			code: "src/mcp/jsonrpc.ts parseJsonRpcMessage (part of relaySse)",
			section: "reference",
			perCall: 0,
			run: () => g.parseJsonRpcMessage(EVENT_DATA),
			check: (parsed) => expect(parsed !== null && "result" in (parsed as object), "the reply did not parse"),
		}),
		stage({
			name: "JSON.parse of the reply event's data",
			code: "part of parseJsonRpcMessage",
			section: "reference",
			perCall: 0,
			run: () => JSON.parse(EVENT_DATA),
		}),
		stage({
			name: "parse + validate the 64 KiB reply's data",
			code: "src/mcp/jsonrpc.ts parseJsonRpcMessage (part of the 64 KiB relay)",
			section: "reference",
			perCall: 0,
			run: () => g.parseJsonRpcMessage(BLOB_DATA),
			check: (parsed) => expect(parsed !== null && "result" in (parsed as object), "the 64 KiB reply did not parse"),
		}),
		stage({
			name: "JSON.parse of the 64 KiB reply's data",
			code: "part of parseJsonRpcMessage",
			section: "reference",
			perCall: 0,
			run: () => JSON.parse(BLOB_DATA),
		}),
		stage({
			name: "SSE parse of the 64 KiB reply (eventsource-parser)",
			code: "createParser + TextDecoder + feed, chunk by chunk (part of the 64 KiB relay)",
			section: "reference",
			perCall: 0,
			run: () => sseEvents(BLOB_CHUNKS),
			check: (events) => expect(events === 1, "the SSE parser did not find one event in the 64 KiB reply"),
		}),
		stage({
			name: "event-end scan of the 64 KiB reply's chunks",
			code: "src/mcp/sse.ts afterLastEvent, chunk by chunk (relaySse's cut)",
			section: "reference",
			perCall: 0,
			run: () => {
				let cut = 0;
				for (let i = 0; i < BLOB_CHUNKS.length; i++) {
					const chunk = BLOB_CHUNKS[i] as Uint8Array;
					cut = g.afterLastEvent(chunk, BLOB_CHUNKS[i - 1]);
				}
				return cut;
			},
			check: (cut) => expect(cut === BLOB_CHUNKS.at(-1)?.byteLength, "the scan missed the event's end"),
		}),
		stage({
			name: "event size cap and cut over the 64 KiB reply's chunks",
			code: "src/mcp/sse.ts EventSizeLimit.add (relaySse: one scan for the cap and the cut)",
			section: "reference",
			perCall: 0,
			run: () => {
				const limit = new g.EventSizeLimit(settings.maxReplyBytes);
				return BLOB_CHUNKS.every((chunk) => limit.add(chunk) >= 0);
			},
			check: (ok) => expect(ok === true, "the cap refused the 64 KiB reply"),
		}),
		stage({
			name: "SSE parse of the reply (eventsource-parser)",
			code: "createParser + TextDecoder + feed (part of relaySse)",
			section: "reference",
			perCall: 0,
			run: () => sseEvents([SSE_REPLY]),
			check: (events) => expect(events === 1, "the SSE parser did not find one event"),
		}),
		stage({
			name: "pass-through: one-chunk stream read to the end",
			code: "a ReadableStream alone: what any relay costs at least",
			section: "reference",
			perCall: 0,
			prepare: () => streamOf(SSE_REPLY),
			run: (body) => drain(body),
		}),
		stage({
			name: "pass-through with completion, read to the end",
			code: "src/session/streams/stream-completion.ts withCompletion",
			section: "reference",
			perCall: 0,
			prepare: () => streamOf(SSE_REPLY),
			run: (body) => drain(g.withCompletion(body, () => undefined)),
			check: (bytes) => expect(sameBytes(bytes, SSE_REPLY), "withCompletion changed the reply"),
		}),
		stage({
			name: "new Request (POST, 14 headers, body)",
			code: "what the runtime builds for the edge",
			section: "reference",
			perCall: 0,
			run: request,
		}),
		stage({
			name: "structuredClone of the RPC arguments",
			code: "scope + message, as the DO RPC serializes them (an approximation)",
			section: "reference",
			perCall: 0,
			run: () =>
				structuredClone({
					scope: { keyId: "key_abcdefghijkl", userPath: "/", endpoint: "/mcp/bench" },
					input: { kind: "request", message },
				}),
		}),
		stage({
			name: "Hono: routing + two middlewares, tiny handler",
			code: "replica of app.ts's shape (the real app needs Workers bindings)",
			section: "reference",
			perCall: 0,
			prepare: request,
			run: (r) => hono.fetch(r, ENV),
			check: async (response) => expect((await (response as Response).text()) === "bench", "Hono did not route"),
		}),
		stage({
			name: "settings, uncached (a new env object)",
			code: "src/config.ts settingsFrom: the zod parse a cache miss costs",
			section: "reference",
			perCall: 0,
			prepare: () => ({ ...ENV }),
			run: (env) => g.settingsFrom(env),
		}),
		stage({
			name: "harness: empty sync operation",
			code: "timer overhead per operation",
			section: "reference",
			perCall: 0,
			run: () => undefined,
		}),
		stage({
			name: "harness: empty async operation",
			code: "an await of a resolved promise",
			section: "reference",
			perCall: 0,
			run: () => Promise.resolve(),
		}),
	];
}

// ---------------------------------------------------------------------------------------------
// Measuring

interface Budget {
	warmupMs: number;
	measureMs: number;
	maxIterations: number;
}

const FULL: Budget = { warmupMs: 40, measureMs: 140, maxIterations: 2_000_000 };
const QUICK: Budget = { warmupMs: 6, measureMs: 18, maxIterations: 200_000 };
/** A timed sample lasts at least this long (ns): cheap operations are timed in batches. */
const MIN_SAMPLE_NS = 10_000;
const MAX_BATCH = 1_000;
/** At least this many samples per stage, however slow. */
const MIN_SAMPLES = 10;

function isPromise(value: unknown): value is Promise<unknown> {
	return typeof (value as { then?: unknown } | null)?.then === "function";
}

/** Runs `count` operations on fresh inputs; returns the ns they took (inputs are made before the clock starts). */
async function runBatch(s: Stage, count: number, async: boolean): Promise<number> {
	const inputs: unknown[] = new Array(count);
	for (let i = 0; i < count; i++) inputs[i] = s.prepare();
	let sink: unknown;
	const start = process.hrtime.bigint();
	if (async) {
		for (let i = 0; i < count; i++) sink = await s.run(inputs[i]);
	} else {
		for (let i = 0; i < count; i++) sink = s.run(inputs[i]);
	}
	const elapsed = Number(process.hrtime.bigint() - start);
	// Keeps the last result observable, so that no operation can be optimized away.
	if (sink === inputs) throw new Error("bench-stages: unreachable");
	return elapsed;
}

function nearestRank(sorted: readonly number[], p: number): number {
	if (sorted.length === 0) return Number.NaN;
	return sorted[Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length))) - 1] ?? Number.NaN;
}

async function measureOne(s: Stage, budget: Budget): Promise<StageResult> {
	// Once, checked: the stage must measure the path it names, not an error.
	let output = s.run(s.prepare());
	const async = isPromise(output);
	if (async) output = await output;
	await s.check(output);

	const maxIterations = Math.min(budget.maxIterations, s.maxIterations ?? Number.POSITIVE_INFINITY);
	// Warm-up, in growing batches, which also sizes the timed batches.
	let warmOps = 0;
	let warmNs = 0;
	const warmEnd = performance.now() + budget.warmupMs;
	while (performance.now() < warmEnd && warmOps < maxIterations / 4) {
		const count = Math.min(64, Math.max(1, Math.ceil(warmOps / 4)));
		warmNs += await runBatch(s, count, async);
		warmOps += count;
	}
	const perOpNs = warmNs / Math.max(1, warmOps);
	const batch = Math.max(1, Math.min(MAX_BATCH, Math.ceil(MIN_SAMPLE_NS / Math.max(1, perOpNs))));

	const samples: number[] = [];
	let iterations = 0;
	let totalNs = 0;
	const end = performance.now() + budget.measureMs;
	while ((performance.now() < end || samples.length < MIN_SAMPLES) && iterations + batch <= maxIterations) {
		const ns = await runBatch(s, batch, async);
		samples.push(ns / batch);
		totalNs += ns;
		iterations += batch;
	}
	samples.sort((a, b) => a - b);
	return {
		name: s.name,
		code: s.code,
		section: s.section,
		perCall: s.perCall,
		webCrypto: s.webCrypto,
		iterations,
		batch,
		meanUs: totalNs / Math.max(1, iterations) / 1000,
		p50Us: nearestRank(samples, 50) / 1000,
		p99Us: nearestRank(samples, 99) / 1000,
	};
}

/** Measures every stage (or those matching `filter`), one after another. */
export async function measureStages(options: StageOptions = {}): Promise<StageResult[]> {
	const budget = options.quick ? QUICK : FULL;
	installTimingSafeEqual();
	const g = await loadGateway();
	const c = await credentials(g, ENV.KEY_SECRET, ENV.SESSION_SECRET);
	// Other secrets: src/primitives/crypto.ts caches each secret's key, and these are the synchronous WebCrypto's.
	const cSync = await withSyncWebCrypto(() => credentials(g, secret("key, sync"), secret("session, sync")));
	const all = [...builtInStages(g, c, cSync), ...(options.extraStages ?? [])];
	const filter = options.filter?.toLowerCase();
	const chosen = filter
		? all.filter((s) => s.name.toLowerCase().includes(filter) || s.code.toLowerCase().includes(filter))
		: all;
	const results: StageResult[] = [];
	for (const s of chosen) {
		const result = s.syncWebCrypto ? await withSyncWebCrypto(() => measureOne(s, budget)) : await measureOne(s, budget);
		results.push(result);
		options.onStage?.(result);
	}
	return results;
}

/** µs of plain code on one transparent tools/call: Σ mean × perCall over the edge and session stages. */
export function perCallTotalUs(results: readonly StageResult[], section?: "edge" | "session"): number {
	return results
		.filter((r) => (section ? r.section === section : r.section === "edge" || r.section === "session"))
		.reduce((sum, r) => sum + r.meanUs * r.perCall, 0);
}

/**
 * The same sum with each WebCrypto stage taken from the `workerd` section (the
 * synchronous WebCrypto): closer to what workerd spends. NaN when that section
 * was not measured (a filtered run).
 */
export function workerdEstimateUs(results: readonly StageResult[]): number {
	const path = results.filter((r) => r.section === "edge" || r.section === "session");
	const synchronous = results.filter((r) => r.section === "workerd");
	if (path.length === 0 || synchronous.length < path.filter((r) => r.webCrypto).length) return Number.NaN;
	return (
		path.filter((r) => !r.webCrypto).reduce((sum, r) => sum + r.meanUs * r.perCall, 0) +
		synchronous.reduce((sum, r) => sum + r.meanUs * r.perCall, 0)
	);
}

/** A µs figure with a precision that suits its size. */
export function formatUs(value: number): string {
	if (!Number.isFinite(value)) return "n/a";
	if (value < 1) return value.toFixed(3);
	if (value < 10) return value.toFixed(2);
	if (value < 100) return value.toFixed(1);
	return value.toFixed(0);
}

// ---------------------------------------------------------------------------------------------
// Run on its own

function table(results: readonly StageResult[]): string {
	const rows = [["stage", "per call", "iterations", "mean µs", "p50 µs", "p99 µs", "code"]];
	let section: StageSection | undefined;
	for (const r of results) {
		if (r.section !== section) {
			section = r.section;
			rows.push([`-- ${SECTION_LABELS[section]}`, "", "", "", "", "", ""]);
		}
		rows.push([
			r.name,
			r.perCall > 0 ? `${r.perCall}×` : "–",
			r.iterations.toLocaleString("en-US"),
			formatUs(r.meanUs),
			formatUs(r.p50Us),
			formatUs(r.p99Us),
			r.code,
		]);
	}
	const measured = rows.filter((row) => !row[0]?.startsWith("-- "));
	const widths = rows[0]?.map((_, column) => Math.max(...measured.map((row) => (row[column] ?? "").length))) ?? [];
	return rows
		.map((row) =>
			row
				.map((cell, column) => {
					if (cell.startsWith("-- ")) return cell;
					const width = widths[column] ?? 0;
					return column >= 1 && column <= 5 ? cell.padStart(width) : cell.padEnd(width);
				})
				.join("  ")
				.trimEnd(),
		)
		.join("\n");
}

if (import.meta.main) {
	const args = process.argv.slice(2);
	const filterAt = args.indexOf("--filter");
	const filter = filterAt === -1 ? undefined : args[filterAt + 1];
	const unknown = args.filter(
		(arg, i) => !["--quick", "--json", "--filter"].includes(arg) && (filterAt === -1 || i !== filterAt + 1),
	);
	if (unknown.length > 0 || (filterAt !== -1 && filter === undefined)) {
		console.error("Usage: node scripts/bench-stages.ts [--quick] [--json] [--filter <text>]");
		process.exit(2);
	}
	const started = performance.now();
	const results = await measureStages({ quick: args.includes("--quick"), filter });
	if (args.includes("--json")) {
		console.log(JSON.stringify(results, null, 2));
	} else {
		console.log(table(results));
		if (!results.some((r) => r.perCall > 0)) {
			console.log(`\nNode ${process.version}; ${((performance.now() - started) / 1000).toFixed(1)} s.`);
			process.exit(0);
		}
		console.log(
			`\nPlain code on one transparent tools/call (Σ mean × per call): ${formatUs(perCallTotalUs(results))} µs` +
				` (edge ${formatUs(perCallTotalUs(results, "edge"))} µs, session ${formatUs(perCallTotalUs(results, "session"))} µs);` +
				` with WebCrypto computed synchronously, as workerd does: ${formatUs(workerdEstimateUs(results))} µs.` +
				`\nNode ${process.version}; ${((performance.now() - started) / 1000).toFixed(1)} s.`,
		);
	}
}
