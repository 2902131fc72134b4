import { macMatches, macOf, randomToken, sha256Hex } from "../primitives/crypto.ts";

/**
 * Session IDs are `gw1.<192 random bits>.<HMAC-SHA256 of the rest>`, all
 * base64url. The MAC lets the edge reject a forged or mangled ID before any
 * Durable Object is woken (invariant 4); the random part makes IDs unguessable.
 */
const PREFIX = "gw1";
const RANDOM_BYTES = 24;
const SESSION_ID_SHAPE = /^gw1\.([A-Za-z0-9_-]{32})\.([A-Za-z0-9_-]{43})$/;

/** Mints a new session ID under the gateway's session secret. */
export async function mintSessionId(secret: string): Promise<string> {
	const body = `${PREFIX}.${randomToken(RANDOM_BYTES)}`;
	return `${body}.${await macOf(secret, body)}`;
}

/** True when the ID has the right shape and carries exactly the MAC this gateway would mint for it. */
export async function verifySessionId(secret: string, id: string): Promise<boolean> {
	const match = SESSION_ID_SHAPE.exec(id);
	if (!match?.[2]) return false;
	return macMatches(secret, id.slice(0, id.lastIndexOf(".")), match[2]);
}

/** The name of the session's Durable Object: the raw ID itself is never stored anywhere. */
export function sessionDigest(id: string): Promise<string> {
	return sha256Hex(id);
}
