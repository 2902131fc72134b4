import { z } from "zod";

/**
 * Who a token's bearer is, as the issuer that vouches for them says: the
 * gateway's own authorization server (from the organisation's OpenID Connect
 * provider's ID token) or an external authorization server (from its JWT
 * access token). Access rules match on this, never on raw claims.
 */
export const IdentitySchema = z.object({
	/** The issuer that asserted the subject (the OIDC provider, or the external authorization server). */
	issuer: z.string().min(1),
	subject: z.string().min(1),
	/** Lowercased; null when absent or when the issuer says it is not verified (`email_verified: false`). */
	email: z.string().nullable(),
	/** From the `groups` claim (an array of strings, or one string); empty when absent. */
	groups: z.array(z.string()),
});
export type Identity = z.infer<typeof IdentitySchema>;

const ClaimsSchema = z.looseObject({
	sub: z.string().min(1).max(255),
	email: z.string().max(320).optional(),
	email_verified: z.union([z.boolean(), z.string()]).optional(),
	groups: z.union([z.array(z.string().max(256)).max(256), z.string().max(256)]).optional(),
});

/** The identity in a verified token's claims, or null when it names no subject. */
export function identityFromClaims(issuer: string, claims: unknown): Identity | null {
	const parsed = ClaimsSchema.safeParse(claims);
	if (!parsed.success) return null;
	const { sub, email, email_verified: verified, groups } = parsed.data;
	// Some providers send the flag as a string; only an explicit "not verified" withholds the address.
	const unverified = verified === false || verified === "false";
	return {
		issuer,
		subject: sub,
		email: email && !unverified ? email.toLowerCase() : null,
		groups: groups === undefined ? [] : typeof groups === "string" ? [groups] : groups,
	};
}
