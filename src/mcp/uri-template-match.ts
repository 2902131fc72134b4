/**
 * Linear-time matching of RFC 6570 URI templates, accepting exactly the URIs the
 * MCP SDK's `UriTemplate.match` accepts.
 *
 * Why not the SDK: it turns the template text into a backtracking RegExp, and our
 * templates come from untrusted upstream servers. `{a}{b}{c}…` becomes
 * `^([^/,]+)([^/,]+)([^/,]+)…$`, which takes exponential time on a long URI that
 * almost matches. Here the template becomes a small NFA whose states each consume
 * exactly one character, and matching advances the set of active states once per
 * URI character: O(|uri| × states) work, and no RegExp is built from upstream text.
 */

/** Longest template accepted; longer ones do not compile. Bounds the NFA size. */
export const MAX_TEMPLATE_LENGTH = 2048;

/** Most `{...}` expressions accepted in one template; more do not compile. */
export const MAX_TEMPLATE_EXPRESSIONS = 64;

/** Longest URI matched; longer ones never match. Bounds the per-read matching work. */
export const MAX_URI_LENGTH = 16_384;

/** A template prepared for repeated matching. */
export interface CompiledUriTemplate {
	/** The template text as given. */
	readonly template: string;
	/**
	 * Count of literal characters outside expressions: the more a template fixes, the
	 * more specific it is, so callers rank it above catch-alls such as `{+u}` (0).
	 */
	readonly literalLength: number;
	/** Whether the whole of `uri` matches the template. */
	matches(uri: string): boolean;
}

type Operator = "" | "+" | "#" | "." | "/" | "?" | "&";

/** Operators the SDK recognises; anything else (RFC 6570's `;` too) is part of the name with operator "". */
const OPERATORS: readonly Operator[] = ["+", "#", ".", "/", "?", "&"];

interface Expression {
	readonly operator: Operator;
	readonly names: readonly string[];
	readonly exploded: boolean;
}

/** Literal text, or one `{...}` expression. */
type Part = string | Expression;

/**
 * What one NFA state consumes. "any" is the SDK's `.`: every character but a line
 * terminator, since its RegExp has neither the `s` nor the `u` flag.
 */
type CharClass = "literal" | "any" | "notSlashOrComma" | "notAmpersand";

interface State {
	readonly cls: CharClass;
	/** The UTF-16 code unit a "literal" state consumes (the SDK's RegExp compares code units). */
	readonly code: number;
	/** States active after this one consumed a character; `states.length` is the accepting state. */
	readonly next: readonly number[];
}

const SLASH = 0x2f;
const COMMA = 0x2c;
const AMPERSAND = 0x26;

function isLineTerminator(code: number): boolean {
	return code === 0x0a || code === 0x0d || code === 0x2028 || code === 0x2029;
}

function consumes(state: State, code: number): boolean {
	switch (state.cls) {
		case "literal":
			return code === state.code;
		case "any":
			return !isLineTerminator(code);
		case "notSlashOrComma":
			return code !== SLASH && code !== COMMA;
		case "notAmpersand":
			return code !== AMPERSAND;
	}
}

/** Mirrors the SDK's `parse`, but returns null where the SDK throws and for expressions without names. */
function parse(template: string): Part[] | null {
	const parts: Part[] = [];
	let expressions = 0;
	let i = 0;
	while (i < template.length) {
		const open = template.indexOf("{", i);
		if (open === -1) {
			parts.push(template.slice(i));
			break;
		}
		if (open > i) parts.push(template.slice(i, open));
		// Like the SDK: the first "}" closes, so "{a{b}" names "a{b", and a stray "}" is literal.
		const close = template.indexOf("}", open);
		if (close === -1) return null;
		expressions++;
		if (expressions > MAX_TEMPLATE_EXPRESSIONS) return null;
		const body = template.slice(open + 1, close);
		const operator = OPERATORS.find((op) => body.startsWith(op)) ?? "";
		const names = body
			.slice(operator.length)
			.split(",")
			.map((name) => name.replace("*", "").trim())
			.filter((name) => name.length > 0);
		// The SDK would match "{}" as a variable, but a template without a name is broken upstream data.
		if (names.length === 0) return null;
		parts.push({ operator, names, exploded: body.includes("*") });
		i = close + 1;
	}
	return parts;
}

