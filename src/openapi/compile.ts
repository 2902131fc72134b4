import type { CompiledApi, CompiledOperation, CompiledTool } from "../registry/openapi-records.ts";
import { baseUrlOf } from "./base-url.ts";
import type { DocumentProblem, OpenApiDocument } from "./document-load.ts";
import { type DocumentOperation, type DocumentPathItem, OPERATION_KEYS, type OperationKey } from "./document-shape.ts";
import { acceptOf, operationInput, outputSchemaOf } from "./operation-schemas.ts";
import { compiledSchemes, meetableRequirements } from "./security-schemes.ts";
import { toolNames } from "./tool-names.ts";

/*
 * A document compiled into what the registry stores (decision 0097): one tool
 * per operation, and the recipe of the HTTP request each call becomes. Notes
 * tell the operator what was left out or changed; a problem refuses the
 * document with a sentence saying what to do.
 */

export interface CompileOptions {
	/** Where the document was fetched from, to resolve a relative `servers[0].url`; null for an inline document. */
	documentUrl: string | null;
	/** The operator's baseUrl; null: the document's first server. */
	baseUrl: string | null;
	/** Whether a tool (by its compiled name) is kept: the server's tools.include/exclude globs, applied by the caller. */
	keep: (toolName: string) => boolean;
	/** At most this many tools; the rest are left out and a note says so. */
	maxTools: number;
}

/** The most operations of a document named and considered; a larger one is read up to here, with a note. */
export const MAX_OPERATIONS_CONSIDERED = 10_000;

/** The largest compiled API, as JSON: what the registry stores and publishes, and every isolate reads. */
export const MAX_COMPILED_BYTES = 1024 * 1024;

interface FoundOperation {
	method: OperationKey;
	path: string;
	item: DocumentPathItem;
	operation: DocumentOperation;
	operationId?: string;
}

export function compileApi(
	document: OpenApiDocument,
	options: CompileOptions,
): { api: CompiledApi; notes: string[] } | DocumentProblem {
	const notes: string[] = [];
	if (document.upgradedFrom === "2.0") notes.push("The Swagger 2.0 document was converted to OpenAPI 3.1 to be read.");
	const baseUrl = baseUrlOf(document.servers, options);
	if (typeof baseUrl !== "string") return baseUrl;
	const security = compiledSchemes(document.components?.securitySchemes);
	notes.push(...security.notes);

	const found = operationsOf(document, notes);
	const names = toolNames(found);
	const kept = found
		.map((operation, index) => ({ ...operation, name: names[index] ?? "" }))
		.filter((o) => options.keep(o.name));
	if (kept.length === 0) {
		const shown = names.slice(0, 10).join(", ");
		const more = names.length > 10 ? `, and ${names.length - 10} more` : "";
		return {
			problem: `None of the document's ${found.length} operations is kept by the server's tools.include and tools.exclude; the tools would be: ${shown}${more}.`,
		};
	}
	const operations: CompiledOperation[] = [];
	const leftOut: string[] = [];
	let separateServers = 0;
	let bytes = 0;
	let next = 0;
	// Compiled only up to maxTools, and refused as soon as they outgrow the bound: a document of
	// thousands of large operations costs no more than the tools a server may list.
	for (; next < kept.length && operations.length < options.maxTools; next++) {
		const operation = kept[next];
		if (operation === undefined) break;
		const compiled = compiledOperation(operation, document, security.schemes);
		notes.push(...compiled.notes);
		if ("leftOut" in compiled) {
			leftOut.push(...compiled.notes);
			continue;
		}
		bytes += byteLength(JSON.stringify(compiled.operation));
		if (bytes > MAX_COMPILED_BYTES) return tooLarge();
		if (operation.operation.servers !== undefined || operation.item.servers !== undefined) separateServers++;
		operations.push(compiled.operation);
	}
	if (operations.length === 0) {
		return {
			problem: `None of the chosen operations can be called through the gateway. ${leftOut.slice(0, 3).join(" ")}`,
		};
	}
	if (separateServers > 0) {
		notes.push(
			`${separateServers} operation${separateServers === 1 ? " names" : "s name"} servers of ${separateServers === 1 ? "its" : "their"} own; every call goes to ${baseUrl}.`,
		);
	}
	if (next < kept.length) {
		notes.push(
			`${kept.length - next} more operations are left out: a server lists at most ${options.maxTools} tools; choose them with tools.include.`,
		);
	}
	const api: CompiledApi = {
		title: document.info.title,
		version: document.info.version,
		description: document.info.description ?? null,
		baseUrl,
		operations,
		securitySchemes: security.schemes,
		security: meetableRequirements(document.security ?? [], security.schemes),
	};
	if (byteLength(JSON.stringify(api)) > MAX_COMPILED_BYTES) return tooLarge();
	return { api, notes };
}

