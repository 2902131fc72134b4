import { principalOfToken } from "../auth/access-token.ts";
import { bearerChallenge } from "../auth/protected-resource.ts";
import { lookupGuard } from "../auth/rate-limits.ts";
import type { Settings } from "../config.ts";
import { type Caller, callerOf } from "../credentials/caller.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import { sha256Hex } from "../primitives/crypto.ts";
import { isolateCache, keepFound } from "../primitives/expiring-map.ts";
import { apiKeyId, looksLikeApiKey, verifyApiKey } from "../registry/api-key.ts";
import type { StoredKey } from "../registry/kv-records.ts";
import type { RegistryReader } from "../registry/registry-reader.ts";
import type { ApiKeyRecord } from "../registry/schemas.ts";
import { bearerToken } from "./bearer.ts";
import type { EdgeRequestContext } from "./request-context.ts";

/**
 * Known keys, per isolate and key id, for a few seconds (at most 1,000): most
 * requests then cost no KV read. Unknown keys are never cached, so a key works
 * the moment its record reaches KV; a revoked key stops within the cache TTL
 * here (plus KV's own staleness) and within one recheck interval in its sessions.
 */
const cache = isolateCache<StoredKey | null>({ maxEntries: 1_000 });

/**
 * What a request's credential stands for: the key record (a person's in the
 * same shape), who calls for the upstream credentials, and, for a person
 * signed in at an external issuer, their access token, held only in memory
 * for token exchange (never stored, never sent upstream).
 */
export interface Authenticated {
	key: ApiKeyRecord;
	caller: Caller;
	subjectToken: string | null;
}

/** The one sentence for every key that does not authenticate, whatever is wrong with it. */
const INVALID_KEY = "Invalid API key: it is unknown, malformed or has been revoked.";

/**
 * Resolves the request's `Authorization: Bearer <api key>` to its key record,
 * or throws 401. A key's shape, and unless its record is cached its MAC, are
 * checked by local computation first (`verifyApiKey`), so garbage, truncated,
 * foreign and forged keys cost no Durable Object request and no KV read
 * (invariant "Failed authentication touches nothing"); only then is its record read, and the SHA-256 of the whole
 * key compared with the one on record.
 * With OAuth on, a bearer that is not shaped like an API key is an access
 * token, and stands for the principal its access rule makes of it.
 * Only a failed read of a gateway token counts against the client's address
 * (AUTH_FAILURE_LIMITER, see `lookupGuard`): what is refused by local
 * computation costs nothing and locks nobody out, and a key whose MAC is
 * right was minted by the gateway (revoked since, at worst), so its read is
 * what any valid key costs.
 */
export async function authenticate(c: EdgeRequestContext): Promise<Authenticated> {
	const request = c.req.raw;
	const { env } = c;
	const settings = c.get("settings");
	const reader = c.get("reader");
	const token = bearerToken(request);
	const origin = new URL(request.url).origin;
	if (!token) {
		const how =
			settings.oauth.mode === "off"
				? "send an API key as 'Authorization: Bearer <key>'"
				: "sign in with OAuth (see the resource metadata in WWW-Authenticate) or send an API key as 'Authorization: Bearer <key>'";
		throw unauthenticated(`Authentication required: ${how}.`, settings, origin);
	}
	if (settings.oauth.mode !== "off" && !looksLikeApiKey(token)) {
		const { record, identity } = await principalOfToken(
			token,
			request,
			env,
			settings,
			reader,
			lookupGuard(env, settings, request, c.get("waitUntil")),
		);
		// Only an external issuer's token can be exchanged (token-exchange servers): the gateway's own
		// tokens mean nothing to anyone else.
		return {
			key: record,
			caller: callerOf(record.id, identity),
			subjectToken: settings.oauth.mode === "external" ? token : null,
		};
	}
	if (!settings.keySecret) {
		throw new GatewayError(
			"misconfigured",
			"The gateway is misconfigured: the KEY_SECRET secret is not set (at least 32 characters).",
		);
	}
	const record = await knownKey(token, settings.keySecret, reader, settings);
	// The digest proves the key is this record's, whichever way the record was found.
	// A wrong key naming a cached id leaves the cache as it is: it cannot evict a good record.
	if (!record || !(await digestMatches(token, record.digest))) {
		throw unauthenticated(INVALID_KEY, settings, origin);
	}
	return { key: record, caller: callerOf(record.id, null, record.name), subjectToken: null };
}

/**
 * The record of the key the token names: from the isolate's cache when it is
 * there (no MAC check needed: no read follows, and the digest decides), else,
 * only when the token's MAC is right, from one shared KV read. KV failing is the
 * reader's 503 (`registry_unavailable`).
 */
async function knownKey(
	token: string,
	secret: string,
	reader: RegistryReader,
	settings: Settings,
): Promise<StoredKey | null> {
	const id = apiKeyId(token);
	if (id === null) return null;
	const cached = cache.get(id);
	if (cached !== undefined) return cached;
	if ((await verifyApiKey(secret, token)) !== id) return null;
	// One read per key and reader (a request's own): what another request reads is not waited on here.
	return cache.load(id, () => reader.key(id), keepFound(settings.keyCacheTtlMs), reader);
}

const encoder = new TextEncoder();

async function digestMatches(token: string, digest: string): Promise<boolean> {
	const given = encoder.encode(await sha256Hex(token));
	const expected = encoder.encode(digest);
	return given.byteLength === expected.byteLength && crypto.subtle.timingSafeEqual(given, expected);
}

function unauthenticated(message: string, settings: Settings, origin: string): GatewayError {
	return new GatewayError("unauthenticated", message, {
		headers: { "www-authenticate": bearerChallenge(settings, origin) },
	});
}
