import { randomToken } from "../primitives/crypto.ts";
import { webhookSignatureHeaders } from "../primitives/webhook-signature.ts";
import { upstreamFetch } from "./served-origins.ts";
import type { FetchLike } from "./upstream-fetch.ts";
import { resolveReferences } from "./upstream-target.ts";

/**
 * One signed POST to a webhook an operator configured (a guard's scanner, an
 * approval's notice). Like an upstream request it goes through the one fetch
 * seam and never follows a redirect (it would carry the content elsewhere): a
 * 3xx is answered as it came, and the caller treats it as a failure. It is
 * abandoned at `timeoutMs` (the fetch rejects with a TimeoutError).
 */

/** Where a webhook goes: its URL, its signing secret (resolved, never a reference), and how long it may take. */
export interface WebhookTarget {
	url: string;
	secret: string;
	timeoutMs: number;
}

export interface WebhookPostOptions {
	fetcher?: FetchLike;
	/** Seconds since the epoch, for the signature's timestamp. */
	nowSeconds?: () => number;
}

export async function postWebhook(
	target: WebhookTarget,
	body: string,
	options: WebhookPostOptions = {},
): Promise<Response> {
	const { fetcher = upstreamFetch, nowSeconds = () => Math.floor(Date.now() / 1000) } = options;
	const signature = await webhookSignatureHeaders(target.secret, `msg_${randomToken(16)}`, nowSeconds(), body);
	return fetcher(target.url, {
		method: "POST",
		headers: { "content-type": "application/json", ...signature },
		body,
		redirect: "manual",
		signal: AbortSignal.timeout(target.timeoutMs),
	});
}

/** A webhook as the registry keeps it: its signing secret a `${UPSTREAM_NAME}` reference, resolved at each use. */
export interface ReferencedWebhook {
	url: string;
	secret: string;
	timeoutMs: number;
}

/**
 * `postWebhook` to a registry's webhook, its secret resolved from the
 * Worker's secrets and vars; a secret that does not resolve rejects with a
 * sentence naming the variable (for the operator's log), and nothing is sent.
 */
export function postReferencedWebhook(
	webhook: ReferencedWebhook,
	vars: Record<string, unknown>,
	body: string,
	options: WebhookPostOptions = {},
): Promise<Response> {
	const secret = resolveReferences(webhook.secret, vars);
	if ("problem" in secret) return Promise.reject(new Error(`its secret ${secret.problem}`));
	return postWebhook({ url: webhook.url, secret: secret.value, timeoutMs: webhook.timeoutMs }, body, options);
}
