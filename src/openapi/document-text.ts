import { parseDocument } from "yaml";
import { MAX_JSON_DEPTH, nestsDeeperThan } from "../mcp/json-depth.ts";
import { isJsonObject } from "../primitives/json-object.ts";
import type { DocumentProblem } from "./document-load.ts";

/*
 * A document's text (or the object an admin body carried) turned into a plain
 * value, with its cost bounded before anything walks it (decision 0058's
 * spirit: bounded where the input enters). Syntax errors keep their line and
 * column: scalar's own `normalize` parses too, but drops where the text is wrong.
 */

/** The largest document read, as UTF-8: real documents of thousands of operations are a few MiB. */
export const MAX_DOCUMENT_BYTES = 4 * 1024 * 1024;

/**
 * YAML aliases a document may expand: each alias copies its anchor's value, so
 * a few lines of nested aliases expand to gigabytes ("billion laughs"). Real
 * documents use a handful, if any.
 */
export const MAX_YAML_ALIASES = 100;

/** The plain value of a document given as text or as an object, or what is wrong with it. */
export function documentValue(source: string | Record<string, unknown>): { value: unknown } | DocumentProblem {
	if (typeof source !== "string") {
		const text = JSON.stringify(source);
		if (text.length > MAX_DOCUMENT_BYTES) return tooLarge();
		if (nestsDeeperThan(text)) return tooDeep();
		return { value: source };
	}
	if (source.length > MAX_DOCUMENT_BYTES || new TextEncoder().encode(source).byteLength > MAX_DOCUMENT_BYTES) {
		return tooLarge();
	}
	const text = source.startsWith("\uFEFF") ? source.slice(1) : source;
	if (text.trim() === "") return { problem: "The document is empty." };
	return /^\s*[{[]/.test(text) ? jsonValue(text) : yamlValue(text);
}

function jsonValue(text: string): { value: unknown } | DocumentProblem {
	if (nestsDeeperThan(text)) return tooDeep();
	try {
		return { value: JSON.parse(text) };
	} catch (error) {
		if (!(error instanceof SyntaxError)) throw error;
		const position = /at position (\d+)/.exec(error.message)?.[1];
		const where = position === undefined ? undefined : lineAndColumn(text, Number(position));
		return {
			problem: `The document is not valid JSON: ${error.message.replace(/ in JSON at position \d+.*$/, "")}.`,
			...(where === undefined ? {} : { where }),
		};
	}
}

function yamlValue(text: string): { value: unknown } | DocumentProblem {
	const document = parseDocument(text, { merge: true, prettyErrors: true, uniqueKeys: true });
	const error = document.errors[0];
	if (error !== undefined) {
		const at = error.linePos?.[0];
		return {
			problem: `The document is neither JSON nor valid YAML: ${firstLine(error.message)}.`,
			...(at === undefined ? {} : { where: `${at.line}:${at.col}` }),
		};
	}
	let value: unknown;
	try {
		value = document.toJS({ maxAliasCount: MAX_YAML_ALIASES });
	} catch (error) {
		// The yaml package throws a ReferenceError when aliases expand past maxAliasCount.
		if (error instanceof ReferenceError) {
			return {
				problem: `The document's YAML aliases expand too far (more than ${MAX_YAML_ALIASES} copies); write the values out or use fewer aliases.`,
			};
		}
		throw error;
	}
	if (!isJsonObject(value))
		return { problem: "The document is not an object: an OpenAPI document is a mapping at its top." };
	if (deeperThan(value, MAX_JSON_DEPTH)) return tooDeep();
	return { value };
}

/** Whether a parsed value nests objects and arrays deeper than `limit` (aliases may repeat a value; they do not loop). */
function deeperThan(value: unknown, limit: number): boolean {
	if (typeof value !== "object" || value === null) return false;
	if (limit === 0) return true;
	for (const child of Object.values(value)) if (deeperThan(child, limit - 1)) return true;
	return false;
}

/** `line:column`, both from 1, of a character offset. */
function lineAndColumn(text: string, offset: number): string {
	const before = text.slice(0, offset).split("\n");
	return `${before.length}:${(before.at(-1)?.length ?? 0) + 1}`;
}

function firstLine(message: string): string {
	return (message.split("\n")[0] ?? message).replace(/ at line \d+, column \d+:?$/, "").replace(/\.$/, "");
}

function tooLarge(): DocumentProblem {
	return {
		problem: `The document is larger than ${MAX_DOCUMENT_BYTES / 1024 / 1024} MiB; serve a smaller one (only the operations the server needs).`,
	};
}

function tooDeep(): DocumentProblem {
	return { problem: `The document nests objects and arrays deeper than ${MAX_JSON_DEPTH} levels.` };
}
