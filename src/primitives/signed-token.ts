import { base64url } from "./crypto.ts";

const encoder = new TextEncoder();

/**
 * Tokens the gateway hands out and later takes back as proof: `<body>.<mac>`,
 * the MAC an HMAC-SHA256 under a gateway secret in base64url (43
 * characters). Session IDs, API keys and 2026-07-28 `requestState`s are such
 * tokens, so a forged or mangled one is refused by local computation before
 * anything is read. The MAC covers the body, or what the body stands for when
 * the token is bound to more than it shows (`covered`: a `requestState` is
 * bound to its key, endpoint and request, which the client does not see).
 *
 * @example
 * const id = await signToken(secret, `gw1.${randomToken(24)}`);
 * (await openToken(secret, id)) === id.slice(0, id.lastIndexOf(".")); // true
 */
export async function signToken(secret: string, body: string, covered: string = body): Promise<string> {
	return `${body}.${await macOf(secret, covered)}`;
}

/**
 * The body of `token` when its MAC is exactly the one `signToken` writes for
 * it (its canonical spelling, compared in constant time); null otherwise.
 * `covered` gives what the MAC covers for a body, or null to refuse the body
 * without computing a MAC (a shape or an expiry that is wrong already).
 */
export async function openToken(
	secret: string,
	token: string,
	covered: (body: string) => string | null = (body) => body,
): Promise<string | null> {
	const dot = token.lastIndexOf(".");
	if (dot < 0) return null;
	const body = token.slice(0, dot);
	const signed = covered(body);
	if (signed === null) return null;
	return (await macMatches(secret, signed, token.slice(dot + 1))) ? body : null;
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
async function macOf(secret: string, body: string): Promise<string> {
	return base64url(new Uint8Array(await crypto.subtle.sign("HMAC", await hmacKey(secret), encoder.encode(body))));
}

/**
 * Whether `mac` is exactly the MAC this gateway would write for `body`: the
 * canonical encoding is compared in constant time, not decoded bytes (the last
 * base64url character of a 32-byte MAC carries two unused bits, so decoding
 * would accept four spellings).
 */
async function macMatches(secret: string, body: string, mac: string): Promise<boolean> {
	const given = encoder.encode(mac);
	const expected = encoder.encode(await macOf(secret, body));
	return given.byteLength === expected.byteLength && crypto.subtle.timingSafeEqual(given, expected);
}
