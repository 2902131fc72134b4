import * as oauth from "oauth4webapi";
import { z } from "zod";
import { INITIALIZE } from "../mcp/methods.ts";
import { isServedAddress, upstreamFetch } from "../upstream/served-origins.ts";
import { UpstreamAuthorizationRefused } from "./authorization-refused.ts";
import {
	checkOAuthUrl,
	guardedFetch,
	type OAuthClientSettings,
	oauthRequestOptions,
	sendOrRefuse,
} from "./guarded-fetch.ts";
import {
	allowedResource,
	servedIssuer,
	servedMetadataUrl,
	servedResource,
	wellKnownResourceUrls,
} from "./resource-checks.ts";

/**
 * Where and how a person authorizes the gateway at one upstream: its
 * protected resource (RFC 9728) and the authorization server that resource
 * names (RFC 8414 / OpenID Connect Discovery), as discovery found them.
 * Parsed, so it may be cached or stored and read back.
 */
export const UpstreamAuthorizationSchema = z.object({
	/** The RFC 8707 resource tokens are asked for: the resource metadata's `resource`. */
	resource: z.url(),
	issuer: z.url(),
	authorizationEndpoint: z.url(),
	tokenEndpoint: z.url(),
	registrationEndpoint: z.url().nullable(),
	revocationEndpoint: z.url().nullable(),
	/** The AS accepts a URL as client id that names a Client ID Metadata Document. */
	cimdSupported: z.boolean(),
	/** RFC 9207: the AS puts `iss` in every authorization response (so one without it is refused). */
	issParameterSupported: z.boolean(),
	/** The resource's `scopes_supported`, else the AS's; empty when neither says. */
	scopesSupported: z.array(z.string()),
	/** How the AS authenticates clients at its token endpoint (RFC 8414 default: client_secret_basic). */
	tokenEndpointAuthMethods: z.array(z.string()),
	/** The authorization server's metadata as it was served (oauth4webapi takes it as is). */
	metadata: z.record(z.string(), z.unknown()),
});
export type UpstreamAuthorization = z.infer<typeof UpstreamAuthorizationSchema>;

/** The authorization server as oauth4webapi takes it, from what discovery parsed. */
export function authorizationServerOf(authorization: UpstreamAuthorization): oauth.AuthorizationServer {
	return {
		issuer: authorization.issuer,
		authorization_endpoint: authorization.authorizationEndpoint,
		token_endpoint: authorization.tokenEndpoint,
		...(authorization.registrationEndpoint === null
			? {}
			: { registration_endpoint: authorization.registrationEndpoint }),
		...(authorization.revocationEndpoint === null ? {} : { revocation_endpoint: authorization.revocationEndpoint }),
		authorization_response_iss_parameter_supported: authorization.issParameterSupported,
	};
}

/** The parts of RFC 9728 metadata discovery reads. */
const ResourceMetadataSchema = z.looseObject({
	resource: z.string(),
	authorization_servers: z.array(z.string()).min(1, "it names no authorization server"),
	scopes_supported: z.array(z.string()).optional(),
});

/** The parts of RFC 8414 metadata the gateway relies on. */
const AuthorizationServerMetadataSchema = z.looseObject({
	issuer: z.string(),
	authorization_endpoint: z.string(),
	token_endpoint: z.string(),
	registration_endpoint: z.string().optional(),
	revocation_endpoint: z.string().optional(),
	scopes_supported: z.array(z.string()).optional(),
	code_challenge_methods_supported: z.array(z.string()).optional(),
	token_endpoint_auth_methods_supported: z.array(z.string()).optional(),
	client_id_metadata_document_supported: z.boolean().optional(),
	authorization_response_iss_parameter_supported: z.boolean().optional(),
});

/** An MCP initialize, sent without credentials to be told where to authorize (MCP authorization, "Discovery"). */
const PROBE_INITIALIZE = {
	jsonrpc: "2.0",
	id: 0,
	method: INITIALIZE,
	params: {
		protocolVersion: "2025-11-25",
		capabilities: {},
		clientInfo: { name: "mcp-edge-gateway", version: "1" },
	},
};

export interface DiscoveryInput {
	/** The upstream MCP server's URL, as registered. */
	serverUrl: string;
	/** A `WWW-Authenticate` value the upstream already answered with; without it the upstream is asked. */
	challenge?: string | null;
	settings: OAuthClientSettings;
}

