import * as oauth from "oauth4webapi";
import { z } from "zod";
import { isLoopbackHost, type OAuthSettings } from "../config.ts";
import { describeError, GatewayError } from "../mcp/gateway-error.ts";
import { isolateCache } from "../primitives/expiring-map.ts";
import { type ClaimedIdentity, identityFromClaims } from "./identity.ts";

type Oidc = Extract<OAuthSettings, { mode: "gateway" }>["oidc"];

/** How long an isolate trusts the provider's discovery document before reading it again. */
const DISCOVERY_TTL_MS = 60 * 60 * 1000;
/** The providers' metadata, settled: a discovery under way belongs to the sign-in that started it. */
const discovered = isolateCache<oauth.AuthorizationServer>({ maxEntries: 4 });

/** Plain http is tolerated only for a provider on this machine (npm start, tests). */
function insecureAllowed(issuer: string): boolean {
	const url = new URL(issuer);
	return url.protocol === "http:" && isLoopbackHost(url.hostname);
}

/** The provider's metadata (OpenID discovery), per isolate; a failure is not kept, so the next sign-in retries. */
function provider(oidc: Oidc): Promise<oauth.AuthorizationServer> {
	const issuer = new URL(oidc.issuer);
	return discovered.load(
		oidc.issuer,
		async () =>
			oauth.processDiscoveryResponse(
				issuer,
				await oauth.discoveryRequest(issuer, {
					algorithm: "oidc",
					signal: AbortSignal.timeout(10_000),
					[oauth.allowInsecureRequests]: insecureAllowed(oidc.issuer),
				}),
			),
		() => DISCOVERY_TTL_MS,
		// One sign-in step discovers at most once; it never waits on another request's discovery.
		{},
	);
}

/** What the gateway keeps between sending someone to the provider and their return (encrypted by the library). */
export const SignInDataSchema = z.object({ verifier: z.string(), nonce: z.string() });
export type SignInData = z.infer<typeof SignInDataSchema>;

export function newSignInData(): SignInData {
	return { verifier: oauth.generateRandomCodeVerifier(), nonce: oauth.generateRandomNonce() };
}

/** Where to send the person to sign in at the provider: authorization code with PKCE (S256), a nonce, our state. */
export async function providerSignInUrl(
	oidc: Oidc,
	redirectUri: string,
	state: string,
	data: SignInData,
): Promise<URL> {
	const as = await reachProvider(oidc);
	if (!as.authorization_endpoint) throw providerFailed("its metadata names no authorization endpoint");
	const url = new URL(as.authorization_endpoint);
	url.searchParams.set("client_id", oidc.clientId);
	url.searchParams.set("redirect_uri", redirectUri);
	url.searchParams.set("response_type", "code");
	url.searchParams.set("scope", oidc.scopes);
	url.searchParams.set("state", state);
	url.searchParams.set("nonce", data.nonce);
	url.searchParams.set("code_challenge", await oauth.calculatePKCECodeChallenge(data.verifier));
	url.searchParams.set("code_challenge_method", "S256");
	return url;
}

/**
 * The identity the provider vouches for at the callback: the response is
 * checked (its `iss` when the provider sends one, RFC 9207; `state` was
 * already matched to this browser by the library), the code exchanged with
 * the PKCE verifier, and the ID token's issuer, audience, expiry and nonce
 * verified; its address counts only when verified (`identityFromClaims`).
 * Throws `SignInRefused` for anything the person or the provider got wrong
 * (shown to the person), `GatewayError` 502 when the provider fails.
 */
export async function identityFromCallback(
	oidc: Oidc,
	callbackUrl: URL,
	redirectUri: string,
	data: SignInData,
): Promise<ClaimedIdentity> {
	const as = await reachProvider(oidc);
	const client: oauth.Client = { client_id: oidc.clientId };
	const insecure = { [oauth.allowInsecureRequests]: insecureAllowed(oidc.issuer) };
	let claims: oauth.IDToken | undefined;
	try {
		const params = oauth.validateAuthResponse(as, client, callbackUrl, oauth.skipStateCheck);
		const response = await oauth.authorizationCodeGrantRequest(
			as,
			client,
			oauth.ClientSecretBasic(oidc.clientSecret),
			params,
			redirectUri,
			data.verifier,
			{ ...insecure, signal: AbortSignal.timeout(10_000) },
		);
		const result = await oauth.processAuthorizationCodeResponse(as, client, response, {
			expectedNonce: data.nonce,
			requireIdToken: true,
		});
		claims = oauth.getValidatedIdTokenClaims(result);
	} catch (error) {
		if (error instanceof oauth.AuthorizationResponseError || error instanceof oauth.ResponseBodyError) {
			throw new SignInRefused(`the identity provider refused the sign-in (${error.error})`);
		}
		if (error instanceof oauth.OperationProcessingError) {
			throw new SignInRefused(`the identity provider's answer did not verify (${error.message})`);
		}
		throw providerFailed(describeError(error));
	}
	const claimed = identityFromClaims(oidc.issuer, claims, { emailsVerified: oidc.emailsVerified });
	if (!claimed) throw new SignInRefused("the identity provider's ID token names no subject");
	return claimed;
}

/** A sign-in that cannot complete for a reason the person should be told. */
export class SignInRefused extends Error {}

async function reachProvider(oidc: Oidc): Promise<oauth.AuthorizationServer> {
	try {
		return await provider(oidc);
	} catch (error) {
		throw providerFailed(`its discovery document could not be read: ${describeError(error)}`);
	}
}

function providerFailed(detail: string): GatewayError {
	console.warn(JSON.stringify({ event: "oidc_provider_failed", detail }));
	return new GatewayError(
		"identity_provider_unavailable",
		"The identity provider could not be reached; try signing in again later.",
	);
}
