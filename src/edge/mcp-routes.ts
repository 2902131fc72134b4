import type { Context } from "hono";
import { limitKeyRate } from "../auth/rate-limits.ts";
import { type Settings, settingsFrom } from "../config.ts";
import type { Env } from "../env.ts";
import { classifyPost, requestIdOf } from "../mcp/2026-07-28/modern-request.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import { type ClientMessage, clientMessageOf, parseJsonBody, withoutNullMeta } from "../mcp/jsonrpc.ts";
import { namesModernVersion } from "../mcp/protocol-version.ts";
import { isolateCache, keepFound } from "../primitives/expiring-map.ts";
import type { WaitUntil } from "../primitives/wait-until.ts";
import { keyMayUseServer, keyMayUseVirtualServer } from "../registry/access.ts";
import { type Disclosure, disclosureOf } from "../registry/disclosure-schema.ts";
import { keySessions, openAdmitted } from "../registry/key-sessions-do.ts";
import type { PromptShaping, ResourceShaping } from "../registry/offer-shaping-schema.ts";
import type { RegistryReader } from "../registry/registry-reader.ts";
import { registryUnavailable } from "../registry/registry-unavailable.ts";
import { type ApiKeyRecord, type ResolvedEndpoint, SERVER_NAME, type ServerRecord } from "../registry/schemas.ts";
import type { EndpointTools } from "../registry/tool-shaping-schema.ts";
import {
	type EndpointCheck,
	type Member,
	memberOf,
	type OpenSessionInput,
	type SessionScope,
} from "../session/session-do.ts";
import { ServerOperation } from "../telemetry/server-operation.ts";
import { telemetryFor } from "../telemetry/telemetry.ts";
import { type Authenticated, authenticate } from "./authenticate.ts";
import { serveListen } from "./listen.ts";
import { serveModern } from "./modern-routes.ts";
import { mintSessionId, sessionDigest } from "./session-id.ts";
import { requireSessionSecret, sessionStub, verifiedSessionStub } from "./session-routing.ts";
import { toolCallScope, toolCallsAccounted } from "./tool-call-scope.ts";
import {
	checkGetHeaders,
	checkOrigin,
	checkPostHeaders,
	checkProtocolVersion,
	readBodyWithin,
} from "./transport-checks.ts";

/** The edge's context: the Worker env, and the registry's read path chosen for this request. */
export type EdgeContext = { Bindings: Env; Variables: { reader: RegistryReader; waitUntil: WaitUntil } };
type AppContext = Context<EdgeContext>;

const ALLOWED_METHODS = "GET, POST, DELETE";

/**
 * Endpoint records and the server list, per isolate for a few seconds: a
 * 2026-07-28 client resolves its endpoint on every request, and would
 * otherwise pay a KV read each time. A deleted or changed endpoint reaches
 * new requests within this TTL (plus KV's own staleness), as a revoked key does.
 */
const endpoints = isolateCache<ResolvedEndpoint | null>({ maxEntries: 1_000 });
const serverLists = isolateCache<ServerRecord[]>({ maxEntries: 1 });

/** An endpoint as the session will be bound to it. */
interface EndpointPlan {
	mode: OpenSessionInput["mode"];
	endpointCheck: EndpointCheck;
	members: Member[];
	/** A virtual server's choice of its members' tools. */
	endpointTools?: EndpointTools | null;
	/** A virtual server's choice of its members' prompts and resources. */
	endpointPrompts?: PromptShaping | null;
	endpointResources?: ResourceShaping | null;
	/** How the aggregate discloses its tools (the key's or rule's for `/mcp`, the virtual server's). */
	disclosure?: Disclosure;
}

/**
 * `POST|GET|DELETE /mcp` and `/mcp/:name`. Every check that can fail without
 * touching a session runs first, in this order: method, Origin, API key, then
 * the method's own checks. A POST's body says its era (the SDK's classifier):
 * a 2026-07-28 request is validated and served without a session id (see
 * modern-routes); a 2025 request has its version header checked and goes to
 * its session. The endpoint is resolved at initialize (2025) or per request
 * (2026-07-28); later 2025 requests are bound to it by the session.
 */
