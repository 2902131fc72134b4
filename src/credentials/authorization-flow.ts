import * as oauth from "oauth4webapi";
import { z } from "zod";
import { isServedAddress } from "../upstream/served-origins.ts";
import { UpstreamAuthorizationRefused } from "./authorization-refused.ts";
import { clientAuthentication, oauthClientOf } from "./client-authentication.ts";
import type { ClientStore, OAuthServerAuth } from "./client-registration.ts";
import { type OAuthClientSettings, oauthRequestOptions } from "./guarded-fetch.ts";
import { type OAuthClient, OAuthClientSchema, type StoredConnection } from "./stored-connection.ts";
import { tokenSetOf } from "./token-set.ts";
import { authorizationServerOf, type UpstreamAuthorization } from "./upstream-discovery.ts";

/**
 * What the caller keeps between sending a person to the authorization server
 * and their return (bound to the person and the browser, single use: the
 * caller's part): never sent anywhere but back to `completeAuthorization`.
 */
export const PendingAuthorizationSchema = z.object({
	state: z.string().min(1),
	codeVerifier: z.string().min(43),
	redirectUri: z.url(),
	resource: z.url(),
	scopes: z.array(z.string()),
	client: OAuthClientSchema,
});
export type PendingAuthorization = z.infer<typeof PendingAuthorizationSchema>;

/** A new connection, all but what the caller adds (`server`, `generation`, `connectedAt`). */
export type NewConnection = Omit<StoredConnection, "server" | "generation" | "connectedAt">;

/** The scopes to ask for: the operator's (`auth.scopes`), else what the resource offers, else none. */
export function scopesFor(auth: OAuthServerAuth, authorization: UpstreamAuthorization): string[] {
	return auth.scopes ?? authorization.scopesSupported;
}

/**
 * The authorization server's URL to send the person to: authorization code
 * with PKCE (S256), the RFC 8707 `resource`, the scopes, a fresh `state`.
 * Returns what the caller keeps until the person comes back.
 *
 * @example
 * const { url, pending } = await authorizationUrl({ authorization, client, redirectUri, scopes });
 * // store `pending` under pending.state, bound to the person; redirect the browser to `url`
 */
export async function authorizationUrl(input: {
	authorization: UpstreamAuthorization;
	client: OAuthClient;
	redirectUri: string;
	scopes: string[];
}): Promise<{ url: string; pending: PendingAuthorization }> {
	const { authorization, client, redirectUri, scopes } = input;
	const codeVerifier = oauth.generateRandomCodeVerifier();
	const state = oauth.generateRandomState();
	const url = new URL(authorization.authorizationEndpoint);
	url.searchParams.set("response_type", "code");
	url.searchParams.set("client_id", client.clientId);
	url.searchParams.set("redirect_uri", redirectUri);
	url.searchParams.set("code_challenge", await oauth.calculatePKCECodeChallenge(codeVerifier));
	url.searchParams.set("code_challenge_method", "S256");
	url.searchParams.set("resource", authorization.resource);
	url.searchParams.set("state", state);
	if (scopes.length > 0) url.searchParams.set("scope", scopes.join(" "));
	return {
		url: url.href,
		pending: { state, codeVerifier, redirectUri, resource: authorization.resource, scopes, client },
	};
}

export interface CompletionInput {
	/** The full URL the person's browser arrived at (the gateway's callback, with its query). */
	callbackUrl: string;
	pending: PendingAuthorization;
	authorization: UpstreamAuthorization;
	/** The Worker's vars: the operator's client secret reference resolves there. */
	vars: Record<string, unknown>;
	settings: OAuthClientSettings;
	/** Where a registered client is kept: dropped when the AS no longer accepts it. */
	store?: ClientStore;
	now?: () => number;
}

/**
 * Completes a person's authorization from the callback: the response checked
 * (it came back to the gateway's redirect URI; `state` is the flow's; RFC
 * 9207 `iss` is the AS's, and present where the AS says it sends it), the
 * code exchanged with the PKCE verifier and the `resource`, the tokens
 * checked to be for that resource. Every refusal is an
 * `UpstreamAuthorizationRefused` whose message the person can read.
 */
