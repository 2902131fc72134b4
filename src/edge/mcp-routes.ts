import { type InitializeMessage, parseJsonBody, withoutNullMeta } from "../mcp/client-message.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import { requestIdOf } from "../mcp/jsonrpc.ts";
import { INITIALIZE } from "../mcp/methods.ts";
import { classifyPost } from "../mcp/post-classification.ts";
import { namesModernVersion } from "../mcp/protocol-version.ts";
import { keySessions, openAdmitted } from "../registry/key-sessions-do.ts";
import { ServerOperation } from "../telemetry/server-operation.ts";
import { telemetryFor } from "../telemetry/telemetry.ts";
import { serveListen } from "./2025-11-25/listen.ts";
import { mintSessionId, sessionDigest, sessionStub, verifiedSessionStub } from "./2025-11-25/session-id.ts";
import { serveModern } from "./2026-07-28/routes.ts";
import { planEndpoint } from "./endpoint-plan.ts";
import type { McpContext } from "./request-context.ts";
import { requireSessionSecret } from "./session-routing.ts";
import { toolCallScope, toolCallsAccounted } from "./tool-call-scope.ts";
import { checkGetHeaders, checkPostHeaders, checkProtocolVersion, readBodyWithin } from "./transport-checks.ts";

/**
 * `POST|GET|DELETE /mcp` and `/mcp/:name`, once admitted (`admitMcpRequest`:
 * the method, the Origin, the credential, the endpoint's name), then the
 * method's own checks. A POST's body says its era (the SDK's classifier): a
 * 2026-07-28 request is validated and served without a session id (see
 * `2026-07-28/routes.ts`); a 2025 request has its version header checked and goes to
 * its session. The endpoint is resolved at initialize (2025) or per request
 * (2026-07-28); later 2025 requests are bound to it by the session.
 */
export async function handleMcpEndpoint(c: McpContext): Promise<Response> {
	const request = c.req.raw;
	const method = request.method;
	if (method === "POST") return servePost(c);
	if (sentByModernClient(request)) {
		throw new GatewayError(
			"method_not_allowed",
			"Method Not Allowed: MCP 2026-07-28 has no GET or DELETE; send each request as a POST (subscriptions/listen for change notifications).",
			{ headers: { allow: "POST" } },
		);
	}
	checkProtocolVersion(request);
	const sessionId = request.headers.get("mcp-session-id");
	if (method === "GET") {
		checkGetHeaders(request);
		return serveListen(c, await verifiedSessionStub(c.env, c.get("settings"), sessionId));
	}
	return (await verifiedSessionStub(c.env, c.get("settings"), sessionId)).end(c.get("scope"));
}

/**
 * A POST: its body read and parsed, its server operation set on the request
 * (from here to the end of its answer), then answered by its era.
 */
async function servePost(c: McpContext): Promise<Response> {
	const request = c.req.raw;
	const { env } = c;
	const text = await readBodyWithin(request, c.get("settings").maxBodyBytes);
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
	// The request's server span (telemetry on) and tool_call event: from here to the end of its answer.
	const telemetry = telemetryFor(env);
	const operation = ServerOperation.of({
		telemetry,
		body,
		headers: request.headers,
		text,
		scope: () => toolCallScope(c),
		accounted: toolCallsAccounted(env, c.get("settings")),
		waitUntil: c.get("waitUntil"),
	});
	c.set("operation", operation);
	try {
		const answer = await answerPost(c, body, text, operation !== null && telemetry.enabled);
		return operation ? operation.answered(answer) : answer;
	} catch (error) {
		operation?.failed(error);
		// Whatever refused the request, the error answers it by its id when the body had one.
		if (error instanceof GatewayError) error.answering(requestIdOf(body));
		throw error;
	}
}

/**
 * A POST's answer by its era: 2026-07-28 served without a session, 2025 by its session (initialize opens one).
 * `traced`: the request has a span (telemetry on), whose context the body now carries.
 */
async function answerPost(c: McpContext, body: unknown, text: string, traced: boolean): Promise<Response> {
	const operation = c.get("operation");
	const classified = classifyPost(c.req.raw, body, (era, version) =>
		operation?.classified(era === "modern" ? "2026-07-28" : "2025", version),
	);
	if (classified.era === "modern") {
		// The body goes upstream as the client sent it, but for the trace keys of its `_meta` (see ServerOperation).
		return serveModern(c, classified, traced ? JSON.stringify(body) : text);
	}
	const { message } = classified;
	const sessionId = c.req.raw.headers.get("mcp-session-id");
	if (message.kind !== "request" || message.method !== INITIALIZE) {
		if (traced && sessionId !== null) operation?.inSession(await sessionDigest(sessionId));
		return (await verifiedSessionStub(c.env, c.get("settings"), sessionId)).post(c.get("scope"), message);
	}
	if (sessionId !== null) {
		throw new GatewayError(
			"bad_request",
			"Bad Request: initialize opens a new session and must not carry an Mcp-Session-Id header.",
		);
	}
	const opened = await openSession(c, message);
	const minted = opened.headers.get("mcp-session-id");
	if (traced && minted !== null) operation?.inSession(await sessionDigest(minted));
	return opened;
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
 * Plans the request's endpoint, mints a session ID and opens the session in
 * its Durable Object, after the ledger of the key (or of the person, over all
 * their clients) admitted it (at most its cap of live sessions). A session
 * that does not open gives its place back at once.
 */
async function openSession(c: McpContext, message: InitializeMessage): Promise<Response> {
	const { env } = c;
	const settings = c.get("settings");
	const { key } = c.get("principal");
	const plan = await planEndpoint(c);
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
	const scope = c.get("scope");
	const answer = await openAdmitted(admission, async () => {
		// Destructured: the RPC stub types JSON-RPC payloads (open index signatures) as never.
		const { opened, reply } = await stub.open({ scope, request: message.message, params: message.params, ...plan });
		return { opened, result: Response.json(reply, { headers: opened ? { "mcp-session-id": newSessionId } : {} }) };
	});
	if (answer instanceof GatewayError) throw answer;
	return answer;
}