export async function handleMcpEndpoint(c: AppContext): Promise<Response> {
	const request = c.req.raw;
	const env = c.env;
	const settings = settingsFrom(env);
	const method = request.method;
	if (method !== "POST" && method !== "GET" && method !== "DELETE") {
		throw new GatewayError("method_not_allowed", `Method Not Allowed: use ${ALLOWED_METHODS}.`, {
			headers: { allow: ALLOWED_METHODS },
		});
	}
	checkOrigin(request, settings);
	const reader = c.get("reader");
	const waitUntil = c.get("waitUntil");
	const { key, caller, subjectToken } = await admitted(request, env, settings, reader, waitUntil);
	// A long-lived request (a 2026-07-28 listen) is admitted again at each of its windows, as itself.
	const admitAgain = async () => {
		const again = await admitted(request, env, settings, reader, waitUntil);
		if (again.key.id !== key.id) {
			throw new GatewayError("unauthenticated", "The credential no longer stands for who opened this stream.");
		}
	};

	const name = c.req.param("name");
	if (name !== undefined && !SERVER_NAME.test(name)) throw unknownEndpoint(name);
	const scope: SessionScope = {
		keyId: key.id,
		userPath: key.userPath,
		endpoint: name ? `/mcp/${name}` : "/mcp",
		calling: { caller, origin: new URL(request.url).origin, subjectToken },
	};
	const sessionId = request.headers.get("mcp-session-id");

	if (method !== "POST" && sentByModernClient(request)) {
		throw new GatewayError(
			"method_not_allowed",
			"Method Not Allowed: MCP 2026-07-28 has no GET or DELETE; send each request as a POST (subscriptions/listen for change notifications).",
			{ headers: { allow: "POST" } },
		);
	}
	if (method !== "POST") checkProtocolVersion(request);
	if (method === "GET") {
		checkGetHeaders(request);
		const stub = await verifiedSessionStub(env, settings, sessionId);
		return serveListen(env, settings, stub, scope, request.headers.get("last-event-id"), waitUntil);
	}
	if (method === "DELETE") {
		return (await verifiedSessionStub(env, settings, sessionId)).end(scope);
	}

	const text = await readBodyWithin(request, settings.maxBodyBytes);
	let body: unknown;
	try {
		checkPostHeaders(request);
		// `_meta: null` means no metadata in either era; neither classifier nor schema should see it.
		body = withoutNullMeta(parseJsonBody(text));
	} catch (error) {
		// Even a refusal of the headers, or of a body nested too deeply, answers the request by its id when the body has one.
		if (error instanceof GatewayError) error.answering(requestIdOf(jsonOrNull(text)));
		throw error;
	}
	const ttlMs = settings.endpointCacheTtlMs;
	const plan = () => (name ? planNamedEndpoint(reader, key, name, ttlMs) : planAggregate(reader, key, request, ttlMs));
	// The request's server span (telemetry on) and tool_call event: from here to the end of its answer.
	const telemetry = telemetryFor(env);
	const operation = ServerOperation.of({
		telemetry,
		body,
		headers: request.headers,
		text,
		scope: () => toolCallScope(env, caller, scope.endpoint, name, waitUntil),
		accounted: toolCallsAccounted(env),
		waitUntil,
	});
	const traced = operation !== null && telemetry.enabled;
	const observed = (response: Response) => (operation ? operation.answered(response) : response);
	try {
		const classified = classifyPost(request, body);
		if (classified.era === "modern") {
			operation?.classified("2026-07-28", "envelope" in classified ? classified.envelope.protocolVersion : null);
			// The body goes upstream as the client sent it, but for the trace keys of its `_meta` (see ServerOperation).
			const forwarded = traced ? JSON.stringify(body) : text;
			return observed(
				await serveModern(env, settings, key, scope, request, forwarded, classified, plan, waitUntil, admitAgain),
			);
		}
		checkProtocolVersion(request);
		const message = clientMessageOf(body);
		operation?.classified("2025", legacyVersionOf(request, message));
		if (message.kind !== "initialize") {
			if (traced && sessionId !== null) operation.inSession(await sessionDigest(sessionId));
			return observed(await (await verifiedSessionStub(env, settings, sessionId)).post(scope, message));
		}
		if (sessionId !== null) {
			throw new GatewayError(
				"bad_request",
				"Bad Request: initialize opens a new session and must not carry an Mcp-Session-Id header.",
			);
		}
		const opened = await openSession(env, settings, key, scope, message, await plan());
		const minted = opened.headers.get("mcp-session-id");
		if (traced && minted !== null) operation.inSession(await sessionDigest(minted));
		return observed(opened);
	} catch (error) {
		operation?.failed(error);
		// Whatever refused the request, the error answers it by its id when the body had one.
		if (error instanceof GatewayError) error.answering(requestIdOf(body));
		throw error;
	}
}

/** The MCP version a 2025 request speaks: its header, or at initialize the version it asks for. */
function legacyVersionOf(request: Request, message: ClientMessage): string | null {
	const header = request.headers.get("mcp-protocol-version");
	if (header) return header;
	const asked = message.kind === "initialize" ? message.params.protocolVersion : undefined;
	return typeof asked === "string" ? asked : null;
}

/** The key (or person) the request's credential stands for, counted against its rate limit; else 401 or 429. */
async function admitted(
	request: Request,
	env: Env,
	settings: Settings,
	reader: RegistryReader,
	waitUntil: WaitUntil,
): Promise<Authenticated> {
	const authenticated = await authenticate(request, env, settings, reader, waitUntil);
	limitKeyRate(env, settings, authenticated.key, waitUntil);
	return authenticated;
}

