/**
 * The most characters (code points) a match of a Go RE2 regular expression
 * can span, read from its syntax: a character, class or escape counts one,
 * anchors and flags none, a group its longest alternative, a repetition its
 * upper bound. Undefined when the expression repeats without a bound (`*`,
 * `+`, `{n,}`) or uses syntax this reading does not know (the scanner then
 * treats it as unbounded, which is never wrong, only slower).
 */

class Unbounded extends Error {}

export function maxMatchLength(regex: string): number | undefined {
	let at = 0;

	const alternation = (): number => {
		let longest = sequence();
		while (regex[at] === "|") {
			at++;
			longest = Math.max(longest, sequence());
		}
		return longest;
	};

	const sequence = (): number => {
		let total = 0;
		while (at < regex.length && regex[at] !== "|" && regex[at] !== ")") total += repeated(atom());
		return total;
	};

	const atom = (): number => {
		const char = regex[at++];
		if (char === "(") {
			if (regex[at] === "?") {
				const flags = /^\?[a-zA-Z-]*\)/.exec(regex.slice(at));
				if (flags) {
					// (?i): flags for the rest of the group, matching nothing itself.
					at += flags[0].length;
					return 0;
				}
				const opening = /^\?(?:[a-zA-Z-]*:|P?<[A-Za-z0-9_]+>)/.exec(regex.slice(at));
				if (!opening) throw new Unbounded();
				at += opening[0].length;
			}
			const inner = alternation();
			if (regex[at++] !== ")") throw new Unbounded();
			return inner;
		}
		if (char === "[") {
			if (regex[at] === "^") at++;
			if (regex[at] === "]") at++;
			while (at < regex.length && regex[at] !== "]") {
				if (regex[at] === "\\") at++;
				else if (regex.startsWith("[:", at)) at = regex.indexOf(":]", at) + 1;
				at++;
			}
			at++;
			return 1;
		}
		if (char === "\\") {
			const escaped = regex[at++] ?? "";
			if ("bBAz".includes(escaped)) return 0;
			if ((escaped === "p" || escaped === "P" || escaped === "x") && regex[at] === "{") at = regex.indexOf("}", at) + 1;
			else if (escaped === "p" || escaped === "P") at++;
			else if (escaped === "x") at += 2;
			else if (escaped === "Q") throw new Unbounded();
			return 1;
		}
		if (char === "^" || char === "$") return 0;
		return 1;
	};

	const repeated = (length: number): number => {
		const char = regex[at];
		let times = 1;
		if (char === "*" || char === "+") throw new Unbounded();
		if (char === "?") at++;
		else if (char === "{") {
			const bounds = /^\{(\d+)(,(\d*))?\}/.exec(regex.slice(at));
			if (!bounds) return length;
			if (bounds[2] !== undefined && bounds[3] === "") throw new Unbounded();
			times = Number(bounds[3] ?? bounds[1]);
			at += bounds[0].length;
		} else return length;
		// A lazy repetition (`??`, `{n,m}?`) reaches as far.
		if (regex[at] === "?") at++;
		return length * times;
	};

	try {
		const longest = alternation();
		return at === regex.length ? longest : undefined;
	} catch (error) {
		if (error instanceof Unbounded) return undefined;
		throw error;
	}
}

/**
 * Whether a match cut short by the end of the text read cannot match at all:
 * the expression never matches at the end (`$`, `\z`) and does not end in an
 * unbounded repetition, so a truncated match goes unseen instead of ending at
 * the cut (a PEM block's closing line, for one).
 */
export function needsItsEnd(regex: string): boolean {
	return !/\$|\\z|[*+]\??$|,\}\??$/.test(regex);
}
