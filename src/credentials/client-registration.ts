import * as oauth from "oauth4webapi";
import { z } from "zod";
import { UpstreamAuthorizationRefused } from "./authorization-refused.ts";
import { clientAuthentication, oauthClientOf } from "./client-authentication.ts";
import { type OAuthClientSettings, oauthRequestOptions } from "./guarded-fetch.ts";
import type { OAuthClient } from "./stored-connection.ts";
import { authorizationServerOf, type UpstreamAuthorization } from "./upstream-discovery.ts";

/** The gateway's Client ID Metadata Document, at its origin: its client id where an AS accepts one. */
export const CLIENT_METADATA_PATH = "/oauth/upstream-client.json";
/** Where authorization servers send people back to the gateway. */
export const CONNECT_CALLBACK_PATH = "/connect/callback";
const CLIENT_NAME = "MCP Edge Gateway";

/** The OAuth part of a server's `auth` (`{ type: "oauth", … }`) that picks the client. */
export interface OAuthServerAuth {
	clientId?: string | undefined;
	/** Only a `${UPSTREAM_…}` reference; resolved at use. */
	clientSecret?: string | undefined;
	scopes?: string[] | undefined;
}

/**
 * Where the client registered dynamically at one server's authorization
 * server is kept (by the caller, per server), so the gateway registers once
 * and not once per person.
 */
export interface ClientStore {
	get(): Promise<OAuthClient | null>;
	put(client: OAuthClient): Promise<void>;
	drop(): Promise<void>;
}

/** The gateway's redirect URI at `origin` (e.g. `https://gateway.example`). */
export function connectCallbackUrl(origin: string): string {
	return new URL(CONNECT_CALLBACK_PATH, origin).href;
}

/**
 * The Client ID Metadata Document the gateway publishes for itself at
 * `<origin>/oauth/upstream-client.json`: a public client (PKCE, no secret)
 * whose only redirect URI is the gateway's callback.
 */
export function clientMetadataDocument(origin: string) {
	return {
		client_id: new URL(CLIENT_METADATA_PATH, origin).href,
		client_name: CLIENT_NAME,
		client_uri: new URL("/", origin).href,
		redirect_uris: [connectCallbackUrl(origin)],
		grant_types: ["authorization_code", "refresh_token"],
		response_types: ["code"],
		token_endpoint_auth_method: "none",
	};
}

const RegisteredClientSchema = z.looseObject({
	client_id: z.string().min(1),
	client_secret: z.string().min(1).optional(),
	token_endpoint_auth_method: z.string().optional(),
});

export interface ClientInput {
	auth: OAuthServerAuth;
	authorization: UpstreamAuthorization;
	/** The gateway's public origin: its redirect URI and its metadata document live there. */
	origin: string;
	store: ClientStore;
	settings: OAuthClientSettings;
	/**
	 * Check that the authorization server still knows a kept registered client
	 * before using it (default true): one token request per connect, so that a
	 * person is never sent to an AS that will only show them "invalid client".
	 */
	verifyKept?: boolean;
}

/**
 * The client the gateway authorizes as at this server, in order: the
 * operator's configured client; its Client ID Metadata Document, when the AS
 * accepts one (an https origin only: the document's URL is the id); a client
 * kept from an earlier registration; a new Dynamic Client Registration, kept.
 * A kept client the AS refuses (`invalid_client`) is dropped and replaced.
 */
export async function clientFor(input: ClientInput): Promise<OAuthClient> {
	const { auth, authorization, origin } = input;
	if (auth.clientId !== undefined) {
		const secretReference = auth.clientSecret ?? null;
		return {
			clientId: auth.clientId,
			clientSecret: null,
			secretReference,
			authMethod: secretReference === null ? "none" : secretMethod(authorization),
		};
	}
	if (authorization.cimdSupported && new URL(origin).protocol === "https:") {
		return {
			clientId: clientMetadataDocument(origin).client_id,
			clientSecret: null,
			secretReference: null,
			authMethod: "none",
		};
	}
	const kept = await input.store.get();
	if (kept && (input.verifyKept === false || (await stillRegistered(kept, authorization, input.settings)))) return kept;
	if (kept) await input.store.drop();
	const registered = await registerClient(authorization, origin, input.settings);
	await input.store.put(registered);
	return registered;
}

/** The secret method the AS offers: Basic where it says so (the RFC 8414 default), else the form body. */
function secretMethod(authorization: UpstreamAuthorization): OAuthClient["authMethod"] {
	const offered = authorization.tokenEndpointAuthMethods;
	return offered.includes("client_secret_basic") || !offered.includes("client_secret_post")
		? "client_secret_basic"
		: "client_secret_post";
}

/** RFC 7591: registers the gateway as a client of this AS (a public one where the AS allows). */
export async function registerClient(
	authorization: UpstreamAuthorization,
	origin: string,
	settings: OAuthClientSettings,
): Promise<OAuthClient> {
	if (authorization.registrationEndpoint === null) {
		throw new UpstreamAuthorizationRefused(
			"registration_failed",
			`The authorization server ${new URL(authorization.issuer).host} does not let the gateway register itself, and no client is configured for this server; the operator must configure one.`,
		);
	}
	const offered = authorization.tokenEndpointAuthMethods;
	const method: OAuthClient["authMethod"] = offered.includes("none") ? "none" : secretMethod(authorization);
	const { client_id: _id, ...metadata } = clientMetadataDocument(origin);
	let registered: z.infer<typeof RegisteredClientSchema>;
	try {
		const response = await oauth.dynamicClientRegistrationRequest(
			authorizationServerOf(authorization),
			{ ...metadata, token_endpoint_auth_method: method },
			oauthRequestOptions(settings),
		);
		registered = RegisteredClientSchema.parse(await oauth.processDynamicClientRegistrationResponse(response));
	} catch (error) {
		if (error instanceof UpstreamAuthorizationRefused) throw error;
		throw new UpstreamAuthorizationRefused(
			"registration_failed",
			`The authorization server ${new URL(authorization.issuer).host} refused to register the gateway as a client.`,
			{ cause: error },
		);
	}
	const authMethod = z
		.enum(["none", "client_secret_basic", "client_secret_post"])
		.catch(method)
		.parse(registered.token_endpoint_auth_method ?? method);
	return {
		clientId: registered.client_id,
		clientSecret: registered.client_secret ?? null,
		secretReference: null,
		authMethod,
	};
}

/**
 * Whether the AS still knows `client`: a refresh with a token that cannot
 * exist is refused with `invalid_grant` for a known client and with
 * `invalid_client` for one it has forgotten (client authentication comes
 * first, RFC 6749 §3.2.1). Costs one token endpoint request.
 */
async function stillRegistered(
	client: OAuthClient,
	authorization: UpstreamAuthorization,
	settings: OAuthClientSettings,
): Promise<boolean> {
	const as = authorizationServerOf(authorization);
	const probe = `probe-${oauth.generateRandomState()}`;
	try {
		const response = await oauth.refreshTokenGrantRequest(
			as,
			oauthClientOf(client),
			clientAuthentication(client, {}),
			probe,
			oauthRequestOptions(settings),
		);
		await oauth.processRefreshTokenResponse(as, oauthClientOf(client), response);
		return true;
	} catch (error) {
		if (error instanceof oauth.ResponseBodyError) return error.error !== "invalid_client";
		throw error;
	}
}
