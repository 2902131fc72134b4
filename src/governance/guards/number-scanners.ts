import type { DigitRun } from "./contact-scanners.ts";
import { type Found, isAlnum, isBoundary, isDigit, isUpper } from "./detector-kinds.ts";

/**
 * Payment card numbers (Luhn-checked) and IBANs (ISO 13616's mod-97 check):
 * a number that fails its check digit is not taken, which keeps order numbers
 * and ids out of redactions.
 */

/** Card numbers are 13 to 19 digits (ISO/IEC 7812). */
const CARD_DIGITS = { min: 13, max: 19 } as const;

/** Card numbers among the digit runs: 13 to 19 digits, separated or not, whose Luhn sum checks. */
export function cardsIn(runs: readonly DigitRun[]): Found[] {
	return runs
		.filter(
			(run) =>
				!run.plus &&
				run.digits.length >= CARD_DIGITS.min &&
				run.digits.length <= CARD_DIGITS.max &&
				luhnValid(run.digits),
		)
		.map((run) => ({ kind: "card", start: run.start, end: run.end }));
}

/** The Luhn check: every second digit from the right doubled, the sum a multiple of 10. */
export function luhnValid(digits: string): boolean {
	let sum = 0;
	for (let i = 0; i < digits.length; i++) {
		let digit = digits.charCodeAt(digits.length - 1 - i) - 48;
		if (i % 2 === 1) {
			digit *= 2;
			if (digit > 9) digit -= 9;
		}
		sum += digit;
	}
	return sum % 10 === 0;
}

/** IBANs are 15 to 34 characters (country, check digits, account), written with or without a space every four. */
const IBAN_CHARS = { min: 15, max: 34 } as const;

/**
 * IBANs: two capital letters and two digits at a word's start, then letters
 * and digits (single spaces allowed between groups) up to 34 in all. The
 * longest reading whose mod-97 checks is taken; since a candidate reads at
 * most 34 characters plus their spaces, each start costs a bounded amount.
 */
export function scanIbans(text: string): Found[] {
	const found: Found[] = [];
	let index = 0;
	while (index + IBAN_CHARS.min <= text.length) {
		if (!startsIban(text, index)) {
			index++;
			continue;
		}
		// Positions just after each character taken, and the characters themselves.
		const ends: number[] = [];
		let compact = "";
		let cursor = index;
		while (cursor < text.length && compact.length < IBAN_CHARS.max) {
			const code = text.charCodeAt(cursor);
			if (isUpper(code) || isDigit(code)) {
				compact += text[cursor];
				cursor++;
				ends.push(cursor);
			} else if (code === 32 && (isUpper(text.charCodeAt(cursor + 1)) || isDigit(text.charCodeAt(cursor + 1)))) {
				cursor++;
			} else {
				break;
			}
		}
		const length = longestValid(text, compact, ends);
		if (length > 0) {
			const end = ends[length - 1] ?? index;
			found.push({ kind: "iban", start: index, end });
			index = end;
		} else {
			index++;
		}
	}
	return found;
}

function startsIban(text: string, at: number): boolean {
	return (
		isBoundary(text, at - 1) &&
		isUpper(text.charCodeAt(at)) &&
		isUpper(text.charCodeAt(at + 1)) &&
		isDigit(text.charCodeAt(at + 2)) &&
		isDigit(text.charCodeAt(at + 3))
	);
}

/**
 * The longest prefix of `compact` (at least 15) that ends a word and passes
 * mod-97; 0 when none does. The remainder is carried forward one character at
 * a time, so every prefix is checked in one pass.
 */
function longestValid(text: string, compact: string, ends: readonly number[]): number {
	// The first four characters go last: as digits they are always six (two letters, two digits).
	const country = digitsMod(compact.slice(0, 4), 0);
	let remainder = 0;
	let longest = 0;
	for (let length = 5; length <= compact.length; length++) {
		remainder = digitsMod(compact.charAt(length - 1), remainder);
		const end = ends[length - 1];
		if (length < IBAN_CHARS.min || end === undefined || isAlnum(text.charCodeAt(end))) continue;
		if ((remainder * 1_000_000 + country) % 97 === 1) longest = length;
	}
	return longest;
}

/** ISO 13616's check: the first four characters moved to the end, letters as 10-35, the number mod 97. */
export function mod97(iban: string): number {
	return digitsMod(iban.slice(0, 4), digitsMod(iban.slice(4), 0));
}

/** `remainder` followed by `chars` (letters as 10-35), mod 97, read one character at a time. */
function digitsMod(chars: string, remainder: number): number {
	let result = remainder;
	for (let i = 0; i < chars.length; i++) {
		const code = chars.charCodeAt(i);
		const value = isDigit(code) ? code - 48 : code - 55;
		result = value >= 10 ? (result * 100 + value) % 97 : (result * 10 + value) % 97;
	}
	return result;
}
