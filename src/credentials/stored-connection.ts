import { z } from "zod";

/**
 * How the gateway authenticates itself as an OAuth client at an upstream's
 * authorization server: the operator's configured client (its secret a
 * `${UPSTREAM_…}` reference, resolved from the Worker's secrets at use), a
 * client registered dynamically (its secret, if any, kept as given — sealed
 * in the vault like the tokens), or the gateway's Client ID Metadata Document
 * (a URL as client id, no secret).
 */
export const OAuthClientSchema = z.object({
	clientId: z.string().min(1),
	/** A secret the authorization server issued at registration; null when there is none or it is a reference. */
	clientSecret: z.string().nullable(),
	/** `${UPSTREAM_…}`: the operator's secret, resolved at use; null otherwise. */
	secretReference: z.string().nullable(),
	authMethod: z.enum(["none", "client_secret_basic", "client_secret_post"]),
});
export type OAuthClient = z.infer<typeof OAuthClientSchema>;

/** What a token endpoint answered, as the vault keeps it. `expiresAt` in ms; null: the server did not say. */
export const TokenSetSchema = z.object({
	accessToken: z.string().min(1),
	refreshToken: z.string().nullable(),
	expiresAt: z.number().nullable(),
	/** Scopes granted, as the token endpoint said (or as asked, when it did not say). */
	scopes: z.array(z.string()),
});
export type TokenSet = z.infer<typeof TokenSetSchema>;

/**
 * One person's connection to one upstream server: everything a refresh or a
 * revocation needs without discovering again, and the tokens. Kept only
 * sealed (AES-GCM) in the person's vault object; never logged, never sent to
 * a client.
 */
export const StoredConnectionSchema = z.object({
	server: z.string(),
	/** The server's incarnation it was made for: a server deleted and created again needs a new connection. */
	generation: z.string(),
	/** The authorization server's issuer identifier (RFC 8414), and its endpoints. */
	issuer: z.string(),
	tokenEndpoint: z.string(),
	revocationEndpoint: z.string().nullable(),
	client: OAuthClientSchema,
	/** The RFC 8707 resource the tokens were asked for: the upstream's protected resource. */
	resource: z.string(),
	tokens: TokenSetSchema,
	connectedAt: z.number(),
	refreshedAt: z.number().nullable(),
});
export type StoredConnection = z.infer<typeof StoredConnectionSchema>;

/** A refresh the authorization server refused for good (`invalid_grant`): the person must connect again. */
export class RefreshRefused extends Error {}

/** The token endpoint calls the vault makes (refresh, revocation), over `oauth4webapi`. */
export interface TokenClient {
	/** Throws `RefreshRefused` on `invalid_grant`; any other failure throws as it is (the tokens are kept). */
	refresh(connection: StoredConnection, vars: Record<string, unknown>): Promise<TokenSet>;
	/** RFC 7009, best effort: resolves whether or not the server offers it or accepts. */
	revoke(connection: StoredConnection, vars: Record<string, unknown>): Promise<void>;
}
