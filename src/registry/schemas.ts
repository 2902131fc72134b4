import { z } from "zod";

/** Server (and later virtual server) names: short, lowercase, and free of `__`-ambiguity. */
export const SERVER_NAME = /^[a-z0-9][a-z0-9-]{0,31}$/;
export const ServerNameSchema = z
	.string()
	.regex(SERVER_NAME, "must be 1-32 characters of a-z, 0-9 and '-', starting with a letter or digit");

/**
 * Headers the gateway sets itself on upstream requests. Letting an operator
 * override them would break the upstream session or the transport.
 */
const RESERVED_HEADERS = new Set([
	"accept",
	"content-type",
	"content-length",
	"host",
	"mcp-session-id",
	"mcp-protocol-version",
	"last-event-id",
]);

const HeaderNameSchema = z
	.string()
	.regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, "must be a valid HTTP header name")
	.refine((name) => !RESERVED_HEADERS.has(name.toLowerCase()), "is set by the gateway and cannot be configured");

export const ServerInputSchema = z.strictObject({
	url: z.url({ protocol: /^https?$/, error: "must be an http(s) URL" }),
	headers: z.record(HeaderNameSchema, z.string().max(8192)).default({}),
	timeoutSeconds: z.number().int().positive().max(3600).optional(),
});
export type ServerInput = z.output<typeof ServerInputSchema>;

export const UserPathSchema = z
	.string()
	.regex(/^\/([A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*)?$/, "must be a path like /team/a");

export const KeyInputSchema = z.strictObject({
	name: z.string().min(1).max(100).optional(),
	userPath: UserPathSchema.default("/"),
	servers: z.array(ServerNameSchema).max(256).optional(),
});
export type KeyInput = z.output<typeof KeyInputSchema>;

/** An upstream server as the registry holds it. Header values may contain `${NAME}` references. */
export interface ServerRecord {
	name: string;
	url: string;
	headers: Record<string, string>;
	timeoutSeconds: number | null;
	/** Random id of this incarnation: a server deleted and created again gets a new one. */
	generation: string;
	createdAt: number;
	updatedAt: number;
}

/** An API key as the registry holds it: only the SHA-256 digest of the secret is kept. */
export interface ApiKeyRecord {
	id: string;
	name: string | null;
	userPath: string;
	/** Servers the key may use; null means all. */
	servers: string[] | null;
	createdAt: number;
}

/** Words for a zod failure, for a 400 body: "url: must be an http(s) URL". */
export function describeIssues(error: z.ZodError): string {
	return error.issues
		.map((issue) => `${issue.path.length > 0 ? issue.path.join(".") : "body"}: ${issue.message}`)
		.join("; ");
}
