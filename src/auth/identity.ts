import { z } from "zod";
import type { Identity } from "../registry/access-rules.ts";

const ClaimsSchema = z.looseObject({
	sub: z.string().min(1).max(255),
	email: z.string().max(320).optional(),
	email_verified: z.union([z.boolean(), z.string()]).optional(),
	groups: z.union([z.array(z.string().max(256)).max(256), z.string().max(256)]).optional(),
	// Only ever shown (the consent page); a name that is not a short string is left out, not a refusal.
	name: z.string().min(1).max(200).optional().catch(undefined),
});

/** An identity, and the address its claims carried that does not count (so a refusal can say why). */
export interface ClaimedIdentity {
	identity: Identity;
	/** Lowercased; null when the claims carried no address or it counts. */
	unverifiedEmail: string | null;
	/** The `name` claim, to show the person who they signed in as; never matched on. */
	displayName?: string;
}

/**
 * The identity in a verified token's claims, or null when it names no
 * subject. An email counts only when the issuer says it is verified
 * (`email_verified` true, or the string "true", which some providers send):
 * many providers put `email` in tokens without the flag, and an address
 * nobody verified must not match an `email` or `emailDomain` rule. With
 * `emailsVerified` (the operator trusts this issuer's every address:
 * EMAIL_VERIFIED_ISSUERS) a missing flag counts as verified; an explicit
 * "not verified" never does.
 */
export function identityFromClaims(
	issuer: string,
	claims: unknown,
	options: { emailsVerified: boolean } = { emailsVerified: false },
): ClaimedIdentity | null {
	const parsed = ClaimsSchema.safeParse(claims);
	if (!parsed.success) return null;
	const { sub, email, email_verified: flag, groups, name } = parsed.data;
	const verified = flag === true || flag === "true" || (flag === undefined && options.emailsVerified);
	const address = email ? email.toLowerCase() : null;
	return {
		identity: {
			issuer,
			subject: sub,
			email: verified ? address : null,
			groups: groups === undefined ? [] : typeof groups === "string" ? [groups] : groups,
		},
		unverifiedEmail: verified ? null : address,
		...(name === undefined ? {} : { displayName: name }),
	};
}
