/**
 * How deeply JSON from outside (a client's body, an upstream's message) may
 * nest arrays and objects. `JSON.parse` takes any depth, but what the gateway
 * then does with a value walks it recursively: serializing it again, hashing
 * it in key order (`stable-json.ts`), cloning it to a Durable Object,
 * comparing it in a policy. A body of a few hundred kilobytes of `[` ran those
 * out of stack, and the request failed as an internal error (issue 33).
 * Real messages, JSON Schemas included, nest a few dozen levels at most.
 */
export const MAX_JSON_DEPTH = 128;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACKET = 0x5b;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACKET = 0x5d;
const CLOSE_BRACE = 0x7d;

/**
 * Whether JSON text nests arrays and objects deeper than `limit`, read from
 * the text in one pass (brackets inside strings are not nesting), before or
 * without parsing it. Text that is not JSON gives an answer of no meaning.
 *
 * @example
 * nestsDeeperThan('{"a":[[1]]}', 2); // true: three levels
 */
export function nestsDeeperThan(text: string, limit: number = MAX_JSON_DEPTH): boolean {
	let depth = 0;
	for (let i = 0; i < text.length; i++) {
		const code = text.charCodeAt(i);
		if (code === QUOTE) {
			for (i++; i < text.length; i++) {
				const inString = text.charCodeAt(i);
				if (inString === BACKSLASH) i++;
				else if (inString === QUOTE) break;
			}
		} else if (code === OPEN_BRACKET || code === OPEN_BRACE) {
			depth++;
			if (depth > limit) return true;
		} else if (code === CLOSE_BRACKET || code === CLOSE_BRACE) {
			depth--;
		}
	}
	return false;
}
