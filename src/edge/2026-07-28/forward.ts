import type { JSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";
import { credentialsFor } from "../../credentials/credentials-for.ts";
import { connectInputRequired } from "../../mcp/2026-07-28/connect-input.ts";
import { failureReply } from "../../mcp/failure-reply.ts";
import { GatewayError } from "../../mcp/gateway-error.ts";
import { parseJsonRpcMessage } from "../../mcp/jsonrpc.ts";
import { readCapped } from "../../mcp/read-capped.ts";
import { mediaTypeOf } from "../../primitives/media-type.ts";
import type { Member } from "../../session/session-do.ts";
import { telemetryFor } from "../../telemetry/telemetry.ts";
import { startDeadline } from "../../upstream/deadline.ts";
import { fetchUpstream } from "../../upstream/upstream-fetch.ts";
import { upstreamProtocolError, upstreamStatusError } from "../../upstream/upstream-status.ts";
import { resolveTarget, targetLimitsOf, type UpstreamTarget } from "../../upstream/upstream-target.ts";
import type { McpContext } from "../request-context.ts";

/**
 * Client headers a 2026-07-28 request carries to its upstream: the transport's
 * own (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, every `Mcp-Param-*`,
 * known or not, as intermediaries must), content negotiation and tracing.
 * Never the client's credentials, cookies or session id: the upstream gets the
 * operator's configured headers instead (invariant "Client credentials never travel upstream").
 */
const FORWARDED = new Set(["accept", "content-type", "user-agent", "traceparent", "tracestate", "baggage"]);
const NEVER_FORWARDED = new Set(["mcp-session-id"]);

/** Response headers the client gets back from the upstream, once its answer is one MCP allows. */
const RETURNED = ["content-type", "cache-control", "x-accel-buffering"];

/** The media types a 2026-07-28 upstream may answer a request with. */
const REPLY_TYPES = new Set(["application/json", "text/event-stream"]);

/**
 * Statuses the 2026-07-28 transport gives a JSON-RPC refusal of the request
 * itself (400: parse, invalid request, header mismatch, unsupported version,
 * missing capability; 404: method not found). With a JSON-RPC error body they
 * are the upstream's answer to the client, and reach it as such.
 */
const REFUSAL_STATUSES = new Set([400, 404]);

/** Where this request goes for `member`: the server's address and limits, the caller's credentials for it, the trace. */
export function modernTarget(c: McpContext, member: Member): UpstreamTarget {
	const { env } = c;
	const settings = c.get("settings");
	const calling = c.get("scope").calling ?? null;
	return {
		...resolveTarget(member, env, targetLimitsOf(settings)),
		credentials: credentialsFor(member, () => calling, env, settings) ?? undefined,
		traced: { telemetry: telemetryFor(env), waitUntil: c.get("waitUntil") },
	};
}

/**
 * A 2026-07-28 request to a 2026-07-28 upstream needs no state: the edge sends
 * the body as it came (the envelope, names and arguments untouched; `rewritten`
 * headers go with a body the gateway rewrote: an upstream's own task id) with the
 * credentials swapped, and streams the answer back. No Durable Object is
 * involved. The deadline covers the upstream's answer starting; the stream
 * itself runs until the upstream ends it or the client goes away (which
 * cancels the upstream request, the era's cancellation).
 *
 * Only an answer MCP allows is passed on: a JSON or SSE reply, or a JSON-RPC
 * refusal of the request. Any other status or content type is answered as the
 * 2025 path answers it, a JSON-RPC error (inside `tools/call`, an error
 * result) with HTTP 200: an upstream's 401 is not the gateway refusing the
 * client, and an upstream's HTML is never served from the gateway's origin.
 */
export async function forwardModern(
	target: UpstreamTarget,
	request: Request,
	body: string,
	message: JSONRPCRequest,
	rewritten: Record<string, string> = {},
): Promise<Response> {
	const headers = new Headers();
	for (const [name, value] of request.headers) {
		if (FORWARDED.has(name) || (name.startsWith("mcp-") && !NEVER_FORWARDED.has(name))) headers.set(name, value);
	}
	// A routing header the gateway rewrote with the body (an upstream's own task id in `Mcp-Name`).
	for (const [name, value] of Object.entries(rewritten)) headers.set(name, value);
	for (const [name, value] of Object.entries(target.headers)) headers.set(name, value);
	const deadline = startDeadline(target.timeoutMs);
	let upstream: Response;
	try {
		upstream = await fetchUpstream(target, { method: "POST", headers, body }, deadline, undefined, message.method);
	} finally {
		deadline.clear();
	}
	const type = mediaTypeOf(upstream.headers.get("content-type"));
	if (upstream.ok && upstream.body && REPLY_TYPES.has(type)) {
		const returned = new Headers();
		for (const name of RETURNED) {
			const value = upstream.headers.get(name);
			if (value !== null) returned.set(name, value);
		}
		return new Response(upstream.body, { status: upstream.status, headers: returned });
	}
	if (upstream.ok) {
		await upstream.body?.cancel();
		console.warn(
			`upstream ${target.name}: answered ${message.method} with HTTP ${upstream.status} and ${type || "no content type"}`,
		);
		throw upstreamProtocolError(target.name, `an unexpected content type (${type || "none"}) for ${message.method}`);
	}
	if (REFUSAL_STATUSES.has(upstream.status) && type === "application/json") {
		const refusal = await refusalOf(target, message, upstream);
		if (refusal) return refusal;
	} else {
		await upstream.body?.cancel();
	}
	console.warn(`upstream ${target.name}: answered ${message.method} with HTTP ${upstream.status}`);
	throw upstreamStatusError(target.name, upstream.status, message.method, upstream.headers.get("www-authenticate"));
}

/**
 * An upstream failure on the stateless path, answered as the 2025 path answers
 * one inside a JSON-RPC exchange: HTTP 200 with the failure for that request.
 * What is not an upstream's failure (a gateway error of its own) is thrown on.
 */
export function upstreamFailureAnswer(
	message: JSONRPCRequest,
	error: unknown,
	clientCapabilities?: Record<string, unknown>,
): Response {
	if (!(error instanceof GatewayError) || error.server === undefined) throw error;
	const reply = failureReply(message.method, message.id, error, clientCapabilities);
	const connect = "error" in reply ? connectInputRequired(reply.error) : null;
	return Response.json(connect ? { jsonrpc: "2.0", id: message.id, result: connect } : reply);
}

/**
 * The upstream's JSON-RPC refusal of this request (its id, or none when the
 * upstream could not read one), re-serialized by the gateway; null when the
 * body is not one. Reads the body, under the reply cap.
 */
async function refusalOf(
	target: UpstreamTarget,
	message: JSONRPCRequest,
	upstream: Response,
): Promise<Response | null> {
	const bytes = upstream.body ? await readCapped(upstream.body, target.maxReplyBytes) : null;
	const reply = bytes === null ? null : parseJsonRpcMessage(new TextDecoder().decode(bytes));
	if (reply === null || !("error" in reply)) return null;
	if (reply.id !== undefined && reply.id !== null && reply.id !== message.id) return null;
	return Response.json(reply, { status: upstream.status });
}
