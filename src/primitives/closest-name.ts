/**
 * The known name a mistyped one most likely meant: `timeout` → `timeoutSeconds`,
 * `demoo` → `demo`, `user_path` → `userPath`. For "did you mean" in refusals of
 * the admin API and the CLI; pure and bounded, since it runs on what a caller typed.
 */

/** Longer names are not compared: nobody mistypes a 65-character name, and the work grows with length². */
const MAX_NAME_LENGTH = 64;
/**
 * More candidates than this and no suggestion is made, so a refusal costs at most a few
 * milliseconds: most candidates are left after a length check or a few rows of the table.
 */
const MAX_CANDIDATES = 2_000;
/** A prefix shorter than this says too little (`t` is the start of many names). */
const MIN_PREFIX_LENGTH = 3;
/** Typing slips are an edit or two; more than three and the names are just different. */
const MAX_EDITS = 3;

/** One spelling for comparing: case, `-` and `_` do not tell names apart to a person. */
function normalized(name: string): string {
	return name.toLowerCase().replace(/[-_]/g, "");
}

/**
 * Edits between two strings (insert, delete, substitute, swap two neighbours: the
 * optimal-string-alignment form of Damerau-Levenshtein), or `limit + 1` as soon as
 * it is certain to exceed `limit`.
 */
export function editDistance(a: string, b: string, limit: number): number {
	if (Math.abs(a.length - b.length) > limit) return limit + 1;
	// Three rows: the one before the previous (for swaps), the previous, the current.
	let before: number[] = [];
	let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
	for (let i = 1; i <= a.length; i++) {
		const current = [i];
		let rowMin = i;
		for (let j = 1; j <= b.length; j++) {
			const cost = a[i - 1] === b[j - 1] ? 0 : 1;
			let value = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost);
			if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
				value = Math.min(value, (before[j - 2] ?? 0) + 1);
			}
			current.push(value);
			rowMin = Math.min(rowMin, value);
		}
		if (rowMin > limit) return limit + 1;
		before = previous;
		previous = current;
	}
	return Math.min(previous[b.length] ?? limit + 1, limit + 1);
}

/**
 * The candidate closest to `name`, or undefined when none is close enough: at most
 * a third of the name's length in edits (one at least, three at most), or one name
 * starting with the other. Ties go to the earlier candidate. `name` itself is never
 * suggested.
 *
 * @example closestName("timeout", ["url", "timeoutSeconds"]) // "timeoutSeconds"
 * @example closestName("demoo", ["demo", "demo-math"]) // "demo"
 */
export function closestName(name: string, candidates: Iterable<string>): string | undefined {
	if (name.length === 0 || name.length > MAX_NAME_LENGTH) return undefined;
	const list = [...candidates].slice(0, MAX_CANDIDATES + 1);
	if (list.length > MAX_CANDIDATES) return undefined;
	const wanted = normalized(name);
	const limit = Math.min(MAX_EDITS, Math.max(1, Math.floor(wanted.length / 3)));
	let best: { candidate: string; score: number } | undefined;
	for (const candidate of list) {
		if (candidate === name || candidate.length > MAX_NAME_LENGTH) continue;
		const known = normalized(candidate);
		let score = editDistance(wanted, known, limit);
		// A prefix is a looser match than any close edit: it ranks after them.
		const [shorter, longer] = wanted.length <= known.length ? [wanted, known] : [known, wanted];
		if (score > limit && shorter.length >= MIN_PREFIX_LENGTH && longer.startsWith(shorter)) score = limit + 1;
		else if (score > limit) continue;
		if (!best || score < best.score) best = { candidate, score };
	}
	return best?.candidate;
}
