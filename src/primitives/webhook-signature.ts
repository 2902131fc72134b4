import { base64 } from "./crypto.ts";

/**
 * The signature of a webhook the gateway sends, as Standard Webhooks
 * (standardwebhooks.com) defines it, so a receiver verifies it with that
 * specification's libraries or a few lines of HMAC: `webhook-id`,
 * `webhook-timestamp` (seconds) and `webhook-signature: v1,<base64 HMAC-SHA256
 * of "id.timestamp.body">`. A secret written `whsec_<base64>` is that
 * specification's own form (the key is the decoded bytes); any other secret is
 * used as its UTF-8 bytes.
 */

const encoder = new TextEncoder();

export const WEBHOOK_HEADERS = {
	id: "webhook-id",
	timestamp: "webhook-timestamp",
	signature: "webhook-signature",
} as const;

/** `v1,<signature>` of `body` sent as message `id` at `timestampSeconds`. */
export async function signWebhook(secret: string, id: string, timestampSeconds: number, body: string): Promise<string> {
	const key = await crypto.subtle.importKey("raw", keyBytes(secret), { name: "HMAC", hash: "SHA-256" }, false, [
		"sign",
	]);
	const signed = await crypto.subtle.sign("HMAC", key, encoder.encode(`${id}.${timestampSeconds}.${body}`));
	return `v1,${base64(new Uint8Array(signed))}`;
}

/** The three headers that let a receiver check `body` came from the gateway, unchanged and recently. */
export async function webhookSignatureHeaders(
	secret: string,
	id: string,
	timestampSeconds: number,
	body: string,
): Promise<Record<string, string>> {
	return {
		[WEBHOOK_HEADERS.id]: id,
		[WEBHOOK_HEADERS.timestamp]: String(timestampSeconds),
		[WEBHOOK_HEADERS.signature]: await signWebhook(secret, id, timestampSeconds, body),
	};
}

function keyBytes(secret: string): Uint8Array {
	if (!secret.startsWith("whsec_")) return encoder.encode(secret);
	const binary = atob(secret.slice("whsec_".length));
	return Uint8Array.from(binary, (char) => char.charCodeAt(0));
}
