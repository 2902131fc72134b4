import { type Matcher, RE2JS } from "re2js";
import type { Found } from "./detector-kinds.ts";
import { KeywordAutomaton } from "./keyword-automaton.ts";
import type { SecretAllowlist, SecretRule } from "./secret-rule-types.ts";
import { GLOBAL_ALLOWLIST, SECRET_RULES } from "./secret-rules.generated.ts";

/**
 * Secrets, by gitleaks' rules (decision 0124). A rule runs only around its
 * keywords: one pass of a keyword automaton over the text finds them, and the
 * rule's regular expression reads windows around them (merged where they
 * meet) with RE2JS, whose time is linear in what it reads (no backtracking).
 * Each finding is checked as gitleaks checks it — the secret is the rule's
 * secret group, its Shannon entropy must exceed the rule's threshold, and no
 * allowlist may hold — and what is reported is the secret's span, so a
 * redaction replaces the secret and keeps `key=` before it.
 *
 * Linear is not cheap: RE2JS reads gitleaks' generic rules at 0.5 to 5 µs a
 * character. So what one string may cost is bounded: one rule reads at most
 * `RULE_BUDGET` characters of it and all rules together `SCAN_BUDGET`, and
 * windows past a budget are reported as secrets unread (fail closed: a redact
 * guard redacts them, a block guard blocks), never passed as clean.
 */

/**
 * Where a rule's window reaches around a keyword: a rule whose matches are at
 * most `maxLength` long reads that far on either side (a match containing the
 * keyword lies within). A rule that repeats without a bound reads from a
 * little before its keyword (gitleaks' generic rules allow 50 word characters
 * before it) to 1 KiB after it, and a match that reaches the window's end is
 * read again in a window twice as long. A rule that `needsItsEnd` finds no
 * match cut short, so it reads 8 KiB after its keyword (a PEM block of an
 * 8192-bit RSA key is about 6.4 KB); a longer match is not found.
 */
const UNBOUNDED_BEFORE = 64;
const UNBOUNDED_AFTER = 1024;
const NEEDS_ITS_END_AFTER = 8 * 1024;
/** The characters one rule may read of one string: a 64 KiB result whole, however dense its keywords. */
export const RULE_BUDGET = 64 * 1024;
/** The characters all rules together may read of one string: three rules reading a 64 KiB result whole. */
export const SCAN_BUDGET = 192 * 1024;

/** Every keyword of every rule, one automaton per isolate, and for each keyword (by index) the rules (by index) that name it. */
let prefilter: { automaton: KeywordAutomaton; rules: number[][] } | undefined;
/** Rules are compiled when first needed and kept for the isolate: most texts need few of them. */
const compiled = new Map<string, RE2JS>();

function compile(regex: string): RE2JS {
	let pattern = compiled.get(regex);
	if (pattern === undefined) {
		pattern = RE2JS.compile(regex);
		compiled.set(regex, pattern);
	}
	return pattern;
}

function keywordPrefilter(): { automaton: KeywordAutomaton; rules: number[][] } {
	if (prefilter === undefined) {
		const byKeyword = new Map<string, number[]>();
		SECRET_RULES.forEach((rule, index) => {
			for (const keyword of rule.keywords) byKeyword.set(keyword, [...(byKeyword.get(keyword) ?? []), index]);
		});
		prefilter = { automaton: new KeywordAutomaton([...byKeyword.keys()]), rules: [...byKeyword.values()] };
	}
	return prefilter;
}

const SURROGATE = /[\uD800-\uDFFF]/;

/**
 * Each rule one of whose keywords `text` contains (ASCII case ignored), in
 * the rule set's order, with the windows it reads: `[start, end)` pairs in
 * order, merged where they meet. A rule without keywords reads the whole text.
 */
