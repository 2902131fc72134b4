import { settingsFrom } from "../config.ts";
import { sha256Hex } from "../crypto.ts";
import type { Env } from "../env.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import type { ApiKeyRecord } from "../registry/schemas.ts";
import { registryStub } from "./registry-stub.ts";

/** Bound on cached keys per isolate, so a flood of distinct keys cannot grow memory. */
const MAX_CACHED_KEYS = 1_000;

interface CachedKey {
	record: ApiKeyRecord;
	expiresAt: number;
}

/**
 * Known keys, per isolate, for a few seconds: most requests then cost no
 * registry read. Unknown keys are never cached, so a key works the moment it
 * is created; a revoked key stops within the cache TTL here and within one
 * recheck interval in its sessions.
 */
const cache = new Map<string, CachedKey>();

/** Registry lookups in progress, shared by concurrent requests with the same key. */
const lookups = new Map<string, Promise<ApiKeyRecord | null>>();

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** Resolves the request's `Authorization: Bearer <api key>` to its key record, or throws 401. */
export async function authenticate(request: Request, env: Env): Promise<ApiKeyRecord> {
	const match = BEARER.exec(request.headers.get("authorization") ?? "");
	if (!match?.[1]) {
		throw unauthenticated("Authentication required: send an API key as 'Authorization: Bearer <key>'.");
	}
	const digest = await sha256Hex(match[1]);
	const now = Date.now();
	const cached = cache.get(digest);
	if (cached && cached.expiresAt > now) return cached.record;
	let lookup = lookups.get(digest);
	if (!lookup) {
		// One registry read per key however many requests find the cache empty at once.
		lookup = registryStub(env)
			.findKeyByDigest(digest)
			.finally(() => lookups.delete(digest));
		lookups.set(digest, lookup);
	}
	const record = await lookup;
	if (!record) {
		cache.delete(digest);
		throw unauthenticated("Invalid API key: it is unknown or has been revoked.");
	}
	const ttl = settingsFrom(env).keyCacheTtlMs;
	if (ttl > 0) {
		if (cache.size >= MAX_CACHED_KEYS) {
			const oldest = cache.keys().next();
			if (!oldest.done) cache.delete(oldest.value);
		}
		cache.set(digest, { record, expiresAt: now + ttl });
	}
	return record;
}

function unauthenticated(message: string): GatewayError {
	return new GatewayError("unauthenticated", message, {
		headers: { "www-authenticate": 'Bearer realm="mcp-edge-gateway"' },
	});
}
