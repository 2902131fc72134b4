/**
 * The per-stage microbenchmark's built-in stages, section by section: the edge
 * Worker and the SessionDO on one transparent `tools/call` (in the order the
 * request meets them), the same WebCrypto stages computed as workerd does,
 * other paths, and the parts and references that put the figures in scale.
 */

import { createHash, createHmac, createSecretKey, timingSafeEqual } from "node:crypto";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { Hono } from "hono";
import { type Stage, stage } from "./stage.ts";
import {
	BLOB_CHUNKS,
	BLOB_DATA,
	BLOB_REPLY,
	BODY,
	type Credentials,
	drain,
	ENV,
	EVENT_DATA,
	encoder,
	expect,
	relayOptions,
	requestHeaders,
	SSE_REPLY,
	sameBytes,
	secret,
	sseEvents,
	streamOf,
	URL_TEXT,
} from "./stage-inputs.ts";
import type { Gateway, GatewaySettings, PolicyRecord, PolicyRequest } from "./stages-gateway.ts";

/** What the stages of one run share: the gateway's functions, the request and what the edge made of it. */
interface Fixture {
	g: Gateway;
	c: Credentials;
	settings: GatewaySettings;
	/** A fresh request, its body unread. */
	request: () => Request;
	/** One request the header checks read again and again. */
	shared: Request;
	message: JSONRPCMessage;
}

function fixtureOf(g: Gateway, c: Credentials): Fixture {
	const headers = requestHeaders(c);
	const request = () => new Request(URL_TEXT, { method: "POST", headers, body: BODY });
	return {
		g,
		c,
		settings: g.settingsFrom(ENV),
		request,
		shared: request(),
		message: g.parseClientMessage(BODY).message,
	};
}

/** Every built-in stage, in the report's order; `cSync` are credentials minted under the synchronous WebCrypto. */
export function builtInStages(g: Gateway, c: Credentials, cSync: Credentials): Stage[] {
	const f = fixtureOf(g, c);
	const workerdCrypto = cryptoStages(g, cSync, "workerd");
	return [
		...edgeStages(f, cryptoStages(g, c, "edge")),
		...sessionStages(f),
		// The same WebCrypto stages, computed as workerd computes them.
		workerdCrypto.keyMac,
		workerdCrypto.keyDigest,
		workerdCrypto.sessionCheck,
		workerdCrypto.sessionDigest,
		...otherStages(f),
		...cryptoReferences(f),
		...parseReferences(f),
		...runtimeReferences(f),
		...policyReferences(f),
	];
}

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
			code: "src/edge/2025-11-25/session-id.ts verifySessionId",
			section,
			perCall: 1,
			webCrypto: true,
			syncWebCrypto,
			run: () => g.verifySessionId(c.sessionSecret, c.sessionId),
			check: (ok) => expect(ok === true, "verifySessionId refused a minted ID"),
		}),
		sessionDigest: stage({
			name: "session digest (SHA-256)",
			code: "src/edge/2025-11-25/session-id.ts sessionDigest",
			section,
			perCall: 1,
			webCrypto: true,
			syncWebCrypto,
			run: () => g.sessionDigest(c.sessionId),
			check: hex("sessionDigest"),
		}),
	};
}

/** The edge Worker, in the order of app.ts, mcp-routes.ts and authenticate.ts. */
function edgeStages({ g, c, settings, request, shared }: Fixture, webCrypto: ReturnType<typeof cryptoStages>): Stage[] {
	return [
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
		webCrypto.keyMac,
		webCrypto.keyDigest,
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
			code: "src/mcp/client-message.ts parseClientMessage",
			section: "edge",
			perCall: 1,
			run: () => g.parseClientMessage(BODY),
			check: (parsed) => expect((parsed as { kind?: unknown }).kind === "request", "not parsed as a request"),
		}),
		webCrypto.sessionCheck,
		webCrypto.sessionDigest,
	];
}

/** The SessionDO, for a transparent session (upstream-calls.ts, upstream-connection.ts). */
function sessionStages({ g, settings, message }: Fixture): Stage[] {
	const sseHeaders = { "content-type": "text/event-stream", "cache-control": "no-cache" };
	return [
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
			run: (body) => drain(g.relaySse(body, relayOptions(settings))),
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
	];
}

