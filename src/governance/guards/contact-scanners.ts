import { type Found, isAlnum, isBoundary, isDigit } from "./detector-kinds.ts";

/**
 * E-mail addresses and phone numbers, each found in one pass. No regular
 * expression: a pattern like `[\w.]+@[\w.]+\.\w+` backtracks on a run of
 * `a@a@a@…`, and these inputs come from upstreams and callers.
 */

/** A character of an address's local part (RFC 5322's dot-atom, the common subset). */
function isLocal(code: number): boolean {
	// . _ % + -
	return isAlnum(code) || code === 46 || code === 95 || code === 37 || code === 43 || code === 45;
}

/** A character of a domain name: letters, digits, '.', '-'. */
function isDomain(code: number): boolean {
	return isAlnum(code) || code === 46 || code === 45;
}

/**
 * E-mail addresses: `local@domain.tld`. The local part is the run of local
 * characters just before the '@', kept as the scan goes (so it is never read
 * twice); the domain is read forward to the first character that cannot be in
 * one — at most up to the next '@', so the domains read are disjoint.
 */
export function scanEmails(text: string): Found[] {
	const found: Found[] = [];
	let localStart = 0;
	let index = 0;
	while (index < text.length) {
		const code = text.charCodeAt(index);
		if (code !== 64) {
			if (!isLocal(code)) localStart = index + 1;
			index++;
			continue;
		}
		let start = localStart;
		while (start < index && text.charCodeAt(start) === 46) start++;
		let end = index + 1;
		while (end < text.length && isDomain(text.charCodeAt(end))) end++;
		// A domain does not end in '.' or '-' (the end of a sentence, a dash after it).
		while (end > index + 1 && !isAlnum(text.charCodeAt(end - 1))) end--;
		if (start < index && validDomain(text, index + 1, end)) {
			found.push({ kind: "email", start, end });
			index = end;
		} else {
			index++;
		}
		localStart = index;
	}
	return found;
}

/** Labels joined by dots, none empty, and a last label of at least two letters. */
function validDomain(text: string, start: number, end: number): boolean {
	// Searched back within the domain only: `lastIndexOf` would read on past its start, again for every '@'.
	let lastDot = end - 1;
	while (lastDot > start && text.charCodeAt(lastDot) !== 46) lastDot--;
	if (lastDot <= start || end - lastDot - 1 < 2) return false;
	for (let i = lastDot + 1; i < end; i++) if (isDigit(text.charCodeAt(i)) || text.charCodeAt(i) === 45) return false;
	for (let i = start; i < end - 1; i++) if (text.charCodeAt(i) === 46 && text.charCodeAt(i + 1) === 46) return false;
	return text.charCodeAt(start) !== 46;
}

/** Separators allowed between a number's digits, one at a time: space, '-', '.', '(', ')'. */
function isDigitSeparator(code: number): boolean {
	return code === 32 || code === 45 || code === 46 || code === 40 || code === 41;
}

/** A run of digits with single separators between them, as `scanDigitRuns` reads it. */
export interface DigitRun {
	/** Where the run starts (its '+', or its first digit). */
	readonly start: number;
	/** Just after its last digit. */
	readonly end: number;
	/** Its digits, without separators. */
	readonly digits: string;
	/** Whether it begins with '+'. */
	readonly plus: boolean;
}

/**
 * Every run of digits (optionally after '+', or inside a leading '('), with at
 * most one separator between two digits, that stands alone as a word. Each
 * character is read once: a run that ends is never read again.
 */
export function scanDigitRuns(text: string): DigitRun[] {
	const runs: DigitRun[] = [];
	let index = 0;
	while (index < text.length) {
		const code = text.charCodeAt(index);
		const plus = code === 43 && isDigit(text.charCodeAt(index + 1));
		const paren = code === 40 && isDigit(text.charCodeAt(index + 1));
		if (!(isDigit(code) || plus || paren) || !isBoundary(text, index - 1)) {
			index++;
			continue;
		}
		const start = index;
		let digits = "";
		let end = index;
		let cursor = plus || paren ? index + 1 : index;
		while (cursor < text.length) {
			const at = text.charCodeAt(cursor);
			if (isDigit(at)) {
				digits += text[cursor];
				cursor++;
				end = cursor;
			} else if (isDigitSeparator(at) && isDigit(text.charCodeAt(cursor + 1))) {
				cursor++;
			} else if (at === 41 && text.charCodeAt(cursor + 1) === 32 && isDigit(text.charCodeAt(cursor + 2))) {
				// "(555) 123": a closing parenthesis and a space.
				cursor += 2;
			} else {
				break;
			}
		}
		if (isBoundary(text, end)) runs.push({ start, end, digits, plus });
		index = Math.max(cursor, index + 1);
	}
	return runs;
}

/** The shortest and longest numbers taken for phone numbers (E.164 allows 15 digits). */
const PHONE_DIGITS = { min: 10, max: 15, minWithPlus: 8 } as const;

/**
 * Phone numbers: a digit run of 10 to 15 digits that has separators or a '+'
 * (a bare run of digits is more often an id or an amount), or 8 to 15 after '+'.
 */
export function phonesIn(runs: readonly DigitRun[]): Found[] {
	return runs
		.filter((run) => {
			const count = run.digits.length;
			if (count > PHONE_DIGITS.max) return false;
			if (run.plus) return count >= PHONE_DIGITS.minWithPlus;
			return count >= PHONE_DIGITS.min && run.end - run.start > count;
		})
		.map((run) => ({ kind: "phone", start: run.start, end: run.end }));
}
