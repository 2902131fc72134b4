import type { CompiledBody, CompiledParameter } from "../registry/openapi-records.ts";
import type { DocumentMediaType, DocumentOperation, DocumentParameter, JsonSchema } from "./document-shape.ts";
import { boundedSchema } from "./schema-bounds.ts";

/*
 * An operation's tool input and output (the rules agreed with http-request.ts
 * and http-answer.ts): one input property per parameter, named as it, or
 * `<in>_<name>` when an earlier parameter in another location has the name;
 * the request body under `body` (`requestBody` when a parameter is named
 * body). The output schema is the first 2xx JSON answer's schema when that is
 * an object schema, else `{ result: <schema> }` when it is one of another type.
 */

/** Header parameters that OpenAPI says to ignore: the request's own headers and credentials set them (3.1 §4.8.12.1). */
const IGNORED_HEADERS: ReadonlySet<string> = new Set(["accept", "content-type", "authorization"]);

/** The styles each location allows (3.1 §4.8.12.4), its default first. */
const STYLES: Record<CompiledParameter["in"], readonly CompiledParameter["style"][]> = {
	path: ["simple", "label", "matrix"],
	query: ["form", "spaceDelimited", "pipeDelimited", "deepObject"],
	header: ["simple"],
	cookie: ["form"],
};

const FORM = "application/x-www-form-urlencoded";

export interface OperationInput {
	inputSchema: Record<string, unknown>;
	parameters: CompiledParameter[];
	body: CompiledBody | null;
	notes: string[];
}

/** Whether a media type is JSON: `application/json` or a `+json` type, parameters aside. */
export function isJsonMediaType(mediaType: string): boolean {
	const type = mediaType.split(";")[0]?.trim().toLowerCase() ?? "";
	return type === "application/json" || /^[a-z]+\/[^\s/]+\+json$/.test(type);
}

/**
 * The input of an operation: its path item's parameters it does not override,
 * then its own; the body JSON or form. A body of another type only, when
 * required, leaves the operation out (null, with the reason).
 */
export function operationInput(
	tool: string,
	pathParameters: readonly DocumentParameter[],
	operation: DocumentOperation,
	referenceOf: WeakMap<object, string>,
): OperationInput | { leftOut: string } {
	const own = operation.parameters ?? [];
	const inherited = pathParameters.filter((p) => !own.some((o) => o.name === p.name && o.in === p.in));
	const notes: string[] = [];
	const properties: Record<string, unknown> = {};
	const required: string[] = [];
	const parameters: CompiledParameter[] = [];
	let cut = false;
	for (const parameter of [...inherited, ...own]) {
		if (parameter.in === "header" && IGNORED_HEADERS.has(parameter.name.toLowerCase())) continue;
		const property = freeName(parameter.name, `${parameter.in}_${parameter.name}`, properties);
		const media = parameter.content === undefined ? undefined : Object.entries(parameter.content)[0];
		const schema = boundedSchema(media?.[1].schema ?? parameter.schema ?? {}, referenceOf);
		cut ||= schema.cutForSize;
		properties[property] = described(schema.schema, parameter.description);
		const isRequired = parameter.in === "path" || parameter.required === true;
		if (isRequired) required.push(property);
		const styles = STYLES[parameter.in];
		const style = parameter.style ?? styles[0] ?? "simple";
		if (!styles.includes(style)) {
			notes.push(
				`Tool ${tool}: parameter ${parameter.name} in ${parameter.in} cannot have style ${style}; it is sent as ${styles[0]}.`,
			);
		}
		const sentStyle = styles.includes(style) ? style : (styles[0] ?? "simple");
		parameters.push({
			name: parameter.name,
			in: parameter.in,
			property,
			required: isRequired,
			style: sentStyle,
			explode: parameter.explode ?? sentStyle === "form",
			allowReserved: parameter.in === "query" && parameter.allowReserved === true,
			json: media !== undefined && isJsonMediaType(media[0]),
		});
	}
	let body: CompiledBody | null = null;
	const requestBody = operation.requestBody;
	if (requestBody !== undefined) {
		const content = Object.entries(requestBody.content);
		const chosen = content.find(([type]) => isJsonMediaType(type)) ?? content.find(([type]) => type === FORM);
		const isRequired = requestBody.required === true;
		if (chosen === undefined) {
			const offered = content.map(([type]) => type).join(", ") || "no media type";
			if (isRequired) return { leftOut: `its request body is ${offered}, and only JSON and form bodies are sent` };
			notes.push(
				`Tool ${tool}: its optional request body (${offered}) is left out; only JSON and form bodies are sent.`,
			);
		} else {
			const property = freeName("body", "requestBody", properties);
			const schema = boundedSchema(chosen[1].schema ?? {}, referenceOf);
			cut ||= schema.cutForSize;
			properties[property] = described(schema.schema, requestBody.description);
			if (isRequired) required.push(property);
			body = { property, mediaType: chosen[0], required: isRequired };
		}
	}
	if (cut) notes.push(`Tool ${tool}: its input schema is too large to list in full; the deepest parts are left open.`);
	const inputSchema = { type: "object", properties, ...(required.length > 0 ? { required } : {}) };
	return { inputSchema, parameters, body, notes };
}