function tooLarge(): DocumentProblem {
	return {
		problem: `The compiled tools take more than the ${MAX_COMPILED_BYTES / 1024} KiB a server may; choose fewer operations with tools.include.`,
	};
}

function byteLength(text: string): number {
	return new TextEncoder().encode(text).byteLength;
}

/** The document's operations in its order, up to MAX_OPERATIONS_CONSIDERED. */
function operationsOf(document: OpenApiDocument, notes: string[]): FoundOperation[] {
	const found: FoundOperation[] = [];
	let total = 0;
	for (const [path, item] of Object.entries(document.paths)) {
		for (const method of OPERATION_KEYS) {
			const operation = item[method];
			if (operation === undefined) continue;
			total++;
			if (found.length < MAX_OPERATIONS_CONSIDERED) {
				found.push({
					method,
					path,
					item,
					operation,
					...(operation.operationId === undefined ? {} : { operationId: operation.operationId }),
				});
			}
		}
	}
	if (total > found.length) {
		notes.push(`The document has ${total} operations; only the first ${MAX_OPERATIONS_CONSIDERED} are read.`);
	}
	return found;
}

function compiledOperation(
	found: FoundOperation & { name: string },
	document: OpenApiDocument,
	schemes: CompiledApi["securitySchemes"],
): { operation: CompiledOperation; notes: string[] } | { leftOut: true; notes: string[] } {
	const { operation, name } = found;
	const input = operationInput(name, found.item.parameters ?? [], operation, document.referenceOf);
	if ("leftOut" in input) {
		return {
			leftOut: true,
			notes: [`Operation ${found.method.toUpperCase()} ${found.path} (${name}) is left out: ${input.leftOut}.`],
		};
	}
	const output = outputSchemaOf(name, operation, document.referenceOf);
	const tool: CompiledTool = {
		name,
		...(operation.summary === undefined ? {} : { title: operation.summary }),
		...descriptionOf(operation),
		inputSchema: input.inputSchema,
		...(output.outputSchema === null ? {} : { outputSchema: output.outputSchema }),
		annotations: annotationsOf(found.method, operation.summary),
	};
	return {
		operation: {
			tool,
			method: methodOf(found.method),
			path: found.path,
			parameters: input.parameters,
			body: input.body,
			accept: acceptOf(operation),
			security: operation.security === undefined ? null : meetableRequirements(operation.security, schemes),
		},
		notes: [...input.notes, ...output.notes],
	};
}

/** Summary and description, each once. */
function descriptionOf(operation: DocumentOperation): { description?: string } {
	const parts = [operation.summary, operation.description].filter((part): part is string => (part ?? "").trim() !== "");
	const unique = [...new Set(parts.map((part) => part.trim()))];
	return unique.length === 0 ? {} : { description: unique.join("\n\n") };
}

/** What the method says of a call (RFC 9110 §9.2): safe GET and HEAD, destructive DELETE, idempotent PUT. */
function annotationsOf(method: OperationKey, summary: string | undefined): NonNullable<CompiledTool["annotations"]> {
	return {
		...(summary === undefined ? {} : { title: summary }),
		...(method === "get" || method === "head" ? { readOnlyHint: true } : {}),
		...(method === "delete" ? { destructiveHint: true } : {}),
		...(method === "put" ? { idempotentHint: true } : {}),
	};
}

function methodOf(key: OperationKey): CompiledOperation["method"] {
	const methods = {
		get: "GET",
		put: "PUT",
		post: "POST",
		delete: "DELETE",
		options: "OPTIONS",
		head: "HEAD",
		patch: "PATCH",
		trace: "TRACE",
	} as const;
	return methods[key];
}