/**
 * Lays the parts out as NFA states. Every piece consumes at least one character, so
 * a piece's only successor is the first state after it: `states.length` once it is laid out.
 */
function buildStates(parts: readonly Part[]): State[] {
	const states: State[] = [];
	const literal = (text: string): void => {
		for (let k = 0; k < text.length; k++) {
			states.push({ cls: "literal", code: text.charCodeAt(k), next: [states.length + 1] });
		}
	};
	// cls+ : loop on itself, or move on.
	const oneOrMore = (cls: CharClass): void => {
		const self = states.length;
		states.push({ cls, code: 0, next: [self, self + 1] });
	};
	// [^/,]+(?:,[^/,]+)* : a run loops, moves to the comma, or moves on; the comma needs another run.
	const list = (): void => {
		const run = states.length;
		states.push({ cls: "notSlashOrComma", code: 0, next: [run, run + 1, run + 2] });
		states.push({ cls: "literal", code: COMMA, next: [run] });
	};
	for (const part of parts) {
		if (typeof part === "string") {
			literal(part);
			continue;
		}
		// Token classes as in the SDK's `partToRegExp`. Its default branch ("[^/]+") is
		// unreachable there, since `parse` only yields these operators, so it has no counterpart.
		switch (part.operator) {
			case "?":
			case "&":
				part.names.forEach((name, k) => {
					literal(`${k === 0 ? part.operator : "&"}${name}=`);
					oneOrMore("notAmpersand");
				});
				break;
			case "+":
			case "#":
				oneOrMore("any");
				break;
			case ".":
				// The SDK ignores "*" here: one run after the dot.
				literal(".");
				oneOrMore("notSlashOrComma");
				break;
			case "/":
				literal("/");
				if (part.exploded) list();
				else oneOrMore("notSlashOrComma");
				break;
			case "":
				if (part.exploded) list();
				else oneOrMore("notSlashOrComma");
				break;
		}
	}
	return states;
}

/** Advances all active states together, one URI character at a time; never backtracks. */
function run(states: readonly State[], uri: string): boolean {
	const accepting = states.length;
	let active: number[] = [0];
	let following: number[] = [];
	// lastAdded[s] === i: s already joined the set built for character i, so no duplicates.
	const lastAdded = new Int32Array(states.length + 1).fill(-1);
	for (let i = 0; i < uri.length; i++) {
		const code = uri.charCodeAt(i);
		following.length = 0;
		for (const s of active) {
			const state = states[s];
			// The accepting state has no entry: nothing may follow a full match.
			if (state === undefined || !consumes(state, code)) continue;
			for (const n of state.next) {
				if (lastAdded[n] === i) continue;
				lastAdded[n] = i;
				following.push(n);
			}
		}
		if (following.length === 0) return false;
		[active, following] = [following, active];
	}
	return active.includes(accepting);
}

/**
 * Compiles a URI template from an upstream server for linear-time matching.
 * Returns null for a malformed template (unclosed `{`, an expression without a name),
 * one longer than {@link MAX_TEMPLATE_LENGTH}, or one with more than
 * {@link MAX_TEMPLATE_EXPRESSIONS} expressions.
 */
export function compileUriTemplate(template: string): CompiledUriTemplate | null {
	if (template.length > MAX_TEMPLATE_LENGTH) return null;
	const parts = parse(template);
	if (parts === null) return null;
	const states = buildStates(parts);
	let literalLength = 0;
	for (const part of parts) if (typeof part === "string") literalLength += part.length;
	return {
		template,
		literalLength,
		matches: (uri) => uri.length <= MAX_URI_LENGTH && run(states, uri),
	};
}