/** The body's JSON value, or null when it is not JSON (only to find the id an error answers). */
function jsonOrNull(text: string): unknown {
	try {
		return JSON.parse(text);
	} catch {
		return null;
	}
}

/** A GET or DELETE sent by a 2026-07-28 client (its version header names a modern revision). */
function sentByModernClient(request: Request): boolean {
	const header = request.headers.get("mcp-protocol-version")?.trim();
	return header !== undefined && namesModernVersion(header);
}

/**
 * Mints a session ID and opens the session in its Durable Object, after the
 * ledger of the key (or of the person, over all their clients) admitted it
 * (at most its cap of live sessions). A session that does not open gives its
 * place back at once.
 */
async function openSession(
	env: Env,
	settings: Settings,
	key: ApiKeyRecord,
	scope: SessionScope,
	message: Extract<ClientMessage, { kind: "initialize" }>,
	plan: EndpointPlan,
): Promise<Response> {
	const newSessionId = await mintSessionId(requireSessionSecret(settings));
	const stub = await sessionStub(env, newSessionId);
	const admission = {
		ledger: keySessions(env, key.id),
		place: stub.id.toString(),
		keyId: key.id,
		cap: key.maxSessions ?? settings.maxSessionsPerKey,
		refusal: {
			hint: " End a session (DELETE) or let one expire, then initialize again.",
			headers: { "retry-after": String(settings.rateLimitPeriodSeconds) },
		},
	};
	const answer = await openAdmitted(admission, async () => {
		// Destructured: the RPC stub types JSON-RPC payloads (open index signatures) as never.
		const { opened, reply } = await stub.open({ scope, request: message.message, params: message.params, ...plan });
		return { opened, result: Response.json(reply, { headers: opened ? { "mcp-session-id": newSessionId } : {} }) };
	});
	if (answer instanceof GatewayError) throw answer;
	return answer;
}

/** `/mcp/:name`: a server (transparent) or a virtual server (aggregate of its members). */
async function planNamedEndpoint(
	reader: RegistryReader,
	key: ApiKeyRecord,
	name: string,
	ttlMs: number,
): Promise<EndpointPlan> {
	const endpoint = await readRegistry(() =>
		endpoints.load(name, () => reader.endpoint(name), keepFound(ttlMs), reader),
	);
	if (endpoint?.kind === "server" && keyMayUseServer(key, name)) {
		return {
			mode: "transparent",
			endpointCheck: { kind: "server", name, generation: endpoint.server.generation },
			members: [memberOf(endpoint.server)],
		};
	}
	if (endpoint?.kind === "virtual" && keyMayUseVirtualServer(key, endpoint.virtualServer)) {
		return {
			mode: "aggregate",
			endpointCheck: { kind: "virtual", name, generation: endpoint.virtualServer.generation },
			members: endpoint.members.map(memberOf),
			endpointTools: endpoint.virtualServer.tools,
			endpointPrompts: endpoint.virtualServer.prompts,
			endpointResources: endpoint.virtualServer.resources,
			disclosure: disclosureOf(endpoint.virtualServer),
		};
	}
	// Absent and forbidden look the same, so an endpoint's existence is not revealed.
	throw unknownEndpoint(name);
}

/**
 * `/mcp`: every server the key may use, narrowed at initialize by
 * `X-MCP-Servers: a,b` (unknown names ignored; empty means all). The set is
 * fixed for the life of the session. A key whose list names no existing
 * server (only virtual servers, or servers deleted since) has no `/mcp`: a
 * virtual server it names is reached at its own endpoint and nowhere else.
 */
async function planAggregate(
	reader: RegistryReader,
	key: ApiKeyRecord,
	request: Request,
	ttlMs: number,
): Promise<EndpointPlan> {
	const wanted = (request.headers.get("x-mcp-servers") ?? "")
		.split(",")
		.map((part) => part.trim())
		.filter((part) => part !== "");
	const all = await readRegistry(() =>
		serverLists.load(
			"servers",
			() => reader.servers(),
			() => ttlMs,
			reader,
		),
	);
	const allowed = all.filter((server) => keyMayUseServer(key, server.name));
	if (key.servers !== null && allowed.length === 0) throw unknownEndpoint("/mcp");
	const servers = allowed.filter((server) => wanted.length === 0 || wanted.includes(server.name));
	return {
		mode: "aggregate",
		endpointCheck: { kind: "aggregate" },
		members: servers.map(memberOf),
		disclosure: disclosureOf(key),
	};
}

/** A read of the registry's read path; failing, it is a 503 naming nothing internal. */
async function readRegistry<T>(read: () => Promise<T>): Promise<T> {
	try {
		return await read();
	} catch (error) {
		throw registryUnavailable(error);
	}
}

function unknownEndpoint(name: string): GatewayError {
	return new GatewayError("not_found", `Not Found: there is no MCP endpoint '${name}' for this API key.`);
}