/**
 * Discovers how a person authorizes the gateway at an upstream, as an MCP
 * client does: the `resource_metadata` of the upstream's 401 challenge (from
 * `challenge`, or from an unauthenticated initialize sent now), else the
 * well-known URL for the server's path, then the root; then the first
 * authorization server it names, by RFC 8414 metadata, then OpenID metadata,
 * its `issuer` checked. Every step refuses redirects, oversized replies and
 * plain http (see guarded-fetch.ts) with an `UpstreamAuthorizationRefused`.
 *
 * @example
 * const found = await discoverUpstreamAuthorization({ serverUrl: "https://mcp.example/mcp", settings });
 * found.authorizationEndpoint; // "https://auth.example/authorize"
 */
export async function discoverUpstreamAuthorization(input: DiscoveryInput): Promise<UpstreamAuthorization> {
	const { settings } = input;
	const serverUrl = checkOAuthUrl(input.serverUrl, settings, "upstream server's address");
	// What is asked of the upstream itself goes through the upstream fetch, so a served address (a
	// connector's, a document's) answers it; the authorization server is asked over the network.
	const upstreamSettings: OAuthClientSettings = { ...settings, fetch: settings.fetch ?? upstreamFetchOf };
	const challenge = input.challenge === undefined ? await probeChallenge(serverUrl, upstreamSettings) : input.challenge;
	const resourceMetadata = await readResourceMetadata(serverUrl, challenge, upstreamSettings);
	const [first = ""] = resourceMetadata.authorization_servers;
	const issuer = checkOAuthUrl(first, settings, "authorization server's address");
	const metadata = await readAuthorizationServerMetadata(
		issuer,
		servedIssuer(issuer, serverUrl) ? upstreamSettings : settings,
	);
	const endpoint = (url: string | undefined, what: string) =>
		url === undefined ? null : checkOAuthUrl(url, settings, what).href;
	const methods = metadata.code_challenge_methods_supported;
	if (methods !== undefined && !methods.includes("S256")) {
		throw new UpstreamAuthorizationRefused(
			"bad_metadata",
			`The authorization server ${issuer.host} does not offer PKCE with S256, which the gateway requires.`,
		);
	}
	const found = UpstreamAuthorizationSchema.safeParse({
		resource: resourceMetadata.resource,
		issuer: metadata.issuer,
		authorizationEndpoint: endpoint(metadata.authorization_endpoint, "authorization endpoint"),
		tokenEndpoint: endpoint(metadata.token_endpoint, "token endpoint"),
		registrationEndpoint: endpoint(metadata.registration_endpoint, "registration endpoint"),
		revocationEndpoint: endpoint(metadata.revocation_endpoint, "revocation endpoint"),
		cimdSupported: metadata.client_id_metadata_document_supported === true,
		issParameterSupported: metadata.authorization_response_iss_parameter_supported === true,
		scopesSupported: resourceMetadata.scopes_supported ?? metadata.scopes_supported ?? [],
		tokenEndpointAuthMethods: metadata.token_endpoint_auth_methods_supported ?? ["client_secret_basic"],
		metadata,
	});
	if (!found.success) {
		throw new UpstreamAuthorizationRefused(
			"bad_metadata",
			`The authorization server ${issuer.host} publishes metadata the gateway cannot use (${found.error.issues[0]?.path.join(".") ?? "malformed"}).`,
		);
	}
	return found.data;
}

/** `upstreamFetch` as a `fetch`: discovery's requests are made with a URL string. */
const upstreamFetchOf: typeof fetch = (input, init) =>
	upstreamFetch(input instanceof Request ? input.url : String(input), init ?? {});

/** Sends the unauthenticated initialize and returns the 401's challenge (null: none, or not a 401). */
async function probeChallenge(serverUrl: URL, settings: OAuthClientSettings): Promise<string | null> {
	const response = await sendOrRefuse(settings.fetch ?? fetch, serverUrl, {
		method: "POST",
		headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
		body: JSON.stringify(PROBE_INITIALIZE),
	});
	// The body is never needed, and an SSE reply would stay open.
	await response.body?.cancel();
	return response.status === 401 ? response.headers.get("www-authenticate") : null;
}

