import { z } from "zod";
import { DISCLOSURE_INPUT_FIELDS, DISCLOSURE_RECORD_FIELDS } from "./disclosure-schema.ts";
import { DEFAULT_RATE_CLASS, RateClassSchema } from "./rate-classes.ts";
import { type ApiKeyRecord, MaxSessionsSchema, PrioritySchema, ServerNameSchema, UserPathSchema } from "./schemas.ts";

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
	/** Lowercased; null when absent or not verified (see `identityFromClaims`). */
	email: z.string().nullable(),
	/** From the `groups` claim (an array of strings, or one string); empty when absent. */
	groups: z.array(z.string()),
});
export type Identity = z.infer<typeof IdentitySchema>;

/**
 * Access rules turn a signed-in identity into a principal: what an API key is
 * for machines, a rule is for people. A rule matches on the identity's claims
 * (every condition given must hold) and grants servers, a user path, a
 * session cap and a rate class, exactly as a key does. Rules are tried in
 * `priority` order, then by name; the first that matches decides, as in a firewall.
 */
export const RULE_NAME = /^[a-z0-9][a-z0-9-]{0,63}$/;
export const RuleNameSchema = z
	.string()
	.regex(RULE_NAME, "must be 1-64 characters of a-z, 0-9 and '-', starting with a letter or digit");

/** What a rule may match on: one shape for admin input and for the published record. */
const MATCH_FIELDS = {
	/** The `sub` claim, exactly. */
	subject: z.string().min(1).max(255).optional(),
	/** The issuer that vouched for the subject; absent: the one the gateway trusts. */
	issuer: z.string().url().optional(),
	/** The verified email address, case-insensitively. */
	email: z.string().min(3).max(320).optional(),
	/** The verified email's domain, case-insensitively ("example.com", not "@example.com"). */
	emailDomain: z
		.string()
		.regex(/^[A-Za-z0-9.-]+\.[A-Za-z]{2,}$/, "must be a domain like example.com")
		.optional(),
	/** A member of the `groups` claim, exactly. */
	group: z.string().min(1).max(256).optional(),
};
const MATCH_KEYS = Object.keys(MATCH_FIELDS) as Array<keyof typeof MATCH_FIELDS>;

const MatchSchema = z
	.strictObject(MATCH_FIELDS)
	.refine(
		(match) => [match.subject, match.email, match.emailDomain, match.group].some((value) => value !== undefined),
		"must name at least one of subject, email, emailDomain, group (an issuer alone would grant everyone it knows)",
	);

export const AccessRuleInputSchema = z.strictObject({
	match: MatchSchema.describe(
		"Who it admits: every condition given must hold (subject, issuer, email, emailDomain, group).",
	),
	servers: z
		.array(ServerNameSchema)
		.max(256)
		.optional()
		.describe("Servers and virtual servers the identities may use, each existing when written; absent: all."),
	userPath: UserPathSchema.default("/").describe("The user path the identities sit at, as a key's."),
	maxSessions: MaxSessionsSchema.optional().describe(
		"Live sessions one identity may hold at once; absent: MAX_SESSIONS_PER_KEY.",
	),
	/** See rate-classes.ts. */
	rateClass: RateClassSchema.default(DEFAULT_RATE_CLASS).describe(
		"Which rate-limiting binding counts each identity's requests.",
	),
	priority: PrioritySchema.describe("Lower first; equal priorities go by name. The first rule that matches decides."),
	admin: z
		.boolean()
		.default(false)
		.describe(
			"Whether the identities it admits may also run the gateway from the operators' dashboard at /admin/ (docs/dashboard.md). Only the rule that decides counts.",
		),
	approver: z
		.boolean()
		.default(false)
		.describe(
			"Whether the identities it admits may approve or deny calls an approve policy holds, on the gateway's /approvals page (never their own). Only the rule that decides counts.",
		),
	/** How the identities' `/mcp` discloses tools; see disclosure-schema.ts. */
	...DISCLOSURE_INPUT_FIELDS,
});
export type AccessRuleInput = z.output<typeof AccessRuleInputSchema>;
export type RuleMatch = z.output<typeof MatchSchema>;

export const AccessRuleRecordSchema = z.object({
	name: z.string(),
	match: z.object(MATCH_FIELDS),
	servers: z.array(z.string()).nullable(),
	userPath: z.string(),
	maxSessions: z.number().nullable(),
	/** Rules published before the field are standard, as they were. */
	rateClass: RateClassSchema.default(DEFAULT_RATE_CLASS),
	priority: z.number(),
	/** Rules published before the admin grant grant no admin, as they did not. */
	admin: z.boolean().default(false),
	/** Rules published before approvers make no approvers, as they did not. */
	approver: z.boolean().default(false),
	/** Rules published before the fields disclose every tool, as they did. */
	...DISCLOSURE_RECORD_FIELDS,
	/**
	 * Changes when the rule's match changes (or it is deleted and made again):
	 * sessions opened under the old match end at their next recheck. A change
	 * of what the rule grants keeps it, and sessions follow the new grant the
	 * way a key's sessions do.
	 */
	generation: z.string(),
	createdAt: z.number(),
	updatedAt: z.number(),
});
/** An access rule as the registry holds and publishes it. */
export type AccessRuleRecord = z.infer<typeof AccessRuleRecordSchema>;

