import { readCapped } from "../mcp/read-capped.ts";
import { startDeadline } from "../primitives/deadline.ts";
import { OPENAPI_ORIGIN } from "../registry/openapi-records.ts";
import type { PublishedApi } from "../registry/tables/openapi-apis-table.ts";

/*
 * How a person authorizes the gateway at a document server's API, for the
 * `oauth` auth mode: the protected resource metadata (RFC 9728) the gateway's
 * discovery reads at the server's address (decision 0092), and, for an API
 * whose authorization server is known only from the document's `flows`, that
 * server's metadata (RFC 8414) made from them (decision 0105).
 */

/** Where RFC 9728 and RFC 8414 put their documents, before the path of what they describe. */
const RESOURCE_METADATA = "/.well-known/oauth-protected-resource";
const AUTHORIZATION_SERVER_METADATA = "/.well-known/oauth-authorization-server";
/** Metadata is a few KiB; an API's answer past this is not read. */
const MAX_METADATA_BYTES = 64 * 1024;
const METADATA_FETCH_MS = 10_000;

/** What an address under OPENAPI_ORIGIN names besides a server's MCP endpoint. */
export type MetadataAddress =
	| { server: string; digest: string; part: "resource-metadata" }
	| { server: string; digest: string; part: "authorization-server" };