/** The 2xx answers' media types (in code order), JSON first. */
function answerMediaTypes(operation: DocumentOperation): [string, DocumentMediaType][] {
	const answers = Object.entries(operation.responses ?? {})
		.filter(([code]) => /^2(\d\d|XX)$/i.test(code))
		.sort(([a], [b]) => a.localeCompare(b));
	const types = answers.flatMap(([, answer]) => Object.entries(answer.content ?? {}));
	return [...types.filter(([type]) => isJsonMediaType(type)), ...types.filter(([type]) => !isJsonMediaType(type))];
}

/** The `Accept` a call sends: the 2xx answers' media types, JSON first; null when the document names none. */
export function acceptOf(operation: DocumentOperation): string | null {
	const types = [...new Set(answerMediaTypes(operation).map(([type]) => type))];
	return types.length === 0 ? null : types.join(", ");
}

/**
 * The output schema: the first 2xx JSON answer's schema if it is an object
 * schema (`type: "object"`, or properties without a type), `{ result }` around
 * it if its type is another one; none when the schema allows objects and
 * other values alike (no type, or several), since the answer's shape then
 * decides between the two forms.
 */
export function outputSchemaOf(
	tool: string,
	operation: DocumentOperation,
	referenceOf: WeakMap<object, string>,
): { outputSchema: Record<string, unknown> | null; notes: string[] } {
	const json = answerMediaTypes(operation).find(([type, media]) => isJsonMediaType(type) && media.schema !== undefined);
	if (json?.[1].schema === undefined) return { outputSchema: null, notes: [] };
	const { schema, cutForSize } = boundedSchema(json[1].schema, referenceOf);
	const notes = cutForSize
		? [`Tool ${tool}: its output schema is too large to list in full; the deepest parts are left open.`]
		: [];
	if (typeof schema === "boolean") return { outputSchema: null, notes };
	const type = schema.type;
	if (type === "object" || (type === undefined && schema.properties !== undefined)) {
		return { outputSchema: { ...schema, type: "object" }, notes };
	}
	const single = Array.isArray(type) && type.length === 1 ? type[0] : type;
	if (typeof single === "string" && single !== "object") {
		return { outputSchema: { type: "object", properties: { result: schema }, required: ["result"] }, notes };
	}
	return { outputSchema: null, notes };
}

/** `preferred` unless a property has it, then `fallback`, then `fallback_2`… */
function freeName(preferred: string, fallback: string, taken: Record<string, unknown>): string {
	if (!Object.hasOwn(taken, preferred)) return preferred;
	if (!Object.hasOwn(taken, fallback)) return fallback;
	for (let n = 2; ; n++) if (!Object.hasOwn(taken, `${fallback}_${n}`)) return `${fallback}_${n}`;
}

/** A property's schema with the parameter's (or body's) description, which says more than the schema's. */
function described(schema: JsonSchema, description: string | undefined): JsonSchema {
	if (description === undefined || description === "") return schema;
	if (typeof schema === "boolean") return schema ? { description } : schema;
	return { ...schema, description };
}
