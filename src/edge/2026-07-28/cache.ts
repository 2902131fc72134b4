import type { JSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";
import type { Envelope } from "../../mcp/2026-07-28/modern-request.ts";
import { CACHEABLE_METHODS } from "../../mcp/2026-07-28/modern-results.ts";
import { GatewayError } from "../../mcp/gateway-error.ts";
import { readCapped } from "../../mcp/read-capped.ts";
import { stableJson } from "../../mcp/stable-json.ts";
import { sha256Hex } from "../../primitives/crypto.ts";
import { isJsonObject } from "../../primitives/json-object.ts";
import type { Member } from "../../session/session-do.ts";

/** A longer hint is cut to this: a changed server is replaced by its generation anyway, but not a changed list. */
const MAX_TTL_MS = 24 * 60 * 60 * 1000;

/** The synthetic host of the gateway's entries in the colo's Cache API. */
const CACHE_ORIGIN = "https://mcp-result-cache.invalid";

/**
 * Shared caching of 2026-07-28 results at the edge (Cache API, per colo).
 * Only what the upstream marked `cacheScope: "public"` with a positive
 * `ttlMs` is kept, and only for that long; `private` results (and anything
 * unmarked, and every result bridged from a 2025 upstream, which the gateway
 * marks private) are never stored, so no principal is ever served another's
 * private answer. An entry is keyed by the server's generation and
 * configuration, the method, its parameters and the client's capabilities
 * (which may shape a list), never by the key: public means the same for
 * everyone. A hit is answered under the request's own id.
 */
export async function cachedResult(
	member: Member,
	message: JSONRPCRequest,
	envelope: Envelope,
	maxReplyBytes: number,
	forward: () => Promise<Response>,
): Promise<Response> {
	if (!CACHEABLE_METHODS.has(message.method)) return forward();
	const cache = caches.default;
	const key = await cacheKey(member, message, envelope);
	const hit = await cache.match(key);
	if (hit) {
		// An entry is a result the gateway stored itself (below); one that is not an object is not served.
		const result: unknown = await hit.json();
		if (isJsonObject(result)) {
			return Response.json({ jsonrpc: "2.0", id: message.id, result }, { headers: { "x-mcp-cache": "hit" } });
		}
	}
	const response = await forward();
	if (!response.ok || !(response.headers.get("content-type") ?? "").startsWith("application/json")) return response;
	// Read to decide whether it may be kept, under the reply cap like every reply the gateway reads.
	const bytes = response.body ? await readCapped(response.body, maxReplyBytes) : new Uint8Array();
	if (bytes === null) {
		throw new GatewayError(
			"reply_too_large",
			`Upstream server '${member.name}' sent a reply larger than ${maxReplyBytes} bytes, which the gateway does not relay.`,
			{ server: member.name, id: message.id },
		);
	}
	const text = new TextDecoder().decode(bytes);
	const shared = publicResult(text);
	if (shared) {
		const maxAge = Math.max(1, Math.floor(Math.min(shared.ttlMs, MAX_TTL_MS) / 1000));
		await cache.put(key, Response.json(shared.result, { headers: { "cache-control": `public, max-age=${maxAge}` } }));
	}
	return new Response(text, { status: response.status, headers: response.headers });
}

/** The reply's result and its public lifetime in ms; null when it must not be shared. */
function publicResult(text: string): { result: Record<string, unknown>; ttlMs: number } | null {
	let reply: unknown;
	try {
		reply = JSON.parse(text);
	} catch {
		return null;
	}
	if (!isJsonObject(reply) || !isJsonObject(reply.result)) return null;
	const { result } = reply;
	const { cacheScope, ttlMs, resultType } = result;
	if (cacheScope !== "public" || typeof ttlMs !== "number" || !(ttlMs > 0)) return null;
	return resultType === undefined || resultType === "complete" ? { result, ttlMs } : null;
}

async function cacheKey(member: Member, message: JSONRPCRequest, envelope: Envelope): Promise<Request> {
	const { _meta: _envelope, ...params } = message.params ?? {};
	const digest = await sha256Hex(
		stableJson([
			member.generation,
			member.configDigest ?? "",
			envelope.protocolVersion,
			message.method,
			params,
			envelope.clientCapabilities,
		]),
	);
	return new Request(`${CACHE_ORIGIN}/${encodeURIComponent(member.name)}/${digest}`);
}
