import { z } from "zod";

/*
 * A server made from an OpenAPI document (`"openapi": {…}` in place of `url`):
 * what the registry keeps of it. The document is read, dereferenced and
 * compiled once, at PUT (src/openapi/), into one tool per operation and the
 * recipe of the HTTP request each call becomes; the gateway then answers those
 * tools itself, at the address `openApiUrl(name, digest)`, through the one
 * upstream fetch (served-origins.ts). The compiled form is what is stored and
 * published (KV `openapi/<server>`), so no call reads or parses the document.
 */

/** The origin of the addresses that stand for servers made from documents: `.invalid` never resolves (RFC 2606). */
export const OPENAPI_ORIGIN = "https://openapi.invalid";

/**
 * The address a document server is given wherever an upstream address is
 * expected. The digest of its compiled API is part of it, so a changed
 * document is a changed address: its configuration digest changes, sessions
 * start over, and an isolate's cache of compiled APIs is keyed by what it holds.
 */
export function openApiUrl(server: string, digest: string): string {
	return `${OPENAPI_ORIGIN}/${encodeURIComponent(server)}/${digest}/mcp`;
}

/** The server and digest an address under OPENAPI_ORIGIN names, or null. */
export function openApiServerOf(url: string): { server: string; digest: string } | null {
	if (!url.startsWith(`${OPENAPI_ORIGIN}/`)) return null;
	const [server, digest, mcp, ...rest] = url.slice(OPENAPI_ORIGIN.length + 1).split("/");
	if (server === undefined || digest === undefined || mcp !== "mcp" || rest.length > 0) return null;
	if (!/^[0-9a-f]{16,64}$/.test(digest)) return null;
	return { server: decodeURIComponent(server), digest };
}

/** Where a parameter goes in the request (OpenAPI's `in`). */
export const ParameterLocationSchema = z.enum(["path", "query", "header", "cookie"]);

/** OpenAPI's serialisation styles (3.1 §4.8.12.4). */
export const ParameterStyleSchema = z.enum([
	"simple",
	"label",
	"matrix",
	"form",
	"spaceDelimited",
	"pipeDelimited",
	"deepObject",
]);

/** One parameter of an operation, and the input property its value is read from. */
export const CompiledParameterSchema = z.strictObject({
	/** Its name in the document (and so in the request). */
	name: z.string().min(1),
	in: ParameterLocationSchema,
	/** The tool's input property that carries it: its name, unless two locations share the name. */
	property: z.string().min(1),
	required: z.boolean(),
	style: ParameterStyleSchema,
	explode: z.boolean(),
	/** Query values sent without percent-encoding RFC 3986's reserved characters. */
	allowReserved: z.boolean(),
	/** Serialised as JSON (`content: application/json`) rather than by style. */
	json: z.boolean(),
});
export type CompiledParameter = z.infer<typeof CompiledParameterSchema>;

/** An operation's request body: its input property and the media type it is sent as. */
export const CompiledBodySchema = z.strictObject({
	/** The tool's input property that carries the body. */
	property: z.string().min(1),
	/** `application/json` (or a `+json` type), or `application/x-www-form-urlencoded`. */
	mediaType: z.string().min(1),
	required: z.boolean(),
});
export type CompiledBody = z.infer<typeof CompiledBodySchema>;

/** A security requirement: scheme names, each with its scopes; all of them together. */
export const SecurityRequirementSchema = z.record(z.string(), z.array(z.string()));
export type SecurityRequirement = z.infer<typeof SecurityRequirementSchema>;

const OAuthFlowSchema = z.strictObject({
	authorizationUrl: z.string().optional(),
	tokenUrl: z.string().optional(),
	scopes: z.record(z.string(), z.string()).default({}),
});

/** Where a scheme's credential goes: what the document's `securitySchemes` say, nothing else. */
export const CompiledSchemeSchema = z.discriminatedUnion("type", [
	z.strictObject({ type: z.literal("apiKey"), in: z.enum(["header", "query", "cookie"]), name: z.string().min(1) }),
	z.strictObject({ type: z.literal("http"), scheme: z.enum(["bearer", "basic"]) }),
	z.strictObject({
		type: z.literal("oauth2"),
		flows: z.strictObject({
			authorizationCode: OAuthFlowSchema.optional(),
			clientCredentials: OAuthFlowSchema.optional(),
			implicit: OAuthFlowSchema.optional(),
			password: OAuthFlowSchema.optional(),
		}),
	}),
	z.strictObject({ type: z.literal("openIdConnect"), openIdConnectUrl: z.string() }),
]);
export type CompiledScheme = z.infer<typeof CompiledSchemeSchema>;

const JsonObjectSchema = z.record(z.string(), z.unknown());

/** The MCP tool an operation is listed as (fields as MCP's `Tool`). */
export const CompiledToolSchema = z.strictObject({
	name: z.string().min(1).max(128),
	title: z.string().optional(),
	description: z.string().optional(),
	inputSchema: JsonObjectSchema,
	outputSchema: JsonObjectSchema.optional(),
	annotations: z
		.strictObject({
			title: z.string().optional(),
			readOnlyHint: z.boolean().optional(),
			destructiveHint: z.boolean().optional(),
			idempotentHint: z.boolean().optional(),
			openWorldHint: z.boolean().optional(),
		})
		.optional(),
});
export type CompiledTool = z.infer<typeof CompiledToolSchema>;

export const HTTP_METHODS = ["GET", "PUT", "POST", "DELETE", "OPTIONS", "HEAD", "PATCH", "TRACE"] as const;

/** One operation: the tool it is listed as, and how a call of it becomes one HTTP request. */
export const CompiledOperationSchema = z.strictObject({
	tool: CompiledToolSchema,
	method: z.enum(HTTP_METHODS),
	/** The path template as the document has it, `/pets/{petId}`, appended to the base URL. */
	path: z.string().startsWith("/"),
	parameters: z.array(CompiledParameterSchema),
	body: CompiledBodySchema.nullable(),
	/** The `Accept` the request sends: JSON first where a 2xx answer offers it; null: none. */
	accept: z.string().nullable(),
	/** Its own security requirements; null: the document's (`CompiledApi.security`). `[]`: none. */
	security: z.array(SecurityRequirementSchema).nullable(),
});
export type CompiledOperation = z.infer<typeof CompiledOperationSchema>;

/** A document compiled: everything a call needs, and nothing of the document beyond it. */
export const CompiledApiSchema = z.strictObject({
	/** The document's `info.title` and `info.version`, for the server's `serverInfo`. */
	title: z.string(),
	version: z.string(),
	/** The document's `info.description`, offered as the server's instructions. */
	description: z.string().nullable(),
	/** Absolute http(s) URL, without a trailing slash, that each operation's path is appended to. */
	baseUrl: z.string(),
	operations: z.array(CompiledOperationSchema),
	securitySchemes: z.record(z.string(), CompiledSchemeSchema),
	/** The document's top-level `security`: what an operation without its own requires. */
	security: z.array(SecurityRequirementSchema),
});
export type CompiledApi = z.infer<typeof CompiledApiSchema>;