/** The metadata a well-known address under OPENAPI_ORIGIN names, or null. */
export function metadataAddressOf(url: string): MetadataAddress | null {
	const path = url.startsWith(`${OPENAPI_ORIGIN}/`) ? url.slice(OPENAPI_ORIGIN.length).split(/[?#]/)[0] : undefined;
	if (path === undefined) return null;
	for (const [prefix, part, tail] of [
		[RESOURCE_METADATA, "resource-metadata", ["mcp"]],
		[AUTHORIZATION_SERVER_METADATA, "authorization-server", []],
	] as const) {
		if (!path.startsWith(`${prefix}/`)) continue;
		const [server, digest, ...rest] = path.slice(prefix.length + 1).split("/");
		if (server === undefined || digest === undefined || rest.join("/") !== tail.join("/")) return null;
		return { server: decodeURIComponent(server), digest, part };
	}
	return null;
}

/** The issuer the gateway stands in for when the document's flows are all that is known of an authorization server. */
export function documentIssuer(server: string, digest: string): string {
	return `${OPENAPI_ORIGIN}/${encodeURIComponent(server)}/${digest}`;
}

/** The document's flow a person signs in with: the first authorization-code flow of an oauth2 scheme. */
function authorizationCodeFlow(published: PublishedApi) {
	for (const scheme of Object.values(published.api.securitySchemes)) {
		const flow = scheme.type === "oauth2" ? scheme.flows.authorizationCode : undefined;
		if (flow?.authorizationUrl && flow.tokenUrl)
			return { ...flow, authorizationUrl: flow.authorizationUrl, tokenUrl: flow.tokenUrl };
	}
	return null;
}

/** The issuer an openIdConnect scheme names: its discovery URL without the well-known suffix. */
function openIdIssuer(published: PublishedApi): string | null {
	for (const scheme of Object.values(published.api.securitySchemes)) {
		if (scheme.type !== "openIdConnect") continue;
		const issuer = scheme.openIdConnectUrl.replace(/\/\.well-known\/openid-configuration$/, "");
		if (URL.canParse(issuer)) return issuer;
	}
	return null;
}

/**
 * A document server's protected resource metadata: the API's own, where it
 * publishes RFC 9728 metadata (for its base path, then its root); else made
 * from the document: its resource is the API's base URL, and its
 * authorization server the openIdConnect scheme's issuer, or the one the
 * authorization-code flow describes (served here, `documentIssuer`). Null:
 * the document says nothing of how people authorize.
 */
export async function resourceMetadata(
	published: PublishedApi,
	digest: string,
	fetcher: typeof fetch,
): Promise<Record<string, unknown> | null> {
	const own = await publishedByApi(published.api.baseUrl, fetcher);
	if (own) return own;
	const flow = authorizationCodeFlow(published);
	const issuer =
		openIdIssuer(published) ??
		(flow ? ((await issuerAt(flow.authorizationUrl, fetcher)) ?? documentIssuer(published.server, digest)) : null);
	if (issuer === null) return null;
	return {
		resource: published.api.baseUrl,
		authorization_servers: [issuer],
		...(flow && Object.keys(flow.scopes).length > 0 ? { scopes_supported: Object.keys(flow.scopes) } : {}),
	};
}

/** The authorization server the document's authorization-code flow describes, as RFC 8414 metadata; null: none. */
export function authorizationServerMetadata(published: PublishedApi, digest: string): Record<string, unknown> | null {
	const flow = authorizationCodeFlow(published);
	if (!flow) return null;
	return {
		issuer: documentIssuer(published.server, digest),
		authorization_endpoint: flow.authorizationUrl,
		token_endpoint: flow.tokenUrl,
		response_types_supported: ["code"],
		grant_types_supported: ["authorization_code", "refresh_token"],
		code_challenge_methods_supported: ["S256"],
		token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
		...(Object.keys(flow.scopes).length > 0 ? { scopes_supported: Object.keys(flow.scopes) } : {}),
	};
}

/**
 * The issuer of the authorization server whose endpoint `authorizationUrl`
 * is, when it publishes RFC 8414 metadata at its origin naming that endpoint:
 * the gateway then discovers it as it discovers any (with its registration
 * endpoint, and its RFC 9207 `iss` checked). Null: the flow is all there is.
 */
async function issuerAt(authorizationUrl: string, fetcher: typeof fetch): Promise<string | null> {
	const origin = new URL(authorizationUrl).origin;
	const metadata = await jsonAt(new URL(AUTHORIZATION_SERVER_METADATA, origin), fetcher);
	const issuer = typeof metadata?.issuer === "string" ? metadata.issuer.replace(/\/$/, "") : null;
	return issuer === origin && metadata?.authorization_endpoint === authorizationUrl ? issuer : null;
}

/** A JSON object at `url`, or null for anything else; never followed through a redirect. */
async function jsonAt(url: URL, fetcher: typeof fetch): Promise<Record<string, unknown> | null> {
	const deadline = startDeadline(METADATA_FETCH_MS);
	try {
		const response = await fetcher(url, {
			headers: { accept: "application/json" },
			redirect: "manual",
			signal: deadline.signal,
		});
		if (response.status !== 200 || !response.body) {
			await response.body?.cancel();
			return null;
		}
		const bytes = await readCapped(response.body, MAX_METADATA_BYTES);
		const body: unknown = bytes === null ? null : JSON.parse(new TextDecoder().decode(bytes));
		return body !== null && typeof body === "object" && !Array.isArray(body)
			? Object.fromEntries(Object.entries(body))
			: null;
	} catch (error) {
		// What publishes nothing usable is described by the document instead; the discovery that follows
		// says what is missing if the document does not describe it either.
		console.warn(`openapi: no metadata at ${url.origin}: ${String(error)}`);
		return null;
	} finally {
		deadline.clear();
	}
}

/** The API's own RFC 9728 metadata, if it publishes any; never followed through a redirect. */
async function publishedByApi(baseUrl: string, fetcher: typeof fetch): Promise<Record<string, unknown> | null> {
	const base = new URL(baseUrl);
	const path = base.pathname.replace(/\/$/, "");
	const candidates = [
		...(path === "" ? [] : [new URL(`${RESOURCE_METADATA}${path}`, base)]),
		new URL(RESOURCE_METADATA, base),
	];
	for (const url of candidates) {
		const metadata = await jsonAt(url, fetcher);
		if (metadata && typeof metadata.resource === "string") return metadata;
	}
	return null;
}