export function ruleWindows(text: string): Map<SecretRule, number[]> {
	const { automaton, rules } = keywordPrefilter();
	const windows: Array<number[] | undefined> = SECRET_RULES.map((rule) =>
		rule.keywords.length === 0 ? [0, text.length] : undefined,
	);
	// A code point past U+FFFF is two UTF-16 code units: where there are any, windows reach twice as far.
	const unitsPerCodePoint = SURROGATE.test(text) ? 2 : 1;
	automaton.occurrences(text, (keyword, start, end) => {
		for (const rule of rules[keyword] ?? []) {
			// One character more on each side, so that a boundary (`\b`, `$`) at a window's edge reads the text beyond it.
			const maxLength = SECRET_RULES[rule]?.maxLength;
			const reach = maxLength === undefined ? 0 : (maxLength + 1) * unitsPerCodePoint;
			const from = Math.max(0, reach > 0 ? end - reach : start - UNBOUNDED_BEFORE);
			const after = SECRET_RULES[rule]?.needsItsEnd ? NEEDS_ITS_END_AFTER : UNBOUNDED_AFTER;
			const to = Math.min(text.length, reach > 0 ? start + reach : end + after);
			const spans = windows[rule];
			if (spans === undefined) {
				windows[rule] = [from, to];
				continue;
			}
			const last = spans.length - 1;
			// Keywords arrive in the order they end and a rule's windows reach alike: a window meets only the last one.
			if (from <= (spans[last] ?? 0)) {
				spans[last - 1] = Math.min(spans[last - 1] ?? from, from);
				spans[last] = Math.max(spans[last] ?? to, to);
			} else spans.push(from, to);
		}
	});
	return new Map(
		SECRET_RULES.flatMap((rule, index) => {
			const spans = windows[index];
			return spans === undefined ? [] : [[rule, spans] as const];
		}),
	);
}

/** Every secret in `text`, in order; the detector (detectors.ts) keeps the first of overlapping ones. */
export function scanSecrets(text: string): Found[] {
	const found: Found[] = [];
	let left = SCAN_BUDGET;
	for (const [rule, windows] of ruleWindows(text)) {
		const budget = { left: Math.min(left, RULE_BUDGET) };
		const allowed = budget.left;
		found.push(...ruleFindings(text, rule, windows, budget));
		left -= allowed - budget.left;
	}
	return found.sort((a, b) => a.start - b.start || b.end - a.end);
}

/** What `rule` finds in its windows of `text`, each read within what is left of `budget` (which it lowers). */
function ruleFindings(text: string, rule: SecretRule, windows: number[], budget: { left: number }): Found[] {
	const found: Found[] = [];
	let reached = 0;
	for (let w = 0; w < windows.length; w += 2) {
		let from = Math.max(reached, windows[w] ?? 0);
		let to = windows[w + 1] ?? 0;
		while (from < to) {
			// Past the budget the rest is unread, and reported rather than passed as clean: from a
			// window's length before the cut, where a match cut short by it may have begun.
			const cut = Math.min(to, from + budget.left);
			const cutShort = cut < to;
			if (cutShort) found.push({ kind: "secrets", start: Math.max(from, cut - UNBOUNDED_BEFORE), end: to });
			budget.left -= cut - from;
			if (cut === from) break;
			const slice = text.slice(from, cut);
			const matcher = compile(rule.regex).matcher(slice);
			let grown = false;
			while (matcher.find()) {
				if (matcher.end() === slice.length && cut < text.length) {
					if (cutShort || budget.left === 0) {
						// Cut short, with nothing left to read the rest: reported as far as a longer window would reach.
						found.push({
							kind: "secrets",
							start: from + matcher.start(),
							end: Math.min(text.length, to + (to - from)),
						});
						break;
					}
					// The match may go on past the window: read it again from its start in a longer one.
					const start = from + matcher.start();
					to = Math.min(text.length, to + (to - from));
					// Windows it now meets are part of it.
					while (w + 2 < windows.length && (windows[w + 2] ?? 0) <= to) {
						to = Math.max(to, windows[w + 3] ?? 0);
						w += 2;
					}
					from = start;
					grown = true;
					break;
				}
				const finding = checked(text, rule, matcher, from);
				if (finding !== undefined) found.push(finding);
			}
			if (cutShort) break;
			if (!grown) from = to;
		}
		reached = to;
	}
	return found;
}

/** A match of `rule` (in a slice starting at `offset`) as a finding, unless gitleaks' checks set it aside. */
function checked(text: string, rule: SecretRule, matcher: Matcher, offset: number): Found | undefined {
	let start = offset + matcher.start();
	let end = offset + matcher.end();
	// gitleaks trims newlines off a match before it reads the secret from it.
	while (start < end && text.charCodeAt(start) === 10) start++;
	while (end > start && text.charCodeAt(end - 1) === 10) end--;
	if (start === end) return undefined;
	const group = secretSpan(matcher, rule, matcher.groupCount());
	const secret = group === undefined ? { start, end } : { start: offset + group.start, end: offset + group.end };
	const value = text.slice(secret.start, secret.end);
	if (rule.entropy !== undefined && shannonEntropy(value) <= rule.entropy) return undefined;
	const finding = { text, secret: value, match: text.slice(start, end), start, end };
	// Allowlists reading the secret before those reading the match, before those reading its line: the cheaper first.
	if (allowed(GLOBAL_ALLOWLIST, finding)) return undefined;
	for (const target of TARGETS)
		if (rule.allowlists.some((list) => list.target === target && allowed(list, finding))) return undefined;
	return { kind: "secrets", start: secret.start, end: secret.end };
}