/** Other paths: a 64 KiB reply, initialize. */
function otherStages({ g, c, settings }: Fixture): Stage[] {
	return [
		stage({
			name: `relay: 64 KiB SSE reply (${BLOB_CHUNKS.length} chunks), transparent`,
			code: "src/mcp/sse-relay.ts relaySse (the benchmark's blob call)",
			section: "other",
			perCall: 0,
			prepare: () => streamOf(...BLOB_CHUNKS),
			run: (body) => drain(g.relaySse(body, relayOptions(settings))),
			check: (bytes) => expect(sameBytes(bytes, BLOB_REPLY), "the relay changed the 64 KiB reply"),
		}),
		stage({
			name: "session ID: mint (initialize)",
			code: "src/edge/2025-11-25/session-id.ts mintSessionId",
			section: "other",
			perCall: 0,
			webCrypto: true,
			run: () => g.mintSessionId(c.sessionSecret),
		}),
	];
}

/** Parts and references: the WebCrypto work of the key and session checks, alone and in node:crypto. */
function cryptoReferences({ g, c }: Fixture): Stage[] {
	// The key MAC stand-in: a raw HMAC-SHA256 sign + compare of the key's 90 bytes.
	const keyBody = encoder.encode(c.apiKey.slice(0, c.apiKey.lastIndexOf(".")));
	const macKey = crypto.subtle.importKey("raw", encoder.encode(c.keySecret), { name: "HMAC", hash: "SHA-256" }, false, [
		"sign",
	]);
	const macKeyObject = createSecretKey(encoder.encode(c.keySecret));
	const expectedMac = createHmac("sha256", macKeyObject).update(keyBody).digest();
	let coldSecrets = 0;
	return [
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
	];
}

/** Parts and references: parsing the request and the replies, and the SSE scans of the relay. */
function parseReferences({ g, settings }: Fixture): Stage[] {
	return [
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
	];
}

/** Parts and references: streams, Request, the RPC's copy, Hono and the harness itself. */
function runtimeReferences({ g, request, message }: Fixture): Stage[] {
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

/** The stages of one policy's verdict, by what they hold (the report gives them as evaluations per second). */
export const POLICY_STAGES = {
	none: "policy verdict, no policies",
	one: "policy verdict, one policy (applies)",
	elsewhere: "policy verdict, one policy of another server",
} as const;

/** A policy of the kind: a name rule and a principal rule. */
export const ONE_POLICY_EXPRESSION = '!tool.name.startsWith("delete_") && principal.kind == "key"';

/**
 * A tool policy's verdict on one call, as the SessionDO asks it where a policy
 * governs the server: one compiled allow policy that applies, against none.
 * Compiled once, outside the timing, as the gateway compiles a published list
 * once per isolate.
 */
function policyReferences({ g }: Fixture): Stage[] {
	const record = (name: string, servers: string[]): PolicyRecord => ({
		name,
		expression: ONE_POLICY_EXPRESSION,
		effect: "allow",
		applies: { servers },
		priority: 100,
		createdAt: 0,
		updatedAt: 0,
	});
	const request: PolicyRequest = {
		principal: {
			kind: "key",
			id: "key_AAAAAAAAAAAA",
			subject: null,
			email: null,
			groups: [],
			rule: null,
			keyName: "bench",
		},
		server: "bench",
		virtualServer: null,
		tool: { name: "echo", realName: "echo", annotations: { readOnlyHint: true } },
		arguments: { text: "bench" },
		method: "tools/call",
		now: Date.now(),
	};
	const allowed = (output: unknown) =>
		expect((output as { allowed?: unknown }).allowed === true, "the policy verdict was not an allow");
	const cases = [
		{ name: POLICY_STAGES.none, code: "policyVerdict over compilePolicies([])", records: [] },
		{
			name: POLICY_STAGES.one,
			code: `policyVerdict: one allow, \`${ONE_POLICY_EXPRESSION}\``,
			records: [record("one", ["bench"])],
		},
		{
			name: POLICY_STAGES.elsewhere,
			code: "policyVerdict: the same policy, its `applies` names another server",
			records: [record("other", ["elsewhere"])],
		},
	];
	return cases.map(({ name, code, records }) => {
		const compiled = g.compilePolicies(records);
		return stage({
			name,
			code,
			section: "reference",
			perCall: 0,
			// A CEL program settles after some 100,000 evaluations (about 0.7 s here); a SessionDO's isolate is long warm.
			warmupScale: 25,
			run: () => g.policyVerdict(compiled, request),
			check: allowed,
		});
	});
}
