import type { z } from "zod";
import { base64url } from "./crypto.ts";
import { openToken, signToken } from "./signed-token.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * A value the gateway hands out and takes back unchanged (a connect link, a
 * browser's sign-in cookie): its JSON, base64url, MAC'd under `label` so a
 * token made for one purpose is never taken for another. Not encrypted:
 * nothing secret goes in one.
 */
export function signJson(secret: string, label: string, value: unknown): Promise<string> {
	const body = base64url(encoder.encode(JSON.stringify(value)));
	return signToken(secret, body, `${label}\n${body}`);
}

/** The value of a token `signJson` made under `label`, parsed with `schema`; null for anything else. */
export async function openJson<T>(
	secret: string,
	label: string,
	token: string | null,
	schema: z.ZodType<T>,
): Promise<T | null> {
	if (token === null) return null;
	const body = await openToken(secret, token, (candidate) => `${label}\n${candidate}`);
	if (body === null) return null;
	let json: unknown;
	try {
		json = JSON.parse(decoder.decode(fromBase64url(body)));
	} catch (error) {
		// What this gateway signed always decodes; anything that does not was never its own.
		if (error instanceof SyntaxError || error instanceof DOMException) return null;
		throw error;
	}
	const parsed = schema.safeParse(json);
	return parsed.success ? parsed.data : null;
}

function fromBase64url(text: string): Uint8Array {
	const base64 = text.replace(/-/g, "+").replace(/_/g, "/");
	return Uint8Array.from(atob(base64 + "=".repeat((4 - (base64.length % 4)) % 4)), (char) => char.charCodeAt(0));
}
