import type { CompiledParameter } from "../registry/openapi-records.ts";

/*
 * One parameter's value written as its `style` and `explode` say (OpenAPI 3.1
 * §4.8.12.4, the tables of 3.1.1), for each place a parameter goes: the text
 * that replaces `{name}` in the path, the `name=value` pairs of the query or
 * the Cookie header, the value of a header. Values are JSON from a tool call:
 * a primitive, an array of primitives or an object of primitives; what a style
 * cannot write (a nested value, an array for deepObject) is a problem naming
 * the argument, never a guess.
 */

/** What goes wrong, as a sentence a person (or a model) can act on. */
export interface ArgumentProblem {
	problem: string;
}

/** A value as the styles see it: one text, a list, or an object's entries, each already a string. */
type Shaped =
	| { kind: "primitive"; text: string }
	| { kind: "array"; items: string[] }
	| { kind: "object"; entries: [string, string][] };

/** Characters RFC 6570's reserved expansion (`allowReserved`) leaves as they are in a query value. `&`, `=`, `+` and `#` stay encoded: literally, they would end the value or the query. */
const RESERVED_KEPT = /%(3A|2F|3F|5B|5D|40|21|24|27|28|29|2A|2C|3B)/g;

/**
 * Percent-encodes all but RFC 3986's unreserved characters (`A-Z a-z 0-9 - . _ ~`): RFC 6570's
 * simple expansion. So `/`, `?`, `#`, `%`, `;`, `,` and `=` in a value can never be read as
 * a delimiter. Null for text that is not well-formed Unicode (a lone surrogate).
 */
