/**
 * How tool text becomes search terms, the same way for the index and for a query: words split at
 * spaces, punctuation, `__`, `_`, `-` and camelCase humps, lower-cased, stop words dropped, and
 * a light suffix stripping so "files" finds "file" and "creating" finds "create".
 */

/**
 * Words that say nothing about which tool is meant. Besides English function words, the ways a
 * person asks for something ("please", "can you", "I want to") and the words every tool
 * description shares ("tool", "given").
 */
const STOP_WORDS: ReadonlySet<string> = new Set(
	[
		"a about all also an and any are as at be been but by can could do does for from given has have ",
		"how i if in into is it its just let me my of on one or our please should so some that the their ",
		"them then there these this to tool us using via want was we what when where which who will with ",
		"would you your",
	]
		.join("")
		.split(" "),
);

/** Stems shorter than this are left whole: stripping "us" from "bus" helps nobody. */
const MIN_STEM_LENGTH = 3;
/** -ing and -ed need a longer stem, or "string" would become "str" and "speed" "spe". */
const MIN_VERB_STEM_LENGTH = 4;

/** Splits camelCase and PascalCase humps ("listFiles" → "list Files", "HTTPServer" → "HTTP Server"). */
function splitHumps(text: string): string {
	return text.replace(/(\p{Ll}|\p{N})(\p{Lu})/gu, "$1 $2").replace(/(\p{Lu})(\p{Lu}\p{Ll})/gu, "$1 $2");
}

/** The words of a text: letters and digits between anything else, camelCase split. */
export function tokenize(text: string): string[] {
	return splitHumps(text)
		.split(/[^\p{L}\p{N}]+/u)
		.filter((word) => word.length > 0);
}

/**
 * English inflections stripped conservatively, so that each form of a word meets the others: one
 * suffix of -ies, -ing, -ed, -es, -s, then a final -e ("create", "creates", "creating", "created" →
 * "creat"; "file", "files" → "fil"). Not a full stemmer on purpose: tool texts are short, and a
 * prefix match covers most of what a stronger one would add.
 */
export function stem(word: string): string {
	if (word.endsWith("ss") || word.endsWith("us") || word.endsWith("is")) return word;
	const strip = (from: string, suffix: string, replacement: string, minimum: number): string | null => {
		if (!from.endsWith(suffix)) return null;
		const base = from.slice(0, -suffix.length) + replacement;
		return base.length >= minimum ? base : null;
	};
	const inflected =
		strip(word, "ies", "y", MIN_STEM_LENGTH) ??
		strip(word, "ing", "", MIN_VERB_STEM_LENGTH) ??
		strip(word, "ed", "", MIN_VERB_STEM_LENGTH) ??
		strip(word, "es", "", MIN_STEM_LENGTH) ??
		strip(word, "s", "", MIN_STEM_LENGTH);
	if (inflected !== null) return inflected;
	return strip(word, "e", "", MIN_STEM_LENGTH) ?? word;
}

/** One word as a term: lower-cased and stemmed, or null for a stop word. */
export function processTerm(word: string): string | null {
	const lower = word.toLowerCase();
	if (STOP_WORDS.has(lower)) return null;
	return stem(lower);
}
