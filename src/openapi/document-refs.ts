import { isJsonObject } from "../primitives/json-object.ts";
import type { DocumentProblem } from "./document-load.ts";
import { pointerOf, valueAt } from "./json-pointer.ts";

/*
 * Every `$ref` of a document checked before it is dereferenced, so a problem
 * can say where: scalar's dereference reports a reference it cannot follow by
 * its text alone, and would fetch or read another file if given a plugin to.
 * The gateway follows only references inside the document (decision 0095).
 */

/**
 * Keys whose values are data, not OpenAPI or JSON Schema: a `$ref` inside them
 * is an example's or a default's text, not a reference (as scalar's own
 * reference contexts treat them). `examples` are never read by the compiler.
 */
const DATA_KEYS: ReadonlySet<string> = new Set([
	"example",
	"examples",
	"default",
	"enum",
	"const",
	"dependentRequired",
	"links",
	"scopes",
	"mapping",
]);

/** Maps whose keys are names (a property may be called `default` or `example`), not keywords. */
const NAME_MAPS: ReadonlySet<string> = new Set([
	"properties",
	"patternProperties",
	"$defs",
	"definitions",
	"dependentSchemas",
	"schemas",
	"parameters",
	"responses",
	"requestBodies",
	"headers",
	"content",
	"encoding",
]);

/** The first `$ref` of `document` that points outside it or at nothing in it, as a problem; null when all are sound. */
export function referenceProblem(document: Record<string, unknown>): DocumentProblem | null {
	const stack: { value: unknown; path: string[] }[] = [{ value: document, path: [] }];
	for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
		const { value, path } = next;
		if (typeof value !== "object" || value === null) continue;
		if (isJsonObject(value) && typeof value.$ref === "string") {
			const problem = targetProblem(document, value.$ref, pointerOf([...path, "$ref"]));
			if (problem !== null) return problem;
		}
		const names = NAME_MAPS.has(path.at(-1) ?? "");
		for (const [key, child] of Object.entries(value).reverse()) {
			if (!names && (DATA_KEYS.has(key) || key.startsWith("x-"))) continue;
			stack.push({ value: child, path: [...path, key] });
		}
	}
	return null;
}

function targetProblem(document: Record<string, unknown>, ref: string, where: string): DocumentProblem | null {
	if (!ref.startsWith("#")) {
		return {
			problem: `The document refers to ${JSON.stringify(ref)}, outside itself; only references inside the document ("#/…") are followed, so bundle the document into one file first.`,
			where,
		};
	}
	if (valueAt(document, ref.slice(1)) === undefined) {
		return { problem: `The document refers to ${JSON.stringify(ref)}, which it does not contain.`, where };
	}
	return null;
}
