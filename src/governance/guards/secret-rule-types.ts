/**
 * The shape of gitleaks' rules as src/governance/guards/secret-rules.generated.ts
 * holds them (written by scripts/secret-rules/generate.ts).
 */

/** What a rule's or the global allowlist checks a finding against, without paths or commits. */
export interface SecretAllowlist {
	/** What the regexes read: the secret, the whole match, or the match's line. */
	readonly target: "secret" | "match" | "line";
	/** Both a regex and a stopword must hold (gitleaks' `condition = "AND"`); otherwise either. */
	readonly and: boolean;
	readonly regexes: readonly string[];
	/** Lowercase; a secret containing one is allowed. */
	readonly stopwords: readonly string[];
}

export interface SecretRule {
	readonly id: string;
	/** Go RE2 syntax, which RE2JS compiles. */
	readonly regex: string;
	/** Lowercase; the rule runs only on text containing one (none: always). */
	readonly keywords: readonly string[];
	/** The capture group that is the secret; absent: the first non-empty group, else the match. */
	readonly secretGroup?: number;
	/** The secret's Shannon entropy must exceed this. */
	readonly entropy?: number;
	/** The most code points a match can span; absent when the regex repeats without a bound. */
	readonly maxLength?: number;
	/**
	 * Set on a rule without a `maxLength` whose match, cut short by the end of
	 * what is read, does not match at all (a PEM block without its END line).
	 */
	readonly needsItsEnd?: boolean;
	readonly allowlists: readonly SecretAllowlist[];
}
