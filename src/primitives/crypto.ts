const encoder = new TextEncoder();

/** Base64 with padding (RFC 4648 §4), as HTTP Basic credentials carry it. */
export function base64(bytes: Uint8Array): string {
	let binary = "";
	for (const byte of bytes) binary += String.fromCharCode(byte);
	return btoa(binary);
}

/** Base64url without padding: visible ASCII, safe in headers and URLs. */
export function base64url(bytes: Uint8Array): string {
	return base64(bytes).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
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
