import { z } from "zod";
import { isJsonObject } from "../primitives/json-object.ts";
import { ParameterLocationSchema, ParameterStyleSchema } from "../registry/openapi-records.ts";
import type { DocumentProblem } from "./document-load.ts";
import { pointerOf } from "./json-pointer.ts";

/*
 * The structure of an OpenAPI 3.1 document that the compiler reads, checked
 * with zod after the document is upgraded and dereferenced (decision 0096):
 * what is wrong is named with its JSON pointer. What the compiler does not read
 * (examples, links, callbacks, webhooks, tags) is not checked and not kept.
 * Schemas are kept as they are, by identity: the dereferenced document shares
 * them, and the compiler cuts recursion by knowing which reference made which.
 */

/** A JSON Schema as OpenAPI 3.1 allows it: an object, or `true`/`false`. */
export type JsonSchema = boolean | Record<string, unknown>;
const JsonSchemaSchema = z.custom<JsonSchema>((value) => typeof value === "boolean" || isJsonObject(value), {
	message: "a schema must be an object or a boolean",
});

const ServerSchema = z.object({
	url: z.string(),
	variables: z.record(z.string(), z.object({ default: z.string() })).optional(),
});
export type DocumentServer = z.infer<typeof ServerSchema>;

const MediaTypeSchema = z.object({ schema: JsonSchemaSchema.optional() });
export type DocumentMediaType = z.infer<typeof MediaTypeSchema>;
const ContentSchema = z.record(z.string(), MediaTypeSchema);

const ParameterSchema = z.object({
	name: z.string().min(1),
	in: ParameterLocationSchema,
	description: z.string().optional(),
	required: z.boolean().optional(),
	schema: JsonSchemaSchema.optional(),
	content: ContentSchema.optional(),
	style: ParameterStyleSchema.optional(),
	explode: z.boolean().optional(),
	allowReserved: z.boolean().optional(),
});
export type DocumentParameter = z.infer<typeof ParameterSchema>;

const SecurityRequirementsSchema = z.array(z.record(z.string(), z.array(z.string())));

const OperationSchema = z.object({
	operationId: z.string().optional(),
	summary: z.string().optional(),
	description: z.string().optional(),
	parameters: z.array(ParameterSchema).optional(),
	requestBody: z
		.object({ description: z.string().optional(), required: z.boolean().optional(), content: ContentSchema })
		.optional(),
	responses: z
		.record(z.string(), z.object({ description: z.string().optional(), content: ContentSchema.optional() }))
		.optional(),
	security: SecurityRequirementsSchema.optional(),
	servers: z.array(ServerSchema).optional(),
});
export type DocumentOperation = z.infer<typeof OperationSchema>;

/** The lower-case method keys of a path item, in the order the compiler lists their operations. */
export const OPERATION_KEYS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"] as const;
export type OperationKey = (typeof OPERATION_KEYS)[number];

const PathItemSchema = z.object({
	parameters: z.array(ParameterSchema).optional(),
	servers: z.array(ServerSchema).optional(),
	get: OperationSchema.optional(),
	put: OperationSchema.optional(),
	post: OperationSchema.optional(),
	delete: OperationSchema.optional(),
	options: OperationSchema.optional(),
	head: OperationSchema.optional(),
	patch: OperationSchema.optional(),
	trace: OperationSchema.optional(),
});
export type DocumentPathItem = z.infer<typeof PathItemSchema>;

const SecuritySchemeSchema = z.object({
	type: z.string(),
	description: z.string().optional(),
	in: z.string().optional(),
	name: z.string().optional(),
	scheme: z.string().optional(),
	openIdConnectUrl: z.string().optional(),
	flows: z
		.record(
			z.string(),
			z.object({
				authorizationUrl: z.string().optional(),
				tokenUrl: z.string().optional(),
				scopes: z.record(z.string(), z.string()).optional(),
			}),
		)
		.optional(),
});
export type DocumentSecurityScheme = z.infer<typeof SecuritySchemeSchema>;

const DocumentSchema = z.object({
	openapi: z.string(),
	info: z.object({ title: z.string(), version: z.string(), description: z.string().optional() }),
	servers: z.array(ServerSchema).optional(),
	paths: z.record(z.string(), z.unknown()).optional(),
	components: z.object({ securitySchemes: z.record(z.string(), SecuritySchemeSchema).optional() }).optional(),
	security: SecurityRequirementsSchema.optional(),
});

/** What the compiler reads of a document, checked; `paths` holds only path items (keys starting with `/`). */
export type DocumentStructure = Omit<z.infer<typeof DocumentSchema>, "paths"> & {
	paths: Record<string, DocumentPathItem>;
};

/** The checked structure of a dereferenced OpenAPI 3.1 document, or the first thing wrong with it and where. */
export function documentStructure(document: Record<string, unknown>): DocumentStructure | DocumentProblem {
	const top = DocumentSchema.safeParse(document);
	if (!top.success) return shapeProblem(top.error, []);
	const paths: Record<string, DocumentPathItem> = {};
	for (const [path, item] of Object.entries(top.data.paths ?? {})) {
		// `x-` keys are extensions, and nothing else but a path may stand in `paths` (3.1 §4.8.8).
		if (!path.startsWith("/")) continue;
		const parsed = PathItemSchema.safeParse(item);
		if (!parsed.success) return shapeProblem(parsed.error, ["paths", path]);
		paths[path] = parsed.data;
	}
	return { ...top.data, paths };
}

function shapeProblem(error: z.ZodError, prefix: readonly string[]): DocumentProblem {
	const issue = error.issues[0];
	const path = [...prefix, ...(issue?.path ?? []).map((key) => (typeof key === "symbol" ? String(key) : key))];
	return {
		problem: `The document is not a valid OpenAPI document where the gateway reads it: ${issue?.message ?? "invalid"}.`,
		where: pointerOf(path),
	};
}
