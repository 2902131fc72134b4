/**
 * What the built-in detectors find, and the one shape every scanner answers
 * with. Every scanner reads its input once, left to right, and never goes back
 * further than a bound fixed here (the longest token it knows), so its time
 * is linear in the input whatever the input is (docs/guards.md).
 */

export const DETECTOR_KINDS = ["secrets", "card", "iban", "email", "phone"] as const;
export type DetectorKind = (typeof DETECTOR_KINDS)[number];

/** A match: `text.slice(start, end)` is what was found. */
export interface Found {
	readonly kind: DetectorKind;
	readonly start: number;
	readonly end: number;
}

/** A scanner: every match of its kind in `text`, in order, none overlapping another. */
export type Scanner = (text: string) => Found[];

/** An ASCII letter or digit. */
export function isAlnum(code: number): boolean {
	return isDigit(code) || isUpper(code) || (code >= 97 && code <= 122);
}

export function isDigit(code: number): boolean {
	return code >= 48 && code <= 57;
}

export function isUpper(code: number): boolean {
	return code >= 65 && code <= 90;
}

/** Whether `text[index]` does not continue a word (or is outside the text): a match may start or end beside it. */
export function isBoundary(text: string, index: number): boolean {
	if (index < 0 || index >= text.length) return true;
	const code = text.charCodeAt(index);
	return !isAlnum(code) && code !== 95;
}
