import { z } from "zod";

/**
 * Server and virtual server names: short, lowercase, and free of `__`-ambiguity.
 * Both kinds share one namespace, since both are addressed as `/mcp/:name`.
 */
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

/** Drops repeated entries, keeping the first occurrence, so order stays meaningful. */
function dedupe(values: string[]): string[] {
	return [...new Set(values)];
}

export const VirtualServerInputSchema = z.strictObject({
	/** Member servers, in the order their tools are listed. */
	servers: z.array(ServerNameSchema).min(1).max(64).transform(dedupe),
	/** User paths allowed to use the virtual server (each with everything under it); absent means all. */
	userPaths: z.array(UserPathSchema).min(1).optional(),
});
export type VirtualServerInput = z.output<typeof VirtualServerInputSchema>;

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

/** A virtual server: one endpoint in front of several servers. */
export interface VirtualServerRecord {
	name: string;
	/** Member server names, deduplicated, in their listed order. Members may since have been deleted. */
	servers: string[];
	/** User paths allowed to use it (each with everything under it); null means all. */
	userPaths: string[] | null;
	/** Random id of this incarnation: deleted and created again, it gets a new one. */
	generation: string;
	createdAt: number;
	updatedAt: number;
}

/**
 * What an `/mcp/:name` endpoint name refers to right now. For a virtual server,
 * `members` are the member servers that exist, in its listed order: a member
 * deleted since is left out rather than failing the whole endpoint.
 */
export type ResolvedEndpoint =
	| { kind: "server"; server: ServerRecord }
	| { kind: "virtual"; virtualServer: VirtualServerRecord; members: ServerRecord[] };

/** What a SessionDO knows of its session, to ask the registry whether it may go on. */
export interface SessionCheckInput {
	keyId: string;
	userPath: string;
	endpoint:
		| { kind: "server"; name: string; generation: string }
		| { kind: "virtual"; name: string; generation: string }
		| { kind: "aggregate" };
	/**
	 * Members of an aggregate session as it knows them. A member deleted or
	 * recreated since, or no longer allowed to the key, ends the session: a
	 * session never carries on with an incarnation that was removed.
	 */
	members?: Array<{ name: string; generation: string }>;
}

/** `reason` is a short sentence for logs and the client's error message. */
export type SessionCheckResult = { ok: true } | { ok: false; reason: string };

/** Words for a zod failure, for a 400 body: "url: must be an http(s) URL". */
export function describeIssues(error: z.ZodError): string {
	return error.issues
		.map((issue) => `${issue.path.length > 0 ? issue.path.join(".") : "body"}: ${issue.message}`)
		.join("; ");
}
