import { base64url, randomToken, sha256Hex } from "../crypto.ts";

/**
 * Session IDs are `gw1.<192 random bits>.<HMAC-SHA256 of the rest>`, all
 * base64url. The MAC lets the edge reject a forged or mangled ID before any
 * Durable Object is woken (invariant 4); the random part makes IDs unguessable.
 */
const PREFIX = "gw1";
const RANDOM_BYTES = 24;
const SESSION_ID_SHAPE = /^gw1\.([A-Za-z0-9_-]{32})\.([A-Za-z0-9_-]{43})$/;

const keys = new Map<string, Promise<CryptoKey>>();

function macKey(secret: string): Promise<CryptoKey> {
	let key = keys.get(secret);
	if (!key) {
		key = crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
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
	const mac = await crypto.subtle.sign("HMAC", await macKey(secret), new TextEncoder().encode(body));
	return `${body}.${base64url(new Uint8Array(mac))}`;
}

/** True when the ID has the right shape and its MAC verifies (constant time). */
export async function verifySessionId(secret: string, id: string): Promise<boolean> {
	const match = SESSION_ID_SHAPE.exec(id);
	if (!match?.[2]) return false;
	const mac = decodeBase64url(match[2]);
	if (!mac) return false;
	const body = id.slice(0, id.lastIndexOf("."));
	return crypto.subtle.verify("HMAC", await macKey(secret), mac, new TextEncoder().encode(body));
}

/** The name of the session's Durable Object: the raw ID itself is never stored anywhere. */
export function sessionDigest(id: string): Promise<string> {
	return sha256Hex(id);
}

function decodeBase64url(text: string): Uint8Array | null {
	const padded = text.replaceAll("-", "+").replaceAll("_", "/") + "=".repeat((4 - (text.length % 4)) % 4);
	const binary = atob(padded);
	return Uint8Array.from(binary, (char) => char.charCodeAt(0));
}
