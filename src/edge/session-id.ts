import { base64url, randomToken, sha256Hex } from "../crypto.ts";

/**
 * Session IDs are `gw1.<192 random bits>.<HMAC-SHA256 of the rest>`, all
 * base64url. The MAC lets the edge reject a forged or mangled ID before any
 * Durable Object is woken (invariant 4); the random part makes IDs unguessable.
 */
const PREFIX = "gw1";
const RANDOM_BYTES = 24;
const SESSION_ID_SHAPE = /^gw1\.([A-Za-z0-9_-]{32})\.([A-Za-z0-9_-]{43})$/;

const encoder = new TextEncoder();
const keys = new Map<string, Promise<CryptoKey>>();

function macKey(secret: string): Promise<CryptoKey> {
	let key = keys.get(secret);
	if (!key) {
		key = crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
			"sign",
			"verify",
		]);
		keys.set(secret, key);
	}
	return key;
}

/** Mints a new session ID under the gateway's session secret. */
export async function mintSessionId(secret: string): Promise<string> {
	const body = `${PREFIX}.${randomToken(RANDOM_BYTES)}`;
	const mac = await crypto.subtle.sign("HMAC", await macKey(secret), encoder.encode(body));
	return `${body}.${base64url(new Uint8Array(mac))}`;
}

/**
 * True when the ID has the right shape and carries exactly the MAC this
 * gateway would mint for it. The canonical encoding is compared (in constant
 * time), not the decoded bytes: the MAC's last base64url character carries two
 * unused bits, and decoding would accept four spellings of one ID.
 */
export async function verifySessionId(secret: string, id: string): Promise<boolean> {
	const match = SESSION_ID_SHAPE.exec(id);
	if (!match?.[2]) return false;
	const body = id.slice(0, id.lastIndexOf("."));
	const expected = await crypto.subtle.sign("HMAC", await macKey(secret), encoder.encode(body));
	const given = encoder.encode(match[2]);
	const canonical = encoder.encode(base64url(new Uint8Array(expected)));
	return given.byteLength === canonical.byteLength && crypto.subtle.timingSafeEqual(given, canonical);
}

/** The name of the session's Durable Object: the raw ID itself is never stored anywhere. */
export function sessionDigest(id: string): Promise<string> {
	return sha256Hex(id);
}
