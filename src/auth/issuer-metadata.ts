import { z } from "zod";
import { isLoopbackHost } from "../config.ts";
import { describeError } from "../mcp/gateway-error.ts";
import { readCapped } from "../mcp/read-capped.ts";

/**
 * Finding an external authorization server's keys: its metadata (RFC 8414,
 * or OpenID Connect Discovery) at the places MCP clients look, read capped
 * and checked to name the configured issuer, and the URLs keys may come from.
 */

/** Per request for metadata or keys; a token's verification must not hang on a slow issuer. */
export const FETCH_TIMEOUT_MS = 5_000;
/** Metadata documents and key sets are a few KB; anything bigger is refused unread. */
export const MAX_DOCUMENT_BYTES = 64 * 1024;

/**
 * The issuer's metadata or keys could not be had, so no verdict on the token
 * is possible: the caller answers 503, never 401, since the token may be fine.
 * The message is for operators (it names URLs), not for clients.
 */
export class IssuerUnavailable extends Error {
	constructor(message: string, options?: { cause?: unknown }) {
		super(message, options);
		this.name = "IssuerUnavailable";
	}
}

/** The part of an authorization server's metadata (RFC 8414) this module needs. */
const IssuerMetadataSchema = z.looseObject({
	issuer: z.string(),
	jwks_uri: z.string(),
});

/** An https URL, or http on a loopback host (local development): a URL keys may be fetched from. */
function isFetchableUrl(value: string): boolean {
	if (!URL.canParse(value)) return false;
	const url = new URL(value);
	return url.protocol === "https:" || (url.protocol === "http:" && isLoopbackHost(url.hostname));
}

/**
 * Where an issuer's metadata may be, in the order MCP's authorization spec
 * (2025-11-25, "Authorization Server Metadata Discovery") has clients try
 * them. With a path, RFC 8414 inserts it after the well-known prefix, and
 * OpenID Connect Discovery 1.0 appends the suffix to it as well.
 */
export function metadataUrls(issuer: string): string[] {
	const url = new URL(issuer);
	// RFC 8414 section 3.1: a terminating "/" of the issuer's path is removed before inserting it.
	const path = url.pathname.replace(/\/+$/, "");
	if (path === "") {
		return [`${url.origin}/.well-known/oauth-authorization-server`, `${url.origin}/.well-known/openid-configuration`];
	}
	return [
		`${url.origin}/.well-known/oauth-authorization-server${path}`,
		`${url.origin}/.well-known/openid-configuration${path}`,
		`${url.origin}${path}/.well-known/openid-configuration`,
	];
}

/**
 * The `jwks_uri` of the issuer's metadata: the first candidate that answers
 * 200 decides; the others are tried only while candidates answer otherwise.
 * A document that names another issuer is refused (RFC 8414 section 3.3),
 * as is one that cannot be fetched or read.
 */
export async function discoverJwksUrl(fetchImpl: typeof fetch, issuer: string): Promise<string> {
	const misses: string[] = [];
	for (const url of metadataUrls(issuer)) {
		let response: Response;
		try {
			response = await fetchImpl(url, {
				headers: { accept: "application/json" },
				// A redirect is a miss: keys are fetched only from where the issuer's own host says.
				redirect: "manual",
				signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
			});
		} catch (error) {
			throw new IssuerUnavailable(
				`the metadata of ${issuer} could not be fetched from ${url}: ${describeError(error)}`,
				{
					cause: error,
				},
			);
		}
		if (response.status !== 200) {
			await response.body?.cancel();
			misses.push(`${url} answered ${response.status}`);
			continue;
		}
		return jwksUrlFromDocument(issuer, url, response);
	}
	throw new IssuerUnavailable(`no metadata for ${issuer}: ${misses.join("; ")}`);
}

async function jwksUrlFromDocument(issuer: string, url: string, response: Response): Promise<string> {
	const body = response.body ? await readCapped(response.body, MAX_DOCUMENT_BYTES) : new Uint8Array();
	if (body === null) throw new IssuerUnavailable(`the metadata at ${url} is larger than ${MAX_DOCUMENT_BYTES} bytes`);
	let json: unknown;
	try {
		json = JSON.parse(new TextDecoder().decode(body));
	} catch (error) {
		throw new IssuerUnavailable(`the metadata at ${url} is not JSON`, { cause: error });
	}
	const parsed = IssuerMetadataSchema.safeParse(json);
	if (!parsed.success) {
		throw new IssuerUnavailable(`the metadata at ${url} lacks a string issuer and jwks_uri`, { cause: parsed.error });
	}
	const { issuer: named, jwks_uri: jwksUrl } = parsed.data;
	if (named !== issuer) {
		throw new IssuerUnavailable(`the metadata at ${url} names another issuer (${named}), not ${issuer}`);
	}
	if (!isFetchableUrl(jwksUrl)) {
		throw new IssuerUnavailable(`the metadata at ${url} names a jwks_uri that is not https: ${jwksUrl}`);
	}
	return jwksUrl;
}
