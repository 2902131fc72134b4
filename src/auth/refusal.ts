import { type AccessRuleRecord, ruleFor } from "../registry/access-rules.ts";
import type { ClaimedIdentity } from "./identity.ts";

/**
 * Why no access rule admits a person whose token or sign-in is valid. The
 * kind is said to the person (and to the client at a token's 403); who they
 * are goes only to the operator's log, since a client (any client may
 * register itself) must not learn whom it got to try.
 */
export const REFUSALS = {
	no_rule: "no access rule of this gateway matches it",
	email_unverified:
		"its email address is not verified by its identity provider, and this gateway counts only verified addresses",
} as const;
export type RefusalReason = keyof typeof REFUSALS;

/** What the client is told at sign-in (`error_description` of `access_denied`): nothing about who. */
export const ACCESS_DENIED_DESCRIPTION = "The gateway's access rules do not admit this account.";

/** `email_unverified` when counting the unverified address would have made a rule match; else `no_rule`. */
export function refusalReason(
	rules: readonly AccessRuleRecord[],
	claimed: ClaimedIdentity,
	trustedIssuer: string,
): RefusalReason {
	const { identity, unverifiedEmail } = claimed;
	if (unverifiedEmail === null) return "no_rule";
	return ruleFor(rules, { ...identity, email: unverifiedEmail }, trustedIssuer) ? "email_unverified" : "no_rule";
}

/** The operator's log line for a refusal: who, vouched for by whom, and why. */
export function logRefusal(
	event: "oauth_sign_in_refused" | "oauth_token_refused",
	claimed: ClaimedIdentity,
	reason: RefusalReason,
	context: Record<string, string>,
): void {
	const { identity, unverifiedEmail } = claimed;
	console.log(
		JSON.stringify({
			event,
			reason,
			issuer: identity.issuer,
			subject: identity.subject,
			email: identity.email ?? unverifiedEmail,
			emailVerified: identity.email !== null,
			...context,
		}),
	);
}
