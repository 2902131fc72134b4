import { decodeJwt, errors } from "jose";
import type * as oauth from "oauth4webapi";
import { z } from "zod";
import { UpstreamAuthorizationRefused } from "./authorization-refused.ts";
import type { TokenSet } from "./stored-connection.ts";

/** Fields of a token response the gateway reads beyond oauth4webapi's checks. */
const TokenReplySchema = z.looseObject({
	access_token: z.string().min(1),
	token_type: z.string(),
	refresh_token: z.string().min(1).optional(),
	expires_in: z.number().nonnegative().optional(),
	scope: z.string().optional(),
	/** Some servers name the resource a token is for (RFC 8707 does not require it). */
	resource: z.string().optional(),
});

/**
 * The vault's TokenSet from a token endpoint's answer: only Bearer tokens,
 * only for `resource` (a token response naming another resource, or a JWT
 * access token whose `aud` leaves the resource out, is refused: sent
 * upstream it would work somewhere else, or not here), with its expiry in ms
 * from `now`. A reply without a refresh token keeps `previous`'s (a server
 * that does not rotate); scopes as granted, else as asked.
 */
export function tokenSetOf(
	reply: oauth.TokenEndpointResponse,
	expected: { resource: string; scopes: string[]; previousRefreshToken: string | null; now: number },
): TokenSet {
	const parsed = TokenReplySchema.safeParse(reply);
	if (!parsed.success || parsed.data.token_type.toLowerCase() !== "bearer") {
		throw new UpstreamAuthorizationRefused(
			"token_refused",
			"The authorization server answered with a token the gateway cannot use (not a Bearer token).",
		);
	}
	const token = parsed.data;
	if (token.resource !== undefined && !sameResource(token.resource, expected.resource)) throw otherResource();
	const audience = jwtAudience(token.access_token);
	if (audience !== null && !audience.some((aud) => sameResource(aud, expected.resource))) throw otherResource();
	return {
		accessToken: token.access_token,
		refreshToken: token.refresh_token ?? expected.previousRefreshToken,
		expiresAt: token.expires_in === undefined ? null : expected.now + token.expires_in * 1000,
		scopes: token.scope === undefined ? expected.scopes : token.scope.split(" ").filter(Boolean),
	};
}

function otherResource(): UpstreamAuthorizationRefused {
	return new UpstreamAuthorizationRefused(
		"token_for_other_resource",
		"The authorization server issued a token for another resource than this server, so the gateway did not keep it.",
	);
}

/** Resource identifiers compared as MCP's `requireBearerAuth` does: without a fragment or one trailing slash. */
function sameResource(a: string, b: string): boolean {
	const plain = (value: string) => value.split("#")[0]?.replace(/\/$/, "") ?? value;
	return plain(a) === plain(b);
}

/**
 * The `aud` of an access token that is a JWT, or null for an opaque token
 * (or a JWT without `aud`), whose audience the gateway cannot see and leaves
 * to the upstream. The signature is not checked: the gateway is not the
 * token's audience, it only refuses to keep a token that says it is for
 * someone else.
 */
function jwtAudience(token: string): string[] | null {
	if (token.split(".").length !== 3) return null;
	let claims: ReturnType<typeof decodeJwt>;
	try {
		claims = decodeJwt(token);
	} catch (error) {
		// Three dot-separated parts that are not a JWT: an opaque token after all.
		if (error instanceof errors.JWTInvalid) return null;
		throw error;
	}
	if (claims.aud === undefined) return null;
	return Array.isArray(claims.aud) ? claims.aud : [claims.aud];
}
