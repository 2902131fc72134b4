/**
 * Whether `value` matches `glob`: `*` any run of characters (`/` included, the empty run too), `?`
 * one character (a UTF-16 code unit), anything else itself.
 *
 * Why not a RegExp: `*a*a*a*a*b` as `^.*a.*a.*a.*a.*b$` backtracks through every way of placing its
 * stars; against an upstream's name of a hundred characters that took seconds, and an operator's
 * glob may hold 64 stars (issue 33). Here the text between stars is placed left to right, each piece
 * at the first place it fits after the one before, which is where any match could place it: no
 * backtracking, and at most |value| × |glob| character comparisons.
 *
 * @example
 * globMatches("github__*_issue", "github__create_issue"); // true
 */
export function globMatches(glob: string, value: string): boolean {
	const pieces = glob.split("*");
	const first = pieces[0] ?? "";
	if (pieces.length === 1) return value.length === glob.length && fitsAt(glob, value, 0);
	const last = pieces[pieces.length - 1] ?? "";
	const end = value.length - last.length;
	if (end < first.length || !fitsAt(first, value, 0) || !fitsAt(last, value, end)) return false;
	let at = first.length;
	for (const piece of pieces.slice(1, -1)) {
		const found = firstFit(piece, value, at, end);
		if (found === -1) return false;
		at = found + piece.length;
	}
	return true;
}

/** Whether `piece` (its `?`s any character) matches `value` at `at`, where it is known to fit in length. */
function fitsAt(piece: string, value: string, at: number): boolean {
	for (let i = 0; i < piece.length; i++) {
		const code = piece.charCodeAt(i);
		if (code !== QUESTION_MARK && code !== value.charCodeAt(at + i)) return false;
	}
	return true;
}

/** The first index from `from` where `piece` matches and ends by `end`, or -1. */
function firstFit(piece: string, value: string, from: number, end: number): number {
	if (!piece.includes("?")) {
		const found = value.indexOf(piece, from);
		return found !== -1 && found + piece.length <= end ? found : -1;
	}
	for (let at = from; at + piece.length <= end; at++) if (fitsAt(piece, value, at)) return at;
	return -1;
}

const QUESTION_MARK = 0x3f;

/** An operator's include/exclude choice: absent, everything. */
export interface GlobChoice {
	include?: readonly string[] | undefined;
	exclude?: readonly string[] | undefined;
}

/** Whether `value` (a name, a URI) is chosen: matched by an include glob, when there are any, and by no exclude glob. */
export function chosen(choice: GlobChoice | null | undefined, value: string): boolean {
	if (!choice) return true;
	if (choice.include && !choice.include.some((glob) => globMatches(glob, value))) return false;
	return !(choice.exclude ?? []).some((glob) => globMatches(glob, value));
}