/** Rules in the order they are tried. */
export function orderRules<T extends Pick<AccessRuleRecord, "priority" | "name">>(rules: readonly T[]): T[] {
	return [...rules].sort((a, b) => a.priority - b.priority || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * The domain of an address, or null for anything that is not one: exactly
 * one `@`, with something before and after it. A claim such as
 * "example.com" or "@example.com" is then no one's address in example.com.
 */
function domainOf(email: string): string | null {
	const at = email.indexOf("@");
	if (at <= 0 || at !== email.lastIndexOf("@") || at === email.length - 1) return null;
	return email.slice(at + 1);
}

/** Whether every condition of the rule holds for the identity. `trustedIssuer` stands in for an absent `issuer`. */
export function ruleMatches(match: RuleMatch, identity: Identity, trustedIssuer: string): boolean {
	if ((match.issuer ?? trustedIssuer) !== identity.issuer) return false;
	if (match.subject !== undefined && match.subject !== identity.subject) return false;
	// Only a verified address (identityFromClaims) that is an address at all matches an email condition.
	const domain = identity.email === null ? null : domainOf(identity.email);
	const email = domain === null ? null : identity.email;
	if (match.email !== undefined && email !== match.email.toLowerCase()) return false;
	if (match.emailDomain !== undefined && domain !== match.emailDomain.toLowerCase()) return false;
	if (match.group !== undefined && !identity.groups.includes(match.group)) return false;
	return true;
}

/** The first rule that matches, in rule order; null: the identity may use nothing. */
export function ruleFor(
	rules: readonly AccessRuleRecord[],
	identity: Identity,
	trustedIssuer: string,
): AccessRuleRecord | null {
	return orderRules(rules).find((rule) => ruleMatches(rule.match, identity, trustedIssuer)) ?? null;
}

/**
 * A principal's id, which its sessions are bound to exactly as a key's are to
 * the key id: `oauth~<rule>~<rule generation>~<user>` and, for tokens of the
 * gateway's own authorization server, `~<grant>`. The same person signing in
 * again under the same grant keeps their sessions; a rule whose match changed,
 * or a new grant, makes a new principal. `~` is in none of the parts.
 */
const PRINCIPAL_PREFIX = "oauth~";

export interface PrincipalRef {
	rule: string;
	generation: string;
	userId: string;
	grantId: string | null;
}

export function principalId(ref: PrincipalRef): string {
	const parts = [ref.rule, ref.generation, ref.userId, ...(ref.grantId === null ? [] : [ref.grantId])];
	return `${PRINCIPAL_PREFIX}${parts.join("~")}`;
}

/** The parts of a principal id; null for anything else (an API key id). */
export function parsePrincipalId(id: string): PrincipalRef | null {
	if (!id.startsWith(PRINCIPAL_PREFIX)) return null;
	const [rule, generation, userId, grantId, ...rest] = id.slice(PRINCIPAL_PREFIX.length).split("~");
	if (!rule || !generation || !userId || rest.length > 0 || grantId === "") return null;
	return { rule, generation, userId, grantId: grantId ?? null };
}

/**
 * Who the limits of a key or principal count against — its live sessions
 * (`KeySessionsDO`) and its request rate: an API key itself, or a person
 * under a rule, `person~<rule>~<user>`, whatever grant (client, sign-in) the
 * principal carries and whatever the rule's generation. Anyone may register
 * a client, so limits per grant would be limits a person multiplies at will;
 * the grant stays in the principal id only to bind sessions and to revoke.
 */
export function limitHolderOf(id: string): string {
	const ref = parsePrincipalId(id);
	return ref ? personLimitHolder(ref.rule, ref.userId) : id;
}

/** The limit holder of a person under a rule, whatever grant or generation they came by. */
export function personLimitHolder(rule: string, userId: string): string {
	return `person~${rule}~${userId}`;
}

/**
 * What a principal may use, in the shape of a key record, so every check that
 * applies to keys (servers, user paths, virtual servers, session caps,
 * rechecks) applies unchanged. Null when its rule is gone or its match changed.
 */
export function principalRecord(
	id: string,
	rules: readonly AccessRuleRecord[],
	label: string | null = null,
): ApiKeyRecord | null {
	const ref = parsePrincipalId(id);
	if (!ref) return null;
	const rule = rules.find((candidate) => candidate.name === ref.rule && candidate.generation === ref.generation);
	if (!rule) return null;
	return {
		id,
		name: label ?? `access rule ${rule.name}`,
		userPath: rule.userPath,
		servers: rule.servers,
		maxSessions: rule.maxSessions,
		rateClass: rule.rateClass,
		disclosure: rule.disclosure,
		alwaysList: rule.alwaysList,
		format: "self-verifying",
		createdAt: rule.createdAt,
	};
}

/** Whether a change from `before` to `after` changes who the rule matches (and so its generation). */
export function matchChanged(before: RuleMatch, after: RuleMatch): boolean {
	return MATCH_KEYS.some((key) => before[key] !== after[key]);
}
