import { escapeHtml, page } from "../../auth/pages.ts";

/** What the page reads of an OpenAPI 3.1 document: only these parts, loosely typed. */
export interface ApiDocument {
	info: { title: string; version: string; description?: string };
	paths: Record<string, Record<string, Operation>>;
}

interface Operation {
	summary?: string;
	description?: string;
	tags?: string[];
	parameters?: Array<{ name: string; in: string; required?: boolean; description?: string; schema?: Schema }>;
	requestBody?: { description?: string; content?: Record<string, { schema?: Schema }> };
	responses?: Record<string, { description?: string }>;
}

interface Schema {
	type?: string | string[];
	properties?: Record<string, Schema>;
	required?: string[];
	items?: Schema;
	enum?: unknown[];
	oneOf?: Schema[];
	anyOf?: Schema[];
	default?: unknown;
	description?: string;
	pattern?: string;
	format?: string;
	additionalProperties?: boolean | Schema;
}

export const METHODS = ["get", "put", "post", "delete", "patch"] as const;

/**
 * `/admin/docs`: the admin API's reference, rendered on the server from the
 * OpenAPI document, so the page and the document never disagree. No script,
 * from anywhere: the Content-Security-Policy allows only the inline style.
 */
export function docsPage(document: ApiDocument): Response {
	const byTag = new Map<string, string[]>();
	for (const [path, item] of Object.entries(document.paths)) {
		for (const method of METHODS) {
			const operation = item[method];
			if (!operation) continue;
			const tag = operation.tags?.[0] ?? "other";
			byTag.set(tag, [...(byTag.get(tag) ?? []), operationHtml(method, path, operation)]);
		}
	}
	const groups = [...byTag].map(([tag, sections]) => `<h2>${escapeHtml(tag)}</h2>${sections.join("")}`).join("");
	const title = escapeHtml(document.info.title);
	const intro = document.info.description ? `<p>${prose(document.info.description)}</p>` : "";
	const body = page(
		document.info.title,
		`<h1>${title} <small>${escapeHtml(document.info.version)}</small></h1>${intro}<p>The same description as JSON: <a href="/admin/openapi.json"><code>/admin/openapi.json</code></a> (OpenAPI 3.1).</p>${groups}`,
		{ wide: true },
	);
	return new Response(body, {
		headers: {
			"content-type": "text/html; charset=utf-8",
			"cache-control": "no-store",
			"content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
			"x-frame-options": "DENY",
		},
	});
}

/** Escaped text, its `backticked` words set as code (the descriptions are written that way). */
function prose(text: string | undefined): string {
	return escapeHtml(text ?? "").replace(/`([^`]+)`/g, "<code>$1</code>");
}

function operationHtml(method: string, path: string, operation: Operation): string {
	const id = `${method}-${path}`.replace(/[^A-Za-z0-9-]+/g, "-");
	const parts = [
		`<h3><span class="m ${method}">${method.toUpperCase()}</span>${escapeHtml(path)}</h3>`,
		operation.summary ? `<p><strong>${escapeHtml(operation.summary)}</strong></p>` : "",
		operation.description ? `<p>${prose(operation.description)}</p>` : "",
		parametersHtml(operation.parameters ?? []),
		bodyHtml(operation.requestBody),
		responsesHtml(operation.responses ?? {}),
	];
	return `<section id="${escapeHtml(id)}">${parts.join("")}</section>`;
}

function parametersHtml(parameters: NonNullable<Operation["parameters"]>): string {
	if (parameters.length === 0) return "";
	const rows = parameters.map(
		(parameter) =>
			`<tr><td><code>${escapeHtml(parameter.name)}</code></td><td>${escapeHtml(parameter.in)}</td><td>${parameter.required ? "required" : "optional"}</td><td>${typeOf(parameter.schema)}</td><td>${prose(parameter.description)}</td></tr>`,
	);
	return `<h4>Parameters</h4><div class="scroll"><table><tr><th>name</th><th>in</th><th></th><th>type</th><th></th></tr>${rows.join("")}</table></div>`;
}

function bodyHtml(body: Operation["requestBody"]): string {
	const schema = body?.content?.["application/json"]?.schema;
	if (!body || !schema) return "";
	const required = new Set(schema.required ?? []);
	const rows = Object.entries(schema.properties ?? {}).map(
		([name, field]) =>
			`<tr><td><code>${escapeHtml(name)}</code></td><td>${required.has(name) ? "required" : "optional"}</td><td>${typeOf(field)}</td><td>${field.default === undefined ? "" : `<code>${escapeHtml(JSON.stringify(field.default))}</code>`}</td><td>${prose(field.description)}</td></tr>`,
	);
	const fields = rows.length
		? `<div class="scroll"><table><tr><th>field</th><th></th><th>type</th><th>default</th><th></th></tr>${rows.join("")}</table></div>`
		: "";
	return `<h4>Request body <code>application/json</code></h4>${body.description ? `<p>${prose(body.description)}</p>` : ""}${fields}`;
}

function responsesHtml(responses: NonNullable<Operation["responses"]>): string {
	const rows = Object.entries(responses).map(
		([status, response]) =>
			`<tr><td><code>${escapeHtml(status)}</code></td><td>${prose(response.description)}</td></tr>`,
	);
	return rows.length ? `<h4>Responses</h4><div class="scroll"><table>${rows.join("")}</table></div>` : "";
}

/** A field's type in a few words: `string`, `"a" | "b"`, `array of string`, `one of 4 objects`. */
function typeOf(schema: Schema | undefined): string {
	if (!schema) return "";
	if (schema.enum) return schema.enum.map((value) => `<code>${escapeHtml(JSON.stringify(value))}</code>`).join(" | ");
	const alternatives = schema.oneOf ?? schema.anyOf;
	const kinds = alternatives?.map((alternative) => alternative.properties?.type?.enum?.[0]);
	if (kinds?.every((kind) => kind !== undefined)) {
		return `object, by <code>type</code>: ${kinds.map((kind) => `<code>${escapeHtml(JSON.stringify(kind))}</code>`).join(" | ")}`;
	}
	if (alternatives) return alternatives.map(typeOf).join(" or ");
	if (schema.type === "array") return `array of ${typeOf(schema.items) || "values"}`;
	if (schema.type === "object" && schema.properties) {
		return `object (${Object.keys(schema.properties)
			.map((name) => `<code>${escapeHtml(name)}</code>`)
			.join(", ")})`;
	}
	const type = Array.isArray(schema.type) ? schema.type.join(" | ") : (schema.type ?? "any");
	return escapeHtml(schema.format ? `${type} (${schema.format})` : type);
}
