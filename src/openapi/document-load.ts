import { dereference, upgrade } from "@scalar/openapi-parser";
import { isJsonObject } from "../primitives/json-object.ts";
import { referenceProblem } from "./document-refs.ts";
import { type DocumentStructure, documentStructure, OPERATION_KEYS } from "./document-shape.ts";
import { documentValue } from "./document-text.ts";

/*
 * An OpenAPI document read for compiling (decisions 0095, 0096): parsed
 * (bounded, src/openapi/document-text.ts), its references checked to stay
 * inside it (document-refs.ts), upgraded to OpenAPI 3.1 and dereferenced with
 * `@scalar/openapi-parser` (both run in workerd; its `validate` does not: it
 * compiles with Ajv, which Workers forbid), then the structure the compiler
 * reads checked with zod (document-shape.ts).
 */

export interface DocumentProblem {
	problem: string;
	/** JSON pointer or line:column of what is wrong, when known */
	where?: string;
}

/** A document read and checked: OpenAPI 3.1, dereferenced, as the compiler reads it. */
export interface OpenApiDocument extends DocumentStructure {
	/** The version the document was written in when it was upgraded to 3.1 to be read; null: it was 3.1. */
	upgradedFrom: "2.0" | "3.0" | null;
	/**
	 * The `$ref` each dereferenced schema object was made from. Dereferencing
	 * leaves a recursive schema a cycle of objects; the compiler cuts it where a
	 * reference recurs, and names it (schema-bounds.ts).
	 */
	referenceOf: WeakMap<object, string>;
}

/** Parses (JSON or YAML text, or an object), upgrades Swagger 2.0 and OpenAPI 3.0 to 3.1, dereferences internal $refs (an external one is a problem, with where), checks the structure the compiler reads. */
export async function loadDocument(
	source: string | Record<string, unknown>,
): Promise<{ document: OpenApiDocument } | DocumentProblem> {
	const read = documentValue(source);
	if ("problem" in read) return read;
	if (!isJsonObject(read.value)) {
		return { problem: "The document is not an object: an OpenAPI document is a mapping at its top." };
	}
	// Upgrading changes the value in place: never the caller's object.
	const value = typeof source === "string" ? read.value : structuredClone(read.value);
	const version = versionOf(value);
	if ("problem" in version) return version;
	const references = referenceProblem(value);
	if (references !== null) return references;
	const upgraded = version.upgradedFrom === null ? { value } : upgradedValue(value, version.upgradedFrom);
	if ("problem" in upgraded) return upgraded;
	const referenceOf = new WeakMap<object, string>();
	// Its errors are not read: every reference outside data was checked above to name something
	// in the document, so what it could still report is a `$ref` inside an example, which
	// nothing reads, or a schema that is only a reference to itself, which it drops.
	const { schema } = dereference(upgraded.value, { onDereference: ({ schema, ref }) => referenceOf.set(schema, ref) });
	if (!isJsonObject(schema)) return { problem: "The document is not an object." };
	const structure = documentStructure(schema);
	if ("problem" in structure) return structure;
	const hasOperation = Object.values(structure.paths).some((item) => OPERATION_KEYS.some((key) => item[key]));
	if (!hasOperation) {
		return { problem: "The document has no operations: nothing under its paths to make a tool of.", where: "/paths" };
	}
	return { document: { ...structure, upgradedFrom: version.upgradedFrom, referenceOf } };
}

function versionOf(value: Record<string, unknown>): { upgradedFrom: "2.0" | "3.0" | null } | DocumentProblem {
	if (value.swagger === "2.0") return { upgradedFrom: "2.0" };
	const openapi = value.openapi;
	if (typeof openapi === "string" && /^3\.0\.\d+$/.test(openapi)) return { upgradedFrom: "3.0" };
	if (typeof openapi === "string" && /^3\.1\.\d+$/.test(openapi)) return { upgradedFrom: null };
	const stated = openapi ?? value.swagger;
	return {
		problem:
			stated === undefined
				? 'The document says no version: an OpenAPI document starts with `openapi: 3.1.x` (or 3.0.x, or `swagger: "2.0"`).'
				: `The document's version ${JSON.stringify(stated)} is not one the gateway reads: OpenAPI 3.0 or 3.1, or Swagger 2.0.`,
		where: openapi === undefined && value.swagger !== undefined ? "/swagger" : "/openapi",
	};
}

function upgradedValue(
	value: Record<string, unknown>,
	from: "2.0" | "3.0",
): { value: Record<string, unknown> } | DocumentProblem {
	let specification: unknown;
	try {
		specification = upgrade(value).specification;
	} catch (error) {
		// The upgrader trusts its input's shape; a document it cannot convert is the operator's to fix.
		if (!(error instanceof Error)) throw error;
		const what = from === "2.0" ? "Swagger 2.0" : "OpenAPI 3.0";
		return {
			problem: `The ${what} document could not be converted to OpenAPI 3.1 (${error.message}); convert it to OpenAPI 3.1 yourself.`,
		};
	}
	return isJsonObject(specification)
		? { value: specification }
		: { problem: "The document could not be converted to OpenAPI 3.1." };
}
