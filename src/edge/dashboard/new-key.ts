import { z } from "zod";
import { cookie, cookieValue } from "../../auth/browser-sign-in.ts";
import { base64url } from "../../primitives/crypto.ts";

/**
 * A new key (or connector token) is shown once, on the page the creating form leads to, and not
 * again on reload: the form's POST creates it and redirects (so a reload
 * never posts twice), carrying the secret to that one page in a cookie
 * sealed with AES-GCM under a key derived from SESSION_SECRET, HttpOnly,
 * SameSite=Strict, on that page's path only, for a minute; the page clears
 * it as it shows it. The registry keeps only the key's digest, as always.
 */
export const NEW_KEY_PATH = "/admin/ui/keys/new";
/** Where a new connector token is shown once, the same way (its `name` is its server's). */
export const NEW_CONNECTOR_TOKEN_PATH = "/admin/ui/connector-tokens/new";

/** A secret shown once: the page that shows it and the cookie that carries it there. */
export interface ShownOnce {
	path: string;
	cookie: string;
}
export const NEW_KEY: ShownOnce = { path: NEW_KEY_PATH, cookie: "gw_new_key" };
export const NEW_CONNECTOR_TOKEN: ShownOnce = { path: NEW_CONNECTOR_TOKEN_PATH, cookie: "gw_new_connector_token" };
const NEW_KEY_TTL_MS = 60_000;
const SEAL_INFO = "mcp-edge-gateway dashboard new key";

const NewKeySchema = z.object({ id: z.string(), name: z.string().nullable(), key: z.string(), expiresAt: z.number() });
export type NewKey = Omit<z.output<typeof NewKeySchema>, "expiresAt">;

const encoder = new TextEncoder();

async function sealingKey(secret: string): Promise<CryptoKey> {
	const material = await crypto.subtle.importKey("raw", encoder.encode(secret), "HKDF", false, ["deriveKey"]);
	return crypto.subtle.deriveKey(
		{ name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: encoder.encode(SEAL_INFO) },
		material,
		{ name: "AES-GCM", length: 256 },
		false,
		["encrypt", "decrypt"],
	);
}

function fromBase64url(text: string): Uint8Array<ArrayBuffer> {
	const base64 = text.replace(/-/g, "+").replace(/_/g, "/");
	return Uint8Array.from(atob(base64 + "=".repeat((4 - (base64.length % 4)) % 4)), (char) => char.charCodeAt(0));
}

/** The Set-Cookie value carrying the new secret, sealed, to its page. */
export async function newKeyCookie(
	secret: string,
	origin: string,
	created: NewKey,
	place: ShownOnce = NEW_KEY,
): Promise<string> {
	const iv = crypto.getRandomValues(new Uint8Array(12));
	const plain = encoder.encode(JSON.stringify({ ...created, expiresAt: Date.now() + NEW_KEY_TTL_MS }));
	const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv }, await sealingKey(secret), plain));
	return cookie(place.cookie, `${base64url(iv)}.${base64url(sealed)}`, origin, NEW_KEY_TTL_MS, {
		sameSite: "Strict",
		path: place.path,
	});
}

/** The Set-Cookie value that clears it. */
export function clearedNewKeyCookie(origin: string, place: ShownOnce = NEW_KEY): string {
	return cookie(place.cookie, "", origin, 0, { sameSite: "Strict", path: place.path });
}

/** The new key the cookie carries; null when there is none, it expired, or it was not sealed here. */
export async function openedNewKey(
	secret: string,
	request: Request,
	place: ShownOnce = NEW_KEY,
): Promise<NewKey | null> {
	const value = cookieValue(request, place.cookie);
	const [iv, sealed, ...rest] = value?.split(".") ?? [];
	if (!iv || !sealed || rest.length > 0) return null;
	let plain: ArrayBuffer;
	try {
		plain = await crypto.subtle.decrypt(
			{ name: "AES-GCM", iv: fromBase64url(iv) },
			await sealingKey(secret),
			fromBase64url(sealed),
		);
	} catch (error) {
		// A cookie this gateway did not seal (or a malformed one) opens to nothing.
		if (error instanceof DOMException || error instanceof TypeError) return null;
		throw error;
	}
	let json: unknown;
	try {
		json = JSON.parse(new TextDecoder().decode(plain));
	} catch (error) {
		if (error instanceof SyntaxError) return null;
		throw error;
	}
	const parsed = NewKeySchema.safeParse(json);
	if (!parsed.success || parsed.data.expiresAt < Date.now()) return null;
	const { expiresAt: _expiresAt, ...created } = parsed.data;
	return created;
}