/** The `resource_metadata` parameter of a Bearer challenge (RFC 9728 §5.1), or null. */
export function resourceMetadataOf(challenge: string | null): string | null {
	if (!challenge) return null;
	const match = /(?:^|[\s,])resource_metadata\s*=\s*(?:"([^"]*)"|([^\s,]+))/i.exec(challenge);
	return match ? (match[1] ?? match[2] ?? null) : null;
}

async function readResourceMetadata(serverUrl: URL, challenge: string | null, settings: OAuthClientSettings) {
	const named = resourceMetadataOf(challenge);
	const served = isServedAddress(serverUrl.href);
	const candidates = named
		? [served ? servedMetadataUrl(named, serverUrl) : checkOAuthUrl(named, settings, "resource metadata address")]
		: // A served address has no root of its own: the served fetcher answers for the server's path only.
			wellKnownResourceUrls(serverUrl).slice(0, served ? 1 : undefined);
	const send = guardedFetch(settings);
	for (const [index, url] of candidates.entries()) {
		const response = await send(url.href, { headers: { accept: "application/json" } });
		// Only the derived URLs are tried in turn; one the server named must answer.
		if (response.status === 404 && !named && index < candidates.length - 1) continue;
		if (response.status !== 200) {
			throw new UpstreamAuthorizationRefused(
				"bad_metadata",
				`The upstream at ${serverUrl.host} publishes no protected resource metadata (HTTP ${response.status} at ${url.host}), so the gateway cannot tell where people authorize.`,
			);
		}
		const body = await response
			.clone()
			.json()
			.catch((error: unknown) => {
				throw new UpstreamAuthorizationRefused(
					"bad_metadata",
					`The upstream's protected resource metadata at ${url.host} is not JSON (HTTP ${response.status}).`,
					{ cause: error },
				);
			});
		const parsed = ResourceMetadataSchema.safeParse(body);
		if (!parsed.success) {
			throw new UpstreamAuthorizationRefused(
				"bad_metadata",
				`The upstream's protected resource metadata at ${url.host} is not usable: ${parsed.error.issues[0]?.message ?? "malformed"}.`,
			);
		}
		const resource = served
			? servedResource(parsed.data.resource, serverUrl)
			: allowedResource(parsed.data.resource, serverUrl);
		try {
			await oauth.processResourceDiscoveryResponse(resource, response);
		} catch (error) {
			throw new UpstreamAuthorizationRefused(
				"bad_metadata",
				`The upstream's protected resource metadata at ${url.host} does not follow RFC 9728.`,
				{ cause: error },
			);
		}
		return { ...parsed.data, resource: resource.href };
	}
	// Unreachable: the last candidate either answered 200 or was refused above.
	throw new UpstreamAuthorizationRefused(
		"bad_metadata",
		`The upstream at ${serverUrl.host} publishes no protected resource metadata.`,
	);
}

async function readAuthorizationServerMetadata(issuer: URL, settings: OAuthClientSettings) {
	const options = oauthRequestOptions(settings);
	let response = await oauth.discoveryRequest(issuer, { ...options, algorithm: "oauth2" });
	if (response.status === 404) response = await oauth.discoveryRequest(issuer, { ...options, algorithm: "oidc" });
	let served: oauth.AuthorizationServer;
	try {
		served = await oauth.processDiscoveryResponse(issuer, response);
	} catch (error) {
		if (error instanceof oauth.OperationProcessingError && error.code === oauth.JSON_ATTRIBUTE_COMPARISON) {
			throw new UpstreamAuthorizationRefused(
				"issuer_mismatch",
				`The authorization server at ${issuer.host} presents itself as another issuer than the one the upstream names, so the gateway does not trust it.`,
				{ cause: error },
			);
		}
		throw new UpstreamAuthorizationRefused(
			"bad_metadata",
			`The authorization server at ${issuer.host} publishes no usable metadata (RFC 8414 or OpenID Connect Discovery).`,
			{ cause: error },
		);
	}
	const parsed = AuthorizationServerMetadataSchema.safeParse(served);
	if (!parsed.success) {
		throw new UpstreamAuthorizationRefused(
			"bad_metadata",
			`The authorization server at ${issuer.host} publishes metadata without ${parsed.error.issues[0]?.path.join(".") ?? "required fields"}.`,
		);
	}
	return parsed.data;
}