interface Span {
	start: number;
	end: number;
}

/** The rule's secret group's span, else the first non-empty group's, else none (the whole match is the secret). */
function secretSpan(matcher: Matcher, rule: SecretRule, groups: number): Span | undefined {
	if (groups === 0) return undefined;
	const chosen =
		rule.secretGroup !== undefined && rule.secretGroup <= groups
			? [rule.secretGroup]
			: Array.from({ length: groups }, (_, index) => index + 1);
	for (const group of chosen) {
		const start = matcher.start(group);
		const end = matcher.end(group);
		if (start >= 0 && end > start) return { start, end };
	}
	return undefined;
}

/**
 * How far a `line` allowlist looks on either side of a match for its line's
 * ends: enough for the lines gitleaks' rules allow (a Dockerfile's
 * `--mount=type=secret,`, an `import { … } from "…"`), and bounded, since a
 * minified or JSON text is one line and each finding would read all of it.
 */
const LINE_BOUND = 256;

const TARGETS = ["secret", "match", "line"] as const;

interface Finding {
	readonly text: string;
	readonly secret: string;
	readonly match: string;
	readonly start: number;
	readonly end: number;
}

/** An allowlist made ready once per isolate: its regexes as one alternation, its stopwords as one automaton. */
interface ReadyAllowlist {
	readonly regex: RE2JS | undefined;
	readonly stopwords: KeywordAutomaton | undefined;
}
const readyAllowlists = new Map<SecretAllowlist, ReadyAllowlist>();

function ready(list: SecretAllowlist): ReadyAllowlist {
	let made = readyAllowlists.get(list);
	if (made === undefined) {
		// Flags such as (?i) inside a group end with it, so each regex keeps its own.
		const regex = list.regexes.length > 0 ? compile(list.regexes.map((one) => `(?:${one})`).join("|")) : undefined;
		const stopwords = list.stopwords.length > 0 ? new KeywordAutomaton(list.stopwords) : undefined;
		made = { regex, stopwords };
		readyAllowlists.set(list, made);
	}
	return made;
}

/** Whether `list` allows `finding`, as gitleaks decides it (regexes on the list's target, stopwords on the secret). */
function allowed(list: SecretAllowlist, finding: Finding): boolean {
	const { regex, stopwords } = ready(list);
	const target = () =>
		list.target === "secret" ? finding.secret : list.target === "match" ? finding.match : lineOf(finding, LINE_BOUND);
	// gitleaks compares stopwords with the lowercased secret; the automaton ignores ASCII case, and stopwords are ASCII.
	// They are asked first: a short secret is cheaper to read than a match or a line.
	const stopwordHolds = stopwords?.anyIn(finding.secret) ?? false;
	if (list.and ? !stopwordHolds : stopwordHolds) return stopwordHolds;
	return regex?.matcher(target()).find() ?? false;
}

/** The line around a match, looking at most `bound` characters either side for its ends. */
function lineOf(finding: Finding, bound: number): string {
	const from = Math.max(0, finding.start - bound);
	const before = finding.text.slice(from, finding.start).lastIndexOf("\n");
	const after = finding.text.slice(finding.end, finding.end + bound).indexOf("\n");
	const start = before < 0 ? from : from + before + 1;
	const end = after < 0 ? Math.min(finding.text.length, finding.end + bound) : finding.end + after;
	return finding.text.slice(start, end);
}

/** Shannon entropy in bits per character of `value`'s code points, as gitleaks computes it. */
export function shannonEntropy(value: string): number {
	if (value.length === 0) return 0;
	const counts = new Map<number, number>();
	for (const char of value) {
		const code = char.codePointAt(0) ?? 0;
		counts.set(code, (counts.get(code) ?? 0) + 1);
	}
	// gitleaks divides by the length in bytes; for the ASCII its rules match that is the length.
	const length = new TextEncoder().encode(value).length;
	let entropy = 0;
	for (const count of counts.values()) {
		const frequency = count / length;
		entropy -= frequency * Math.log2(frequency);
	}
	return entropy;
}