export function encodeUnreserved(text: string): string | null {
	if (!text.isWellFormed()) return null;
	return encodeURIComponent(text).replace(/[!'()*]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`);
}

function argumentName(parameter: CompiledParameter): string {
	return `The argument "${parameter.property}"`;
}

function primitiveText(value: unknown): string | null {
	if (typeof value === "string") return value;
	if (typeof value === "number") return Number.isFinite(value) ? String(value) : null;
	if (typeof value === "boolean") return String(value);
	return null;
}

/** The value as a primitive, a list of primitives or an object of primitives; null when it nests deeper. */
function shapeOf(parameter: CompiledParameter, value: unknown): Shaped | null {
	if (parameter.json) return { kind: "primitive", text: JSON.stringify(value) };
	const text = primitiveText(value);
	if (text !== null) return { kind: "primitive", text };
	if (Array.isArray(value)) {
		const items = value.map(primitiveText);
		return items.every((item) => item !== null) ? { kind: "array", items } : null;
	}
	if (typeof value === "object" && value !== null) {
		const entries: [string, string][] = [];
		for (const [key, item] of Object.entries(value)) {
			const itemText = primitiveText(item);
			if (itemText === null) return null;
			entries.push([key, itemText]);
		}
		return { kind: "object", entries };
	}
	return null;
}

function nestedProblem(parameter: CompiledParameter): ArgumentProblem {
	return {
		problem: `${argumentName(parameter)} holds a nested or null value, which the ${parameter.in} parameter "${parameter.name}" (style ${parameter.style}) cannot send: give a string, number or boolean, a list of them, or an object of them.`,
	};
}

function unicodeProblem(parameter: CompiledParameter): ArgumentProblem {
	return { problem: `${argumentName(parameter)} is not well-formed Unicode text (it holds a lone surrogate).` };
}

/** The shaped value with every text encoded by `encode`; null when one of them cannot be. */
function encodeShaped(shaped: Shaped, encode: (text: string) => string | null): Shaped | null {
	if (shaped.kind === "primitive") {
		const text = encode(shaped.text);
		return text === null ? null : { kind: "primitive", text };
	}
	if (shaped.kind === "array") {
		const items = shaped.items.map(encode);
		return items.every((item) => item !== null) ? { kind: "array", items } : null;
	}
	const entries: [string, string][] = [];
	for (const [key, value] of shaped.entries) {
		const encodedKey = encode(key);
		const encodedValue = encode(value);
		if (encodedKey === null || encodedValue === null) return null;
		entries.push([encodedKey, encodedValue]);
	}
	return { kind: "object", entries };
}

/** The shaped value, encoded, or the problem that stops it. */
function prepared(
	parameter: CompiledParameter,
	value: unknown,
	encode: (text: string) => string | null,
): Shaped | ArgumentProblem {
	const shaped = shapeOf(parameter, value);
	if (shaped === null) return nestedProblem(parameter);
	return encodeShaped(shaped, encode) ?? unicodeProblem(parameter);
}

/** An object's entries: `k=v` joined by `separator` when exploded, else flattened `k,v,k,v`. */
function entriesText(entries: [string, string][], explode: boolean, separator: string): string {
	return explode ? entries.map(([key, value]) => `${key}=${value}`).join(separator) : entries.flat().join(",");
}

function listText(shaped: Shaped, separator: string): string {
	if (shaped.kind === "primitive") return shaped.text;
	if (shaped.kind === "array") return shaped.items.join(separator);
	return shaped.entries.flat().join(separator);
}

/**
 * The text that replaces `{name}` in the path: style simple (`5`, `3,4,5`), label (`.5`,
 * `.3.4.5`) or matrix (`;id=5`, `;id=3;id=4`), every value percent-encoded as
 * `encodeUnreserved` does, so a value stays inside its segment.
 */
export function pathValue(parameter: CompiledParameter, value: unknown): string | ArgumentProblem {
	const shaped = prepared(parameter, value, encodeUnreserved);
	if ("problem" in shaped) return shaped;
	const name = encodeUnreserved(parameter.name) ?? "";
	const { explode } = parameter;
	switch (parameter.style) {
		case "simple":
			return shaped.kind === "object" ? entriesText(shaped.entries, explode, ",") : listText(shaped, ",");
		case "label": {
			if (shaped.kind === "object") return `.${entriesText(shaped.entries, explode, ".")}`;
			return `.${listText(shaped, explode ? "." : ",")}`;
		}
		case "matrix": {
			const pair = (text: string) => (text === "" ? `;${name}` : `;${name}=${text}`);
			if (shaped.kind === "primitive") return pair(shaped.text);
			if (shaped.kind === "array") return explode ? shaped.items.map(pair).join("") : pair(shaped.items.join(","));
			if (explode) return shaped.entries.map(([key, text]) => `;${key}=${text}`).join("");
			return pair(shaped.entries.flat().join(","));
		}
		default:
			return styleProblem(parameter);
	}
}

function styleProblem(parameter: CompiledParameter): ArgumentProblem {
	return {
		problem: `The ${parameter.in} parameter "${parameter.name}" has style ${parameter.style}, which a ${parameter.in} parameter cannot have; the API's document needs mending.`,
	};
}

/** How a query value's text is encoded: unreserved only, or with RFC 3986's reserved characters kept (`allowReserved`). */
function queryEncoder(parameter: CompiledParameter): (text: string) => string | null {
	if (!parameter.allowReserved) return encodeUnreserved;
	return (text) => encodeUnreserved(text)?.replace(RESERVED_KEPT, (triplet) => decodeURIComponent(triplet)) ?? null;
}

/** The delimiters of the query styles that join an array's items in one value (3.1.1's table: encoded). */
const QUERY_DELIMITERS = { form: ",", spaceDelimited: "%20", pipeDelimited: "%7C" } as const;

/**
 * The query's `name=value` pairs for one parameter, already encoded: form (`id=3&id=4`,
 * `id=3,4`), spaceDelimited (`id=3%204`), pipeDelimited (`id=3%7C4`) and deepObject
 * (`id%5Brole%5D=admin`). An empty list sends `name=` when not exploded, nothing when exploded.
 */
export function queryPairs(parameter: CompiledParameter, value: unknown): string[] | ArgumentProblem {
	const shaped = prepared(parameter, value, queryEncoder(parameter));
	if ("problem" in shaped) return shaped;
	const name = encodeUnreserved(parameter.name) ?? "";
	const { style, explode } = parameter;
	if (style === "deepObject") {
		if (shaped.kind !== "object") {
			return {
				problem: `${argumentName(parameter)} must be an object: the query parameter "${parameter.name}" is sent in deepObject style (${parameter.name}[key]=value).`,
			};
		}
		return shaped.entries.map(([key, text]) => `${name}%5B${key}%5D=${text}`);
	}
	if (style !== "form" && style !== "spaceDelimited" && style !== "pipeDelimited") return styleProblem(parameter);
	if (shaped.kind === "primitive") return [`${name}=${shaped.text}`];
	if (explode) {
		if (shaped.kind === "array") return shaped.items.map((text) => `${name}=${text}`);
		return shaped.entries.map(([key, text]) => `${key}=${text}`);
	}
	return [`${name}=${listText(shaped, QUERY_DELIMITERS[style])}`];
}

/** Header values: one line of visible Latin-1 (and tabs), as `Headers` takes and no CR/LF can split. */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** A header parameter's value in style simple, not percent-encoded (headers carry text as it is). */
export function headerValue(parameter: CompiledParameter, value: unknown): string | ArgumentProblem {
	if (parameter.style !== "simple") return styleProblem(parameter);
	const shaped = prepared(parameter, value, (text) => text);
	if ("problem" in shaped) return shaped;
	const text = shaped.kind === "object" ? entriesText(shaped.entries, parameter.explode, ",") : listText(shaped, ",");
	if (!HEADER_VALUE.test(text)) {
		return {
			problem: `${argumentName(parameter)} cannot be sent in the header "${parameter.name}": a header value is one line of printable Latin-1 characters (no line breaks, control characters or characters beyond U+00FF).`,
		};
	}
	return text;
}

/** A cookie parameter's `name=value` pairs in style form, values percent-encoded (so no `;`, `,` or space ends them). */
export function cookiePairs(parameter: CompiledParameter, value: unknown): string[] | ArgumentProblem {
	if (parameter.style !== "form") return styleProblem(parameter);
	const shaped = prepared(parameter, value, encodeUnreserved);
	if ("problem" in shaped) return shaped;
	const name = encodeUnreserved(parameter.name) ?? "";
	if (shaped.kind === "primitive") return [`${name}=${shaped.text}`];
	if (parameter.explode) {
		if (shaped.kind === "array") return shaped.items.map((text) => `${name}=${text}`);
		return shaped.entries.map(([key, text]) => `${key}=${text}`);
	}
	return [`${name}=${listText(shaped, ",")}`];
}
