import * as oauth from "oauth4webapi";
import { GatewayError } from "../mcp/gateway-error.ts";
import { readCapped } from "../mcp/read-capped.ts";
import { UpstreamAuthorizationRefused } from "./authorization-refused.ts";

/** What every request to an upstream's authorization machinery is made under. */
export interface OAuthClientSettings {
	/** `ALLOW_HTTP_UPSTREAMS=true`: plain http allowed, and only to loopback. */
	allowHttpUpstreams: boolean;
	/** The fetch to use (tests may count or gate); the global one by default. */
	fetch?: typeof fetch;
}

/** Metadata documents and token responses are a few KiB; anything past this is refused, not read. */
export const MAX_OAUTH_REPLY_BYTES = 64 * 1024;
/** No authorization server needs longer to answer one request. */
const OAUTH_REQUEST_TIMEOUT_MS = 10_000;
const LOOPBACK_HOSTS = new Set(["127.0.0.1", "[::1]", "localhost"]);

/** The host part of a URL for a sentence: never its path or query, which may carry a code. */
function hostOf(url: URL): string {
	return `${url.protocol}//${url.host}`;
}

/**
 * Refuses a URL the gateway must not send OAuth requests to: anything but
 * https, except plain http to loopback when the operator allows http
 * upstreams (local development), the rule upstreams themselves follow.
 */
export function checkOAuthUrl(input: string | URL, settings: OAuthClientSettings, what: string): URL {
	let url: URL;
	try {
		url = new URL(input);
	} catch (error) {
		throw new UpstreamAuthorizationRefused("bad_metadata", `The ${what} is not a valid URL.`, { cause: error });
	}
	if (url.protocol === "https:") return url;
	if (url.protocol === "http:" && settings.allowHttpUpstreams && LOOPBACK_HOSTS.has(url.hostname)) return url;
	throw new UpstreamAuthorizationRefused(
		"insecure_url",
		`The ${what} (${hostOf(url)}) does not use https, so the gateway does not send anything there.`,
	);
}

/**
 * A fetch for oauth4webapi's `customFetch` and for discovery: the URL checked
 * first, redirects never followed (a 3xx is refused: metadata and token
 * endpoints have no reason to send a client elsewhere, and following one
 * could carry a code or a secret to another host), the body read up to
 * `MAX_OAUTH_REPLY_BYTES` and handed on as a fresh Response.
 */
export function guardedFetch(settings: OAuthClientSettings): typeof fetch {
	const send = settings.fetch ?? fetch;
	return async (input, init) => {
		const url = checkOAuthUrl(input instanceof Request ? input.url : input, settings, "authorization server's address");
		const response = await sendOrRefuse(send, url, init);
		return new Response(await cappedBody(response, url), {
			status: response.status,
			statusText: response.statusText,
			headers: response.headers,
		});
	};
}

/** Sends without following redirects; only the headers are read (the caller decides about the body). */
export async function sendOrRefuse(send: typeof fetch, url: URL, init?: RequestInit): Promise<Response> {
	let response: Response;
	try {
		response = await send(url.href, {
			...init,
			redirect: "manual",
			signal: init?.signal ?? AbortSignal.timeout(OAUTH_REQUEST_TIMEOUT_MS),
		});
	} catch (error) {
		// A served address (a connector's) fails with the gateway's own sentence: no connector online, one went away.
		const why = error instanceof GatewayError ? ` (${error.message})` : "";
		throw new UpstreamAuthorizationRefused(
			"unreachable",
			`The gateway could not reach ${hostOf(url)} to set up the connection${why}; try again later.`,
			{ cause: error },
		);
	}
	if (response.status >= 300 && response.status < 400) {
		await response.body?.cancel();
		throw new UpstreamAuthorizationRefused(
			"redirected",
			`The server at ${hostOf(url)} answered with a redirect where it must answer itself, so the gateway stopped there.`,
		);
	}
	return response;
}

async function cappedBody(response: Response, url: URL): Promise<Uint8Array> {
	const declared = Number(response.headers.get("content-length") ?? "0");
	if (declared > MAX_OAUTH_REPLY_BYTES) {
		await response.body?.cancel();
		throw oversized(url);
	}
	if (!response.body) return new Uint8Array();
	const body = await readCapped(response.body, MAX_OAUTH_REPLY_BYTES);
	if (body === null) throw oversized(url);
	return body;
}

function oversized(url: URL): UpstreamAuthorizationRefused {
	return new UpstreamAuthorizationRefused(
		"oversized",
		`The server at ${hostOf(url)} sent more than ${MAX_OAUTH_REPLY_BYTES / 1024} KiB where a short OAuth document belongs (oversized metadata or reply), so the gateway did not read it.`,
	);
}

/** The options every oauth4webapi call takes: the guarded fetch, and plain http only where it is allowed. */
export function oauthRequestOptions(settings: OAuthClientSettings): {
	[oauth.customFetch]: typeof fetch;
	[oauth.allowInsecureRequests]: boolean;
} {
	return { [oauth.customFetch]: guardedFetch(settings), [oauth.allowInsecureRequests]: settings.allowHttpUpstreams };
}
