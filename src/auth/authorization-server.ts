import { OAuthAuthorizationServer } from "@cloudflare/workers-oauth-provider";
import { z } from "zod";
import { type Settings, settingsFrom } from "../config.ts";
import type { Env } from "../env.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import { sha256Hex } from "../primitives/crypto.ts";
import { type Identity, IdentitySchema } from "../registry/access-rules.ts";

/** Where the gateway's authorization server answers, under its issuer (the gateway's origin). */
export const AUTHORIZE_PATH = "/authorize";
export const TOKEN_PATH = "/oauth/token";
export const REGISTER_PATH = "/oauth/register";
/** The one scope the gateway grants: what a token may use is decided by access rules, not scopes. */
export const GATEWAY_SCOPE = "mcp";

/** Every `/mcp...` endpoint is one OAuth resource: tokens for `<origin>/mcp` work on all of them (RFC 9728 §5.1). */
export function resourceOf(origin: string): string {
	return `${origin}/mcp`;
}

/**
 * The authorization server per origin and token lifetimes (its issuer is the origin the request
 * came to, which host validation already limited to the gateway's own). The
 * library keeps grants, tokens and clients in `OAUTH_KV`, tokens and codes
 * only as hashes; it serves RFC 8414 metadata with RFC 9207 `iss`, the token
 * endpoint (code + PKCE S256, refresh with rotation, RFC 7009 revocation),
 * dynamic registration and Client ID Metadata Documents.
 *
 * Kept per isolate for at most MAX_KEPT_ORIGINS origins, the least recently
 * used going first: the host check ignores ports and a wildcard host admits
 * every subdomain, so the origins a client can spell are unbounded, while a
 * deployment answers on a few. The issuer must be the origin the client
 * used (RFC 8414 §3.3), so origins are not folded into one; an origin
 * evicted is rebuilt on its next request, by local computation only.
 */
const MAX_KEPT_ORIGINS = 16;
const servers = new Map<string, OAuthAuthorizationServer<Env>>();

export function authorizationServer(origin: string, settings: Settings): OAuthAuthorizationServer<Env> {
	const oauth = settings.oauth;
	const accessTokenTTL = oauth.mode === "gateway" ? oauth.accessTokenTtl : undefined;
	const refreshTokenTTL = oauth.mode === "gateway" ? oauth.refreshTokenTtl : undefined;
	const key = `${origin} ${accessTokenTTL} ${refreshTokenTTL}`;
	let server = servers.get(key);
	if (server) {
		// Most recently used last, so the oldest entry is the one to evict.
		servers.delete(key);
	} else {
		server = new OAuthAuthorizationServer<Env>({
			...(accessTokenTTL === undefined ? {} : { accessTokenTTL }),
			...(refreshTokenTTL === undefined ? {} : { refreshTokenTTL }),
			issuer: origin,
			resources: [resourceOf(origin)],
			defaultResource: resourceOf(origin),
			authorizeEndpoint: `${origin}${AUTHORIZE_PATH}`,
			tokenEndpoint: `${origin}${TOKEN_PATH}`,
			clientRegistrationEndpoint: `${origin}${REGISTER_PATH}`,
			scopesSupported: [GATEWAY_SCOPE],
			clientIdMetadataDocumentEnabled: true,
			onError: ({ code, description, internal }) => {
				console.warn(JSON.stringify({ event: "oauth_error", code, description, reason: internal.reason }));
			},
		});
		if (servers.size >= MAX_KEPT_ORIGINS) {
			const oldest = servers.keys().next();
			if (!oldest.done) servers.delete(oldest.value);
		}
	}
	servers.set(key, server);
	return server;
}

/** How many authorization servers this isolate keeps (tests: it stays bounded). */
export function keptAuthorizationServers(): number {
	return servers.size;
}

/** What a grant carries for the gateway: who signed in (encrypted by the library, readable only with a token). */
export const GrantPropsSchema = z.object({ identity: IdentitySchema });
export type GrantProps = z.infer<typeof GrantPropsSchema>;

/**
 * The user id of a person's grants: a digest of issuer and subject, so it
 * carries no `:` (the library's separator) and reveals nothing in KV names.
 */
export async function userIdOf(identity: Pick<Identity, "issuer" | "subject">): Promise<string> {
	return `u_${(await sha256Hex(`${identity.issuer}\n${identity.subject}`)).slice(0, 32)}`;
}

/**
 * Whether a bearer has the shape of this authorization server's tokens,
 * `<user>:<grant>:<secret>` with a user id of ours (`userIdOf`) and the
 * library's alphabet. Anything else cannot be one, and is refused without a read.
 */
export function hasGatewayTokenShape(token: string): boolean {
	return /^u_[0-9a-f]{32}:[A-Za-z0-9_-]{1,64}:[A-Za-z0-9_-]{1,256}$/.test(token);
}

/**
 * The grant a token of this authorization server belongs to. Tokens are
 * `<user>:<grant>:<secret>`; the token has already been validated, and its
 * user must be the validated one, so nothing here is taken on trust.
 */
export function grantIdOf(token: string, userId: string): string | null {
	const [user, grant, secret, ...rest] = token.split(":");
	return user === userId && grant && secret && rest.length === 0 ? grant : null;
}

/** The KV namespace of the authorization server, or a clear error naming the missing binding. */
export function oauthKv(env: Env): KVNamespace {
	if (!env.OAUTH_KV) {
		throw new GatewayError(
			"misconfigured",
			"The gateway is misconfigured: OIDC_ISSUER is set but the OAUTH_KV namespace is not bound.",
		);
	}
	return env.OAUTH_KV;
}

/**
 * Revokes every grant a person holds at the gateway's authorization server
 * (an operator cutting someone off at once, without waiting for their tokens
 * to expire): their tokens stop working on the next request, and their
 * sessions end at their next recheck. Returns how many grants were revoked.
 */
export async function revokePersonGrants(origin: string, env: Env, identity: Pick<Identity, "issuer" | "subject">) {
	const api = authorizationServer(origin, settingsFrom(env)).getOAuthApi(env);
	const userId = await userIdOf(identity);
	let revoked = 0;
	let cursor: string | undefined;
	do {
		const page = await api.listUserGrants(userId, cursor ? { cursor } : {});
		for (const grant of page.items) {
			await api.revokeGrant(grant.id, userId);
			revoked++;
		}
		cursor = page.cursor;
	} while (cursor);
	return revoked;
}
