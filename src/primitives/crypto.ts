const encoder = new TextEncoder();

/** Base64url without padding: visible ASCII, safe in headers and URLs. */
export function base64url(bytes: Uint8Array): string {
	let binary = "";
	for (const byte of bytes) binary += String.fromCharCode(byte);
	return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** `byteLength` random bytes, base64url-encoded. */
export function randomToken(byteLength: number): string {
	return base64url(crypto.getRandomValues(new Uint8Array(byteLength)));
}

/** Lowercase hex SHA-256 of a string. */
export async function sha256Hex(text: string): Promise<string> {
	const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(text)));
	return Array.from(digest, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/**
 * Compares two secrets in constant time. Both are hashed first so that the
 * comparison does not leak their lengths either.
 */
export async function secretsEqual(a: string, b: string): Promise<boolean> {
	const [da, db] = await Promise.all([
		crypto.subtle.digest("SHA-256", encoder.encode(a)),
		crypto.subtle.digest("SHA-256", encoder.encode(b)),
	]);
	return crypto.subtle.timingSafeEqual(da, db);
}

const hmacKeys = new Map<string, Promise<CryptoKey>>();

/** The HMAC-SHA256 key of a gateway secret, imported once per isolate. */
function hmacKey(secret: string): Promise<CryptoKey> {
	let key = hmacKeys.get(secret);
	if (!key) {
		key = crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
		hmacKeys.set(secret, key);
	}
	return key;
}

/** The base64url HMAC-SHA256 of `body` under `secret` (43 characters). */
export async function macOf(secret: string, body: string): Promise<string> {
	return base64url(new Uint8Array(await crypto.subtle.sign("HMAC", await hmacKey(secret), encoder.encode(body))));
}

/**
 * Whether `mac` is exactly the MAC this gateway would write for `body`: the
 * canonical encoding is compared in constant time, not decoded bytes (the last
 * base64url character of a 32-byte MAC carries two unused bits, so decoding
 * would accept four spellings).
 */
export async function macMatches(secret: string, body: string, mac: string): Promise<boolean> {
	const given = encoder.encode(mac);
	const expected = encoder.encode(await macOf(secret, body));
	return given.byteLength === expected.byteLength && crypto.subtle.timingSafeEqual(given, expected);
}
