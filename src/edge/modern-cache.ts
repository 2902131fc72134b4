import type { JSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";
import type { Envelope } from "../mcp/2026-07-28/modern-request.ts";
import { CACHEABLE_METHODS } from "../mcp/2026-07-28/modern-results.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import { readCapped } from "../mcp/read-capped.ts";
import { stableJson } from "../mcp/stable-json.ts";
import { sha256Hex } from "../primitives/crypto.ts";
import type { Member } from "../session/session-do.ts";

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
		const result = (await hit.json()) as Record<string, unknown>;
		return Response.json({ jsonrpc: "2.0", id: message.id, result }, { headers: { "x-mcp-cache": "hit" } });
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
	const ttlMs = publicTtl(text);
	if (ttlMs > 0) {
		const result = (JSON.parse(text) as { result: unknown }).result;
		const maxAge = Math.max(1, Math.floor(Math.min(ttlMs, MAX_TTL_MS) / 1000));
		await cache.put(key, Response.json(result, { headers: { "cache-control": `public, max-age=${maxAge}` } }));
	}
	return new Response(text, { status: response.status, headers: response.headers });
}

/** The result's public lifetime in ms, or 0 when it must not be shared. */
function publicTtl(text: string): number {
	let reply: unknown;
	try {
		reply = JSON.parse(text);
	} catch {
		return 0;
	}
	if (typeof reply !== "object" || reply === null || !("result" in reply)) return 0;
	const result = reply.result;
	if (typeof result !== "object" || result === null) return 0;
	const { cacheScope, ttlMs, resultType } = result as Record<string, unknown>;
	if (cacheScope !== "public" || typeof ttlMs !== "number" || !(ttlMs > 0)) return 0;
	return resultType === undefined || resultType === "complete" ? ttlMs : 0;
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
