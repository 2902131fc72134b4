import type { Settings } from "../config.ts";
import { sha256Hex } from "../crypto.ts";
import type { Env } from "../env.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import { registryStub } from "../registry/registry-stub.ts";
import type { ApiKeyRecord } from "../registry/schemas.ts";
import { bearerToken } from "./bearer.ts";
import { clientIp, failedAuthentication, refuseLockedOut } from "./rate-limits.ts";

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

/**
 * Resolves the request's `Authorization: Bearer <api key>` to its key record,
 * or throws 401. Failed authentications count against the client's IP: past
 * AUTH_FAILURE_LIMITER's limit the answer is 429, and this isolate refuses that
 * IP before any key lookup until the period has passed.
 */
export async function authenticate(request: Request, env: Env, settings: Settings): Promise<ApiKeyRecord> {
	const ip = clientIp(request);
	refuseLockedOut(ip, settings);
	const token = bearerToken(request);
	if (!token) {
		throw await failedAuthentication(
			env,
			settings,
			ip,
			unauthenticated("Authentication required: send an API key as 'Authorization: Bearer <key>'."),
		);
	}
	const digest = await sha256Hex(token);
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
		throw await failedAuthentication(
			env,
			settings,
			ip,
			unauthenticated("Invalid API key: it is unknown or has been revoked."),
		);
	}
	if (settings.keyCacheTtlMs > 0) {
		if (cache.size >= MAX_CACHED_KEYS) {
			const oldest = cache.keys().next();
			if (!oldest.done) cache.delete(oldest.value);
		}
		cache.set(digest, { record, expiresAt: now + settings.keyCacheTtlMs });
	}
	return record;
}

function unauthenticated(message: string): GatewayError {
	return new GatewayError("unauthenticated", message, {
		headers: { "www-authenticate": 'Bearer realm="mcp-edge-gateway"' },
	});
}
