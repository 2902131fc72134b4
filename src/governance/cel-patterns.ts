import { CelScalar, celEnv, celMethod, isCelError } from "@bufbuild/cel";

/**
 * CEL's `matches()` with its cost bounded (issue 33). The library compiles
 * the pattern with RE2 on every call: matching never backtracks, but a
 * compile costs more than the pattern's length (a pattern of 100k characters
 * took 31 s), and matching costs the pattern's size times the text's. So a
 * policy's pattern is a string written in the policy, never one a request
 * supplies, and of bounded size, both checked when the policy is saved; and
 * the text matched is at most MAX_MATCHED_CHARS, checked per call.
 */

/**
 * Largest pattern accepted, in estimated RE2 instructions (`patternSize`).
 * `^[a-z0-9-]{1,64}$` is about 130, a UUID about 80, `^.{0,1000}$` about 2,000.
 */
export const MAX_PATTERN_SIZE = 512;

/** Longest text `matches()` reads; a longer one is an evaluation error, so the policy denies. */
export const MAX_MATCHED_CHARS = 65_536;
/** The evaluation error of a longer text. */
export const TOO_LONG_TO_MATCH = "text too long to match";

/** A `\p{...}` class counts as this many instructions: it holds hundreds of ranges, and RE2 copies them per repetition. */
const UNICODE_CLASS_SIZE = 32;

const { BOOL, STRING } = CelScalar;

/** The library's own `matches`, which the bounded one calls once the text is within bounds. */
const STANDARD_MATCHES = celEnv().funcs.find("matches");

/** `string.matches(pattern)` as the library has it, for texts of at most MAX_MATCHED_CHARS characters. */
export const BOUNDED_MATCHES = celMethod("matches", STRING, [STRING], BOOL, function (pattern) {
	// Letters and spaces only: the policy's log line then names this reason whole (policies.ts, errorKind).
	if (this.length > MAX_MATCHED_CHARS) throw new Error(TOO_LONG_TO_MATCH);
	const result = STANDARD_MATCHES?.call(0, this, [pattern]);
	if (typeof result === "boolean") return result;
	throw new Error(isCelError(result) ? result.message : "matches() did not evaluate");
});

/**
 * Why a pattern written in a policy cannot be used, or null: larger than
 * MAX_PATTERN_SIZE, or not a regular expression RE2 compiles.
 */
export function patternProblem(pattern: string): string | null {
	const size = patternSize(pattern);
	if (size > MAX_PATTERN_SIZE) {
		return `has a matches() pattern of about ${size} instructions, more than ${MAX_PATTERN_SIZE}; a counted repetition such as {1000} multiplies what it repeats`;
	}
	const compiled = STANDARD_MATCHES?.call(0, "", [pattern]);
	if (isCelError(compiled)) return `has a matches() pattern that does not compile: ${compiled.message}`;
	return null;
}

/** One group being read: the alternatives it has finished, the sequence it is in, and that sequence's last item. */
interface Frame {
	alternatives: number;
	sequence: number;
	last: number;
}

/**
 * An estimate, from above, of the instructions RE2 compiles `pattern` to:
 * each character, class or escape one (a Unicode class more), a group the
 * sum of its alternatives, and a repetition `{n,m}` m copies of what it
 * repeats. Linear in the pattern's length.
 */
export function patternSize(pattern: string): number {
	const stack: Frame[] = [];
	let frame: Frame = { alternatives: 0, sequence: 0, last: 0 };
	const item = (size: number) => {
		frame.sequence += size;
		frame.last = size;
	};
	const repeat = (copies: number) => {
		frame.sequence += frame.last * (copies - 1) + copies;
		frame.last *= copies;
	};
	let i = 0;
	while (i < pattern.length) {
		const char = pattern[i];
		if (char === "\\") {
			const [size, next] = escapeAt(pattern, i);
			item(size);
			i = next;
		} else if (char === "[") {
			const [size, next] = bracketClass(pattern, i);
			item(size);
			i = next;
		} else if (char === "(") {
			stack.push(frame);
			frame = { alternatives: 0, sequence: 0, last: 0 };
			i = afterGroupPrefix(pattern, i + 1);
		} else if (char === ")") {
			const size = frame.alternatives + frame.sequence + 1;
			frame = stack.pop() ?? { alternatives: 0, sequence: 0, last: 0 };
			item(size);
			i++;
		} else if (char === "|") {
			frame.alternatives += frame.sequence + 1;
			frame.sequence = 0;
			frame.last = 0;
			i++;
		} else if (char === "{") {
			const counted = /^\{(\d+)(,(\d*))?\}/.exec(pattern.slice(i, i + 16));
			if (counted) {
				const least = Number(counted[1]);
				const most = counted[2] === undefined ? least : counted[3] === "" ? least + 1 : Number(counted[3]);
				repeat(Math.max(1, least, most));
				i += counted[0].length;
			} else {
				item(1);
				i++;
			}
		} else if (char === "*" || char === "+" || char === "?") {
			frame.sequence += 1;
			i++;
		} else {
			item(1);
			i++;
		}
	}
	// Groups left open do not compile; what was read of them still counts.
	let size = frame.alternatives + frame.sequence;
	for (const open of stack) size += open.alternatives + open.sequence;
	return size;
}

/** An escape at `at` (a backslash): its size and where what follows it begins. */
function escapeAt(pattern: string, at: number): [number, number] {
	const kind = pattern[at + 1];
	if (kind === "p" || kind === "P") {
		const close = pattern[at + 2] === "{" ? pattern.indexOf("}", at + 3) : at + 2;
		return [UNICODE_CLASS_SIZE, close === -1 ? pattern.length : close + 1];
	}
	if (kind === "Q") {
		const end = pattern.indexOf("\\E", at + 2);
		const stop = end === -1 ? pattern.length : end;
		return [Math.max(1, stop - (at + 2)), end === -1 ? pattern.length : end + 2];
	}
	if (kind === "x" && pattern[at + 2] === "{") {
		const close = pattern.indexOf("}", at + 3);
		return [1, close === -1 ? pattern.length : close + 1];
	}
	return [1, Math.min(pattern.length, at + 2)];
}

/** A bracketed class at `at` (`[...]`): one instruction, a Unicode class inside it more; and where it ends. */
function bracketClass(pattern: string, at: number): [number, number] {
	let i = at + 1;
	if (pattern[i] === "^") i++;
	// A `]` first in the class is itself.
	if (pattern[i] === "]") i++;
	let size = 1;
	while (i < pattern.length && pattern[i] !== "]") {
		if (pattern[i] === "\\") {
			const [escaped, next] = escapeAt(pattern, i);
			if (escaped === UNICODE_CLASS_SIZE) size += UNICODE_CLASS_SIZE;
			i = next;
		} else if (pattern.startsWith("[:", i)) {
			const close = pattern.indexOf(":]", i + 2);
			i = close === -1 ? i + 1 : close + 2;
		} else {
			i++;
		}
	}
	return [size, Math.min(pattern.length, i + 1)];
}

/** Past a group's `?...` prefix (`(?:`, `(?i)`, `(?i:`, `(?P<name>`, `(?<name>`), from just after its `(`. */
function afterGroupPrefix(pattern: string, at: number): number {
	if (pattern[at] !== "?") return at;
	let i = at + 1;
	if (pattern[i] === "P" || pattern[i] === "<") {
		const close = pattern.indexOf(">", i);
		return close === -1 ? pattern.length : close + 1;
	}
	while (i < pattern.length && /[a-zA-Z-]/.test(pattern[i] ?? "")) i++;
	return pattern[i] === ":" ? i + 1 : i;
}