export async function completeAuthorization(input: CompletionInput): Promise<NewConnection> {
	const { pending, authorization, settings } = input;
	const callback = new URL(input.callbackUrl);
	const expected = new URL(pending.redirectUri);
	if (callback.origin !== expected.origin || callback.pathname !== expected.pathname) {
		throw new UpstreamAuthorizationRefused(
			"callback_elsewhere",
			"The authorization server sent the sign-in back to another address than the gateway's, so the gateway did not use it.",
		);
	}
	const as = authorizationServerOf(authorization);
	const client = oauthClientOf(pending.client);
	const parameters = validatedCallback(as, client, callback, pending.state, authorization);
	const now = input.now ?? Date.now;
	let reply: oauth.TokenEndpointResponse;
	try {
		const response = await oauth.authorizationCodeGrantRequest(
			as,
			client,
			clientAuthentication(pending.client, input.vars),
			parameters,
			pending.redirectUri,
			pending.codeVerifier,
			{ ...oauthRequestOptions(settings), additionalParameters: { resource: pending.resource } },
		);
		reply = await oauth.processAuthorizationCodeResponse(as, client, response);
	} catch (error) {
		if (error instanceof oauth.ResponseBodyError && error.error === "invalid_client") {
			// A registered client the AS has forgotten: the next connect registers again.
			if (input.store && (await input.store.get())?.clientId === pending.client.clientId) await input.store.drop();
			throw new UpstreamAuthorizationRefused(
				"client_refused",
				"The authorization server no longer accepts the gateway's client; connect again to start over.",
				{ cause: error },
			);
		}
		if (error instanceof UpstreamAuthorizationRefused) throw error;
		throw new UpstreamAuthorizationRefused(
			"token_refused",
			"The authorization server refused to issue tokens for this sign-in (it may have expired); connect again.",
			{ cause: error },
		);
	}
	return {
		issuer: authorization.issuer,
		tokenEndpoint: authorization.tokenEndpoint,
		revocationEndpoint: authorization.revocationEndpoint,
		client: pending.client,
		resource: pending.resource,
		tokens: tokenSetOf(reply, {
			resource: pending.resource,
			scopes: pending.scopes,
			previousRefreshToken: null,
			now: now(),
		}),
		refreshedAt: null,
	};
}

/**
 * The callback as it is checked. An authorization server the gateway stands in
 * for (a document's flows, decision 0105: its issuer is a served address) has
 * an issuer of the gateway's making, which the real server cannot know: the
 * RFC 9207 `iss` it may send names itself, so it is not compared. State and
 * PKCE still bind the callback to the flow the gateway started.
 */
function withoutStandInIssuer(callback: URL, authorization: UpstreamAuthorization): URL {
	if (!isServedAddress(authorization.issuer) || !callback.searchParams.has("iss")) return callback;
	const checked = new URL(callback);
	checked.searchParams.delete("iss");
	return checked;
}

/** oauth4webapi's check of the authorization response, its failures named by what was wrong. */
function validatedCallback(
	as: oauth.AuthorizationServer,
	client: oauth.Client,
	callback: URL,
	state: string,
	authorization: UpstreamAuthorization,
): URLSearchParams {
	try {
		return oauth.validateAuthResponse(as, client, withoutStandInIssuer(callback, authorization), state);
	} catch (error) {
		if (error instanceof oauth.AuthorizationResponseError) {
			throw new UpstreamAuthorizationRefused(
				"authorization_denied",
				error.error === "access_denied"
					? "The sign-in at the authorization server was declined, so nothing was connected."
					: `The authorization server did not authorize the gateway (${error.error.replace(/[^\w.-]/g, "").slice(0, 64)}).`,
				{ cause: error },
			);
		}
		const iss = callback.searchParams.get("iss");
		if (iss !== null && iss !== authorization.issuer) {
			throw new UpstreamAuthorizationRefused(
				"iss_mismatch",
				"The sign-in came back naming another authorization server than the one the gateway sent you to (RFC 9207), so it was refused.",
				{ cause: error },
			);
		}
		if (iss === null && authorization.issParameterSupported) {
			throw new UpstreamAuthorizationRefused(
				"iss_missing",
				"The sign-in came back without naming its authorization server, which that server promises to do (RFC 9207), so it was refused.",
				{ cause: error },
			);
		}
		throw new UpstreamAuthorizationRefused(
			"state_mismatch",
			"The sign-in that came back does not belong to the connection this link started, so it was refused.",
			{ cause: error },
		);
	}
}
