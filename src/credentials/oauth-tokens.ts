import * as oauth from "oauth4webapi";
import { z } from "zod";
import { clientAuthentication, oauthClientOf } from "./client-authentication.ts";
import { type OAuthClientSettings, oauthRequestOptions } from "./guarded-fetch.ts";
import { RefreshRefused, type StoredConnection, type TokenClient, type TokenSet } from "./stored-connection.ts";
import { tokenSetOf } from "./token-set.ts";

/** The one setting the token client reads from the Worker's vars before config.ts carries it. */
const TokenClientVarsSchema = z.looseObject({ ALLOW_HTTP_UPSTREAMS: z.string().optional() });

/** The OAuth client settings the Worker's vars say: plain http (to loopback) only with `ALLOW_HTTP_UPSTREAMS=true`. */
export function oauthSettingsOf(vars: Record<string, unknown>): OAuthClientSettings {
	return { allowHttpUpstreams: TokenClientVarsSchema.parse(vars).ALLOW_HTTP_UPSTREAMS === "true" };
}

/** The authorization server as a stored connection knows it: enough to refresh and revoke. */
function authorizationServerOf(connection: StoredConnection): oauth.AuthorizationServer {
	return {
		issuer: connection.issuer,
		token_endpoint: connection.tokenEndpoint,
		...(connection.revocationEndpoint === null ? {} : { revocation_endpoint: connection.revocationEndpoint }),
	};
}

/**
 * The vault's token endpoint calls, over oauth4webapi, with `settings` (or,
 * when absent, what each call's vars say).
 */
export function tokenClientWith(options: { settings?: OAuthClientSettings; now?: () => number } = {}): TokenClient {
	const now = options.now ?? Date.now;
	const settingsFor = (vars: Record<string, unknown>) => options.settings ?? oauthSettingsOf(vars);
	return {
		/**
		 * RFC 6749 §6 with the RFC 8707 `resource`. `invalid_grant` (the refresh
		 * token expired, was revoked, or was rotated away) and `invalid_client`
		 * (the AS forgot the client) both end the connection: `RefreshRefused`.
		 */
		async refresh(connection, vars): Promise<TokenSet> {
			const refreshToken = connection.tokens.refreshToken;
			if (refreshToken === null) throw new RefreshRefused("the connection holds no refresh token");
			const as = authorizationServerOf(connection);
			const client = oauthClientOf(connection.client);
			let reply: oauth.TokenEndpointResponse;
			try {
				const response = await oauth.refreshTokenGrantRequest(
					as,
					client,
					clientAuthentication(connection.client, vars),
					refreshToken,
					{ ...oauthRequestOptions(settingsFor(vars)), additionalParameters: { resource: connection.resource } },
				);
				reply = await oauth.processRefreshTokenResponse(as, client, response);
			} catch (error) {
				if (
					error instanceof oauth.ResponseBodyError &&
					(error.error === "invalid_grant" || error.error === "invalid_client")
				) {
					throw new RefreshRefused(`the authorization server refused the refresh (${error.error})`, { cause: error });
				}
				throw error;
			}
			return tokenSetOf(reply, {
				resource: connection.resource,
				scopes: connection.tokens.scopes,
				previousRefreshToken: refreshToken,
				now: now(),
			});
		},

		/**
		 * RFC 7009, best effort, where the AS offers it: the refresh token first
		 * (which ends the grant at most servers), then the access token. A
		 * failure is logged without token material and does not throw: the
		 * tokens are deleted from the vault whatever the AS says.
		 */
		async revoke(connection, vars): Promise<void> {
			if (connection.revocationEndpoint === null) return;
			const as = authorizationServerOf(connection);
			const client = oauthClientOf(connection.client);
			const tokens: Array<[string, "refresh_token" | "access_token"]> = [];
			if (connection.tokens.refreshToken !== null) tokens.push([connection.tokens.refreshToken, "refresh_token"]);
			tokens.push([connection.tokens.accessToken, "access_token"]);
			for (const [token, hint] of tokens) {
				try {
					const response = await oauth.revocationRequest(
						as,
						client,
						clientAuthentication(connection.client, vars),
						token,
						{
							...oauthRequestOptions(settingsFor(vars)),
							additionalParameters: { token_type_hint: hint },
						},
					);
					await oauth.processRevocationResponse(response);
				} catch (error) {
					const why = error instanceof Error ? error.message : String(error);
					console.warn(`oauth revocation of a ${hint} of ${connection.server} at ${connection.issuer} failed: ${why}`);
				}
			}
		},
	};
}

/** The token client the vault uses: settings from the vars of each call. */
export const oauthTokenClient: TokenClient = tokenClientWith();
