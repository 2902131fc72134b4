import { isJsonObject } from "../primitives/json-object.ts";
import type { JsonSchema } from "./document-shape.ts";

/*
 * A tool's schema as a plain tree of bounded size, made from a dereferenced
 * document's schema (decision 0097). Dereferencing turns a recursive schema
 * (a tree node whose children are nodes) into a cycle of objects, and every
 * use of a shared schema into the whole of it: a tool's schema is cut where a
 * reference recurs, and where it grows past a bound, so no document makes a
 * tool list that cannot be serialised or is larger than a client can read.
 */

/** The most subschemas one tool schema (input or output) lists; beyond, a subschema is left open. */
export const MAX_SCHEMA_NODES = 1_000;
/** The deepest a tool schema nests subschemas. */
export const MAX_SCHEMA_DEPTH = 32;

/** Keywords whose value is a map of names to schemas. */
const SCHEMA_MAPS: ReadonlySet<string> = new Set([
	"properties",
	"patternProperties",
	"$defs",
	"definitions",
	"dependentSchemas",
]);
/** Keywords whose value is a list of schemas. */
const SCHEMA_LISTS: ReadonlySet<string> = new Set(["allOf", "anyOf", "oneOf", "prefixItems"]);
/** Keywords whose value is a schema (`items` may be a list in older drafts). */
const SCHEMA_VALUES: ReadonlySet<string> = new Set([
	"items",
	"additionalItems",
	"additionalProperties",
	"unevaluatedItems",
	"unevaluatedProperties",
	"contains",
	"propertyNames",
	"not",
	"if",
	"then",
	"else",
	"contentSchema",
]);
/** What a document's schema says for people reading the document, not for a caller: left out of tools. */
const LEFT_OUT: ReadonlySet<string> = new Set(["xml", "externalDocs"]);

/** A bounded copy of a schema, and whether it had to be cut for size (recursion is cut without saying so). */
export function boundedSchema(
	schema: JsonSchema,
	referenceOf: WeakMap<object, string>,
): { schema: JsonSchema; cutForSize: boolean } {
	const walk = new SchemaWalk(referenceOf);
	return { schema: walk.copy(schema, [], new Set(), 0), cutForSize: walk.cutForSize };
}

class SchemaWalk {
	nodes = 0;
	cutForSize = false;
	private readonly referenceOf: WeakMap<object, string>;
	constructor(referenceOf: WeakMap<object, string>) {
		this.referenceOf = referenceOf;
	}

	/** `schema` copied; `references` are those being expanded above it, `above` the objects. */
	copy(schema: unknown, references: readonly string[], above: ReadonlySet<object>, depth: number): JsonSchema {
		if (typeof schema === "boolean") return schema;
		if (!isJsonObject(schema)) return {};
		const reference = this.referenceOf.get(schema);
		const recurs = (reference !== undefined && references.includes(reference)) || above.has(schema);
		if (recurs) return recursion(schema, reference);
		this.nodes++;
		if (this.nodes > MAX_SCHEMA_NODES || depth > MAX_SCHEMA_DEPTH) {
			this.cutForSize = true;
			return { description: "Left out: the schema is too large to list in full." };
		}
		const inside = reference === undefined ? references : [...references, reference];
		const nowAbove = new Set(above).add(schema);
		const child = (value: unknown) => this.copy(value, inside, nowAbove, depth + 1);
		const copy: Record<string, unknown> = {};
		for (const [key, value] of Object.entries(schema)) {
			if (LEFT_OUT.has(key) || key.startsWith("x-")) continue;
			if (SCHEMA_MAPS.has(key) && isJsonObject(value)) {
				copy[key] = Object.fromEntries(Object.entries(value).map(([name, item]) => [name, child(item)]));
			} else if ((SCHEMA_LISTS.has(key) || SCHEMA_VALUES.has(key)) && Array.isArray(value)) {
				copy[key] = value.map(child);
			} else if (SCHEMA_VALUES.has(key)) {
				copy[key] = child(value);
			} else {
				// Data (enum, default, examples) and annotations: JSON from the document, never a cycle.
				copy[key] = value;
			}
		}
		return copy;
	}
}

/** What stands where a schema recurs: open, its type kept, with a description naming it. */
function recursion(schema: Record<string, unknown>, reference: string | undefined): JsonSchema {
	const name = reference === undefined ? "schema" : decodeURIComponent(reference.split("/").at(-1) ?? reference);
	return {
		...(typeof schema.type === "string" ? { type: schema.type } : {}),
		description: `${name}, recursively: the same schema as the enclosing ${name}, not expanded again.`,
	};
}
