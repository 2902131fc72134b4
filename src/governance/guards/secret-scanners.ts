import { type Found, isAlnum, isBoundary, isDigit, isUpper } from "./detector-kinds.ts";

/**
 * Secrets, by the prefixes their issuers give them: found with `indexOf` and a
 * bounded check after each hit, so linear in the input. A first set, kept
 * small and exact (decision 0113): the maintained rule set (gitleaks') needs a
 * linear-time regular expression engine, which comes next.
 */

/** A token known by its prefix: what may follow it, and how many characters. */
interface PrefixedToken {
	readonly prefixes: readonly string[];
	readonly accepts: (code: number) => boolean;
	readonly min: number;
	readonly max: number;
}

const UPPER_OR_DIGIT = (code: number) => isUpper(code) || isDigit(code);
const WORD = (code: number) => isAlnum(code) || code === 95;
const SLACK = (code: number) => isAlnum(code) || code === 45;

const TOKENS: readonly PrefixedToken[] = [
	// AWS access key ids: AKIA (long-term), ASIA (temporary) and the others, then 16 of [A-Z0-9].
	{ prefixes: ["AKIA", "ASIA", "ABIA", "ACCA"], accepts: UPPER_OR_DIGIT, min: 16, max: 16 },
	// GitHub tokens: personal, OAuth, user-to-server, server-to-server, refresh; fine-grained personal tokens.
	{ prefixes: ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"], accepts: WORD, min: 36, max: 255 },
	{ prefixes: ["github_pat_"], accepts: WORD, min: 82, max: 255 },
	// Slack tokens: bot, user, app-level, configuration, refresh.
	{ prefixes: ["xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "xoxe-"], accepts: SLACK, min: 10, max: 255 },
	// Stripe secret and restricted keys.
	{ prefixes: ["sk_live_", "rk_live_"], accepts: WORD, min: 10, max: 255 },
];

/** Every secret token and private key block in `text`, in order. */
export function scanSecrets(text: string): Found[] {
	const found = [...privateKeyBlocks(text)];
	for (const token of TOKENS) for (const prefix of token.prefixes) found.push(...prefixed(text, prefix, token));
	return found.sort((a, b) => a.start - b.start);
}

/**
 * `prefix` at a word's start, then `min` to `max` accepted characters ending a
 * word. The characters after a hit are read at most `max` times each prefix:
 * bounded, and the next search starts past the hit.
 */
function prefixed(text: string, prefix: string, token: PrefixedToken): Found[] {
	const found: Found[] = [];
	let from = 0;
	for (;;) {
		const at = text.indexOf(prefix, from);
		if (at < 0) return found;
		if (!isBoundary(text, at - 1)) {
			from = at + 1;
			continue;
		}
		let end = at + prefix.length;
		const limit = Math.min(text.length, end + token.max);
		while (end < limit && token.accepts(text.charCodeAt(end))) end++;
		const length = end - at - prefix.length;
		if (isBoundary(text, end) && length >= token.min && length <= token.max) {
			found.push({ kind: "secrets", start: at, end });
			from = end;
		} else {
			from = at + 1;
		}
	}
}

const KEY_BEGIN = "-----BEGIN ";
const KEY_END = "-----END ";
const PRIVATE_KEY = "PRIVATE KEY-----";
/** Longest label between BEGIN and PRIVATE KEY ("RSA ", "OPENSSH ", "ENCRYPTED "...). */
const MAX_LABEL = 32;

/**
 * PEM private key blocks, BEGIN line through END line. Each search starts
 * past the last one's hit (the next "PRIVATE KEY-----" is kept while BEGINs
 * before it are tried), and a search that finds nothing ends the scan, since
 * no later start can find more: linear.
 */
function privateKeyBlocks(text: string): Found[] {
	const found: Found[] = [];
	let from = 0;
	let label = -1;
	for (;;) {
		const begin = text.indexOf(KEY_BEGIN, from);
		if (begin < 0) return found;
		if (label < begin + KEY_BEGIN.length) label = text.indexOf(PRIVATE_KEY, begin + KEY_BEGIN.length);
		if (label < 0) return found;
		if (label - begin - KEY_BEGIN.length > MAX_LABEL) {
			from = begin + 1;
			continue;
		}
		const endLine = text.indexOf(KEY_END, label);
		if (endLine < 0) return found;
		const close = text.indexOf("-----", endLine + KEY_END.length);
		const end = close < 0 ? text.length : close + 5;
		found.push({ kind: "secrets", start: begin, end });
		from = end;
	}
}
