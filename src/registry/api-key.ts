import { randomToken } from "../primitives/crypto.ts";
import { openToken, signToken } from "../primitives/signed-token.ts";

/**
 * API keys verify themselves: `mcpgw2_<key id>.<128 random bits>.<HMAC-SHA256
 * under KEY_SECRET>`, all base64url. The edge checks shape and MAC by local
 * computation, so a malformed, forged or foreign key is refused before any
 * Durable Object or KV read (invariant "Failed authentication touches nothing"); the key id then names the record
 * to read. The registry keeps only the SHA-256 of the whole key, compared
 * after the record is read, so even a leaked KEY_SECRET cannot mint a key
 * that matches an existing record. The prefix keeps keys recognisable to
 * secret scanners; keys of the first format (`mcpgw_` + 43 characters) are
 * no longer accepted.
 */
const PREFIX = "mcpgw2_";
const ID_PATTERN = "key_[A-Za-z0-9_-]{12}";
const KEY_SHAPE = new RegExp(`^${PREFIX}(${ID_PATTERN})\\.([A-Za-z0-9_-]{22})\\.([A-Za-z0-9_-]{43})$`);

/** A new key id: `key_` and 72 random bits. */
export function newKeyId(): string {
	return `key_${randomToken(9)}`;
}

/** Mints the key for `id` under the gateway's key secret. */
export async function mintApiKey(secret: string, id: string): Promise<string> {
	return signToken(secret, `${PREFIX}${id}.${randomToken(16)}`);
}

/** Whether a bearer is meant as an API key (of any format, valid or not) rather than an OAuth access token. */
export function looksLikeApiKey(token: string): boolean {
	return token.startsWith("mcpgw");
}

/** The key id a key names, when it has the shape of a key (no MAC check: see `verifyApiKey`). */
export function apiKeyId(key: string): string | null {
	return KEY_SHAPE.exec(key)?.[1] ?? null;
}

/** The key's id when its shape and MAC are right; null otherwise (local computation only). */
export async function verifyApiKey(secret: string, key: string): Promise<string | null> {
	const match = KEY_SHAPE.exec(key);
	if (!match?.[1]) return null;
	return (await openToken(secret, key)) === null ? null : match[1];
}
