/**
 * Header values in 2026-07-28's routing headers (`Mcp-Name`, `Mcp-Param-*`):
 * plain visible ASCII as it is, anything else in the Base64 sentinel
 * `=?base64?…?=`. Both directions live here so the sentinel is spelled once.
 */
const BASE64_PREFIX = "=?base64?";
const BASE64_SUFFIX = "?=";
/** Canonical Base64 only (padding included), as the SDK's server requires of a sentinel's payload. */
const BASE64_CANONICAL = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
/** Visible ASCII, spaces inside but not at either edge. */
const PLAIN = /^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/;

function looksLikeSentinel(value: string): boolean {
	return value.startsWith(BASE64_PREFIX) && value.endsWith(BASE64_SUFFIX);
}

/**
 * A value as an HTTP header carries it: as it is when it is plain visible
 * ASCII without edge whitespace, else in the Base64 sentinel (also when it
 * already looks like one), as 2026-07-28 requires.
 */
export function headerValue(value: string): string {
	if (PLAIN.test(value) && !looksLikeSentinel(value)) return value;
	const bytes = new TextEncoder().encode(value);
	return `${BASE64_PREFIX}${btoa(String.fromCharCode(...bytes))}${BASE64_SUFFIX}`;
}

/**
 * A header value, decoded when it carries the Base64 sentinel; undefined when
 * the sentinel's payload is not canonical Base64 of UTF-8 (which a server must refuse).
 */
export function decodeHeaderValue(value: string): string | undefined {
	if (!looksLikeSentinel(value)) return value;
	const encoded = value.slice(BASE64_PREFIX.length, value.length - BASE64_SUFFIX.length);
	if (!BASE64_CANONICAL.test(encoded)) return undefined;
	const bytes = Uint8Array.from(atob(encoded), (char) => char.charCodeAt(0));
	try {
		return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
	} catch (error) {
		if (error instanceof TypeError) return undefined;
		throw error;
	}
}
