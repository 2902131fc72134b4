import { z } from "zod";
import { UPSTREAM_PROTOCOLS } from "../mcp/upstream-protocol.ts";
import { DISCLOSURE_INPUT_FIELDS, DISCLOSURE_RECORD_FIELDS } from "./disclosure-schema.ts";
import { PromptShapingSchema, ResourceShapingInputSchema, ResourceShapingSchema } from "./offer-shaping-schema.ts";
import { DEFAULT_RATE_CLASS, RateClassSchema } from "./rate-classes.ts";
import { DEFAULT_PINNING, PinningModeSchema } from "./tool-pins.ts";
import { EndpointToolsSchema, ToolShapingSchema } from "./tool-shaping-schema.ts";
// Words zod's unknown-field refusals of every body schema with the field most likely meant.
import "./unknown-fields.ts";

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
 * override them would break the upstream session or the transport; a document
 * server passes none of them on to its API.
 */
export const GATEWAY_SET_HEADERS: ReadonlySet<string> = new Set([
	"accept",
	"content-type",
	"content-length",
	"host",
	"mcp-session-id",
	"mcp-protocol-version",
	"mcp-method",
	"mcp-name",
	"last-event-id",
]);

const HeaderNameSchema = z
	.string()
	.regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, "must be a valid HTTP header name")
	.refine((name) => !GATEWAY_SET_HEADERS.has(name.toLowerCase()), "is set by the gateway and cannot be configured");

/**
 * Header values may reference Worker secrets as `${UPSTREAM_NAME}`. Only names
 * with this prefix resolve, so whoever can register a server cannot have the
 * gateway's own secrets (SESSION_SECRET, ADMIN_TOKEN) sent to a host of theirs.
 */
const UPSTREAM_SECRET_PREFIX = "UPSTREAM_";
const ANY_REFERENCE = /\$\{([^}]*)\}/g;

/** A header value: visible Latin-1 and tabs only, so no CR/LF can split it into another header. */
const HeaderValueSchema = z
	.string()
	.max(8192)
	.regex(/^[\t\x20-\x7e\x80-\xff]*$/, "must be one line of printable characters (no CR, LF or control characters)")
	.superRefine((value, context) => {
		for (const [, name] of value.matchAll(ANY_REFERENCE)) {
			if (!name?.startsWith(UPSTREAM_SECRET_PREFIX) || !/^[A-Z0-9_]+$/.test(name)) {
				context.addIssue({
					code: "custom",
					message: `references \${${name}}; only secrets named ${UPSTREAM_SECRET_PREFIX}... (capital letters, digits, _) can be used in server headers`,
				});
			}
		}
	});

const UpstreamUrlSchema = z.url({ protocol: /^https?$/, error: "must be an http(s) URL" }).refine((url) => {
	const parsed = URL.parse(url);
	return parsed === null || (parsed.username === "" && parsed.password === "");
}, "must not carry credentials (user:password@); put them in headers referencing an UPSTREAM_ secret");

/** The protocol a server speaks: "auto" (discovered), or a version that pins its era. */
export const UpstreamProtocolSchema = z.enum(UPSTREAM_PROTOCOLS, {
	error: `must be one of ${UPSTREAM_PROTOCOLS.map((protocol) => `"${protocol}"`).join(", ")}`,
});

/** A secret named by reference only: `${UPSTREAM_NAME}`, resolved from the Worker's secrets at use. */
const SecretReferenceSchema = z
	.string()
	.regex(
		/^\$\{UPSTREAM_[A-Z0-9_]+\}$/,
		"must be a reference to a Worker secret, ${UPSTREAM_NAME}, never the secret itself",
	);

/**
 * An operator's webhook (a guard's scanner, an approval's notice): its URL, and a reference to
 * the Worker secret that signs each POST (Standard Webhooks; src/primitives/webhook-signature.ts).
 * Extended by each use with what it adds (a guard's timeout and failure mode).
 */
export const WebhookSchema = z.strictObject({
	url: UpstreamUrlSchema.describe("Where the gateway POSTs (JSON); redirects are not followed."),
	secret: SecretReferenceSchema.describe(
		"The Worker secret that signs each POST, ${UPSTREAM_NAME}: the receiver checks the webhook-signature header with it.",
	),
});

const ScopesSchema = z.array(z.string().regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/, "must be an OAuth scope")).max(50);

/**
 * How a server authenticates its callers. "operator": every request carries
 * the server's configured headers, whoever calls (the default). "oauth":
 * each person connects their own account at the upstream's authorization
 * server, and their requests carry their token. "identity": each request
 * carries a short-lived JWT the gateway signs, naming the caller. "token-
 * exchange": the person's access token (from OAUTH_ISSUER) is exchanged
 * (RFC 8693) for one the upstream accepts. The configured headers are sent in
 * every mode; the mode's own credential replaces an `Authorization` among them.
 */
export const ServerAuthSchema = z.discriminatedUnion(
	"type",
	[
		z.strictObject({ type: z.literal("operator") }),
		z.strictObject({
			type: z.literal("oauth"),
			/** The operator's client at the upstream's authorization server; absent: CIMD or registration. */
			clientId: z.string().min(1).max(512).optional(),
			clientSecret: SecretReferenceSchema.optional(),
			/** Scopes to ask for; absent: those the upstream's resource metadata names. */
			scopes: ScopesSchema.optional(),
		}),
		z.strictObject({
			type: z.literal("identity"),
			/** The header that carries the assertion as it is; absent: `Authorization: Bearer <assertion>`. */
			header: HeaderNameSchema.optional(),
		}),
		z.strictObject({
			type: z.literal("token-exchange"),
			tokenEndpoint: z.url({ protocol: /^https?$/, error: "must be an http(s) URL" }),
			audience: z.string().min(1).max(2048),
			scopes: ScopesSchema.optional(),
			/** The gateway's client at the token endpoint, when it wants one. */
			clientId: z.string().min(1).max(512).optional(),
			clientSecret: SecretReferenceSchema.optional(),
		}),
	],
	{ error: 'must have a type of "operator", "oauth", "identity" or "token-exchange"' },
);
export type ServerAuth = z.output<typeof ServerAuthSchema>;

/** How many live sessions a key, or a person admitted by an access rule, may hold at once. */
export const MaxSessionsSchema = z.number().int().positive().max(100_000);

/** Where an ordered record (an access rule, a policy) stands: lower first, equal ones by name. */
export const PrioritySchema = z.number().int().min(0).max(1_000_000).default(100);

/**
 * `"connector": {}`: the server has no address; its traffic goes to the
 * connectors (`mcpgw connect`) online for it. An object, not a flag, so that
 * connector settings can come later without a new field; today it takes none.
 */
export const ConnectorFieldSchema = z.strictObject({});

/** An inline document's text is kept to export it again; larger documents are registered by URL. */
export const MAX_INLINE_DOCUMENT_BYTES = 512 * 1024;

/**
 * `"openapi": {…}` in place of `url`: a REST API described by an OpenAPI
 * document becomes a server whose tools are its operations (src/openapi/).
 * The document is read once, at PUT, from `url` or as given in `document`;
 * `credentials` fill the document's security schemes, by scheme name, with
 * values that may reference `${UPSTREAM_…}` secrets.
 */
export const OpenApiFieldSchema = z
	.strictObject({
		url: UpstreamUrlSchema.optional().describe("Where the document is fetched from, once per PUT (JSON or YAML)."),
		document: z
			.union([
				z.record(z.string(), z.unknown()),
				z.string().min(1).max(MAX_INLINE_DOCUMENT_BYTES, "is larger than an inline document may be; give its url"),
			])
			.optional()
			.describe("The document itself: an object, or JSON or YAML text."),
		baseUrl: UpstreamUrlSchema.optional().describe(
			"Where the API's paths are appended; absent: the document's first servers entry.",
		),
		credentials: z
			.record(z.string().min(1).max(128), HeaderValueSchema)
			.optional()
			.describe(
				"By security scheme name: the credential the scheme places (an API key, a token, user:password); values may reference ${UPSTREAM_NAME}.",
			),
	})
	.superRefine((input, context) => {
		if ((input.url === undefined) === (input.document === undefined)) {
			context.addIssue({
				code: "custom",
				message:
					input.url === undefined
						? "give either url (where the document is) or document (the document itself)"
						: "give either url or document, not both",
			});
		}
	});
export type OpenApiField = z.output<typeof OpenApiFieldSchema>;

/** What a server's record says of its document; the compiled API itself is kept apart (openapi-records.ts). */
export const OpenApiRecordSchema = z.strictObject({
	/** Where the document was fetched from; null: it was given inline. */
	url: z.string().nullable(),
	/** The operator's baseUrl; null: the document's. */
	baseUrl: z.string().nullable(),
	/** By scheme name; values may hold `${UPSTREAM_…}` references. */
	credentials: z.record(z.string(), z.string()),
	/** The digest of the compiled API and credentials (part of the server's address). */
	digest: z.string(),
	/** How many tools the document gave (what the server lists, before shaping). */
	tools: z.number().int(),
});
export type OpenApiRecord = z.infer<typeof OpenApiRecordSchema>;

export const ServerInputSchema = z
	.strictObject({
		url: UpstreamUrlSchema.optional().describe(
			"The upstream's streamable-HTTP endpoint, http(s), without user:password@; or give connector instead.",
		),
		connector: ConnectorFieldSchema.optional().describe(
			"{} in place of url: the server is reached through the connectors (mcpgw connect) online for it.",
		),
		openapi: OpenApiFieldSchema.optional().describe(
			"In place of url: a REST API's OpenAPI document, each operation a tool the gateway answers itself.",
		),
		headers: z
			.record(HeaderNameSchema, HeaderValueSchema)
			.default({})
			.describe("Headers sent on every upstream request; values may reference secrets as ${UPSTREAM_NAME}."),
		timeoutSeconds: z
			.number()
			.int()
			.positive()
			.max(3600)
			.optional()
			.describe("How long an upstream request may take; absent: UPSTREAM_TIMEOUT_SECONDS."),
		protocol: UpstreamProtocolSchema.default("auto").describe(
			'"auto": the gateway discovers the era; a version pins it.',
		),
		auth: ServerAuthSchema.default({ type: "operator" }).describe(
			"Whose credentials its requests carry: operator, oauth, identity or token-exchange.",
		),
		/** See tool-shaping-schema.ts. */
		tools: ToolShapingSchema.optional().describe("How its tools look to callers; absent: as the upstream has them."),
		/** See offer-shaping-schema.ts. */
		prompts: PromptShapingSchema.optional().describe("Which of its prompts callers see, by name; absent: all."),
		resources: ResourceShapingInputSchema.optional().describe(
			"Which of its resources and templates callers see, by URI and uriTemplate; absent: all.",
		),
		/** See tool-pins.ts. */
		pinning: PinningModeSchema.default(DEFAULT_PINNING).describe("What a changed or new tool definition does."),
		captureArguments: z
			.boolean()
			.default(false)
			.describe("Whether its tool_call events carry the arguments' values (personal data); absent: only their digest."),
	})
	.superRefine((input, context) => {
		const given = [input.url, input.connector, input.openapi].filter((field) => field !== undefined).length;
		if (given !== 1) {
			context.addIssue({
				code: "custom",
				message:
					given === 0
						? "give one of url (the upstream's address), \"connector\": {} (reached through connectors) or openapi (a REST API's document)"
						: 'give only one of url, "connector": {} and openapi: a server reached through connectors or made from a document has no address of its own',
			});
		}
	});
export type ServerInput = z.output<typeof ServerInputSchema>;

export const UserPathSchema = z
	.string()
	.regex(/^\/([A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*)?$/, "must be a path like /team/a")
	// `/team/..` would read as below `/team` to a prefix check while meaning its parent.
	.refine((path) => !path.split("/").some((segment) => segment === "." || segment === ".."), {
		message: "must not contain '.' or '..' segments",
	});

export const KeyInputSchema = z.strictObject({
	name: z.string().min(1).max(100).optional().describe("A name for people; need not be unique."),
	userPath: UserPathSchema.default("/").describe("Where the key sits: a user path like /team/a."),
	servers: z
		.array(ServerNameSchema)
		.max(256)
		.optional()
		.describe("Servers and virtual servers the key may use, each existing; absent: all."),
	maxSessions: MaxSessionsSchema.optional().describe(
		"Live sessions the key may hold at once; absent: MAX_SESSIONS_PER_KEY.",
	),
	/** See rate-classes.ts. */
	rateClass: RateClassSchema.default(DEFAULT_RATE_CLASS).describe("Which rate-limiting binding counts its requests."),
	/** How its `/mcp` discloses tools; see disclosure-schema.ts. */
	...DISCLOSURE_INPUT_FIELDS,
});
export type KeyInput = z.output<typeof KeyInputSchema>;

/** Drops repeated entries, keeping the first occurrence, so order stays meaningful. */
function dedupe(values: string[]): string[] {
	return [...new Set(values)];
}

export const VirtualServerInputSchema = z.strictObject({
	servers: z
		.array(ServerNameSchema)
		.min(1)
		.max(64)
		.transform(dedupe)
		.describe("Member servers, in the order their tools are listed."),
	userPaths: z
		.array(UserPathSchema)
		.min(1)
		.optional()
		.describe("User paths allowed to use it (each with everything under it); absent: all."),
	tools: EndpointToolsSchema.optional().describe(
		"Which of its members' tools it offers, by the names its callers see (member__tool globs).",
	),
	prompts: PromptShapingSchema.optional().describe(
		"Which of its members' prompts it offers, by the names its callers see (member__prompt globs).",
	),
	resources: ResourceShapingInputSchema.optional().describe(
		"Which of its members' resources and templates it offers, by URI and uriTemplate globs.",
	),
	/** See disclosure-schema.ts. */
	...DISCLOSURE_INPUT_FIELDS,
});
export type VirtualServerInput = z.output<typeof VirtualServerInputSchema>;

/**
 * The registry's records, each declared once: the type, the KV parser, the
 * SQLite rows (the table modules in tables/) and what is published all follow
 * these schemas.
 */

/** An upstream server as the registry holds it. Header values may contain `${NAME}` references. */
export const ServerRecordSchema = z.object({
	name: z.string(),
	/**
	 * Where its requests go. A server registered with `"connector": {}` has its
	 * connector address here (`connectorUrl(name)`), so every path that reaches
	 * an upstream by address reaches it unchanged; only the fetch differs.
	 */
	url: z.string(),
	/** `{}`: reached through connectors (its `url` is its connector address); null: by its URL (and in records older than the field). */
	connector: ConnectorFieldSchema.nullable().default(null),
	/** Made from an OpenAPI document (its `url` is `openApiUrl(name, digest)`); null: not (and in records older than the field). */
	openapi: OpenApiRecordSchema.nullable().default(null),
	headers: z.record(z.string(), z.string()),
	timeoutSeconds: z.number().nullable(),
	/**
	 * "auto": the gateway discovers the era; a version pins it (an operator's answer, never probed).
	 * Records published before the field existed are "auto", which is what they were.
	 */
	protocol: UpstreamProtocolSchema.default("auto"),
	/** Whose credentials its requests carry; records published before the field are "operator", which they were. */
	auth: ServerAuthSchema.default({ type: "operator" }),
	/** How its tools look to callers; null: as the upstream has them (and in records older than the field). */
	tools: ToolShapingSchema.nullable().default(null),
	/** Which of its prompts callers see; null: all (and in records older than the field). */
	prompts: PromptShapingSchema.nullable().default(null),
	/** Which of its resources and templates callers see; null: all (and in records older than the field). */
	resources: ResourceShapingSchema.nullable().default(null),
	/** What its changed or new tool definitions do; records published before the field are "warn", the default. */
	pinning: PinningModeSchema.default(DEFAULT_PINNING),
	/** Whether `tool_call` events carry argument values; records published before the field do not. */
	captureArguments: z.boolean().default(false),
	/** Random id of this incarnation: a server deleted and created again gets a new one. */
	generation: z.string(),
	/** SHA-256 of its URL, headers, timeout, protocol, auth and pinning: a replacing PUT that changes them changes it. */
	configDigest: z.string(),
	createdAt: z.number(),
	updatedAt: z.number(),
});
export type ServerRecord = z.infer<typeof ServerRecordSchema>;

/** An API key as the registry holds it: only the SHA-256 digest of the secret is kept (`StoredKey`). */
export const ApiKeyRecordSchema = z.object({
	id: z.string(),
	name: z.string().nullable(),
	userPath: z.string(),
	/** Servers and virtual servers the key may use (see access.ts); null means all. */
	servers: z.array(z.string()).nullable(),
	/** Live sessions the key may hold; null means the gateway's MAX_SESSIONS_PER_KEY. */
	maxSessions: z.number().nullable(),
	/** Which rate-limiting binding counts its requests; records published before the field are standard, as they were. */
	rateClass: RateClassSchema.default(DEFAULT_RATE_CLASS),
	/** How its `/mcp` discloses tools; records published before the fields are "full", as they were. */
	...DISCLOSURE_RECORD_FIELDS,
	/** "legacy": issued before self-verifying keys, no longer accepted; re-issue it. */
	format: z.enum(["self-verifying", "legacy"]),
	createdAt: z.number(),
});
export type ApiKeyRecord = z.infer<typeof ApiKeyRecordSchema>;

/**
 * Who has connected their own account at an `oauth` server, as the registry
 * lists it for operators (`GET /admin/connections`) and finds whom to cut off:
 * never a token (those stay in the person's vault). `id` is the server and the
 * vault, one row per person and server.
 */
export const ConnectionRecordSchema = z.object({
	id: z.string(),
	server: z.string(),
	/** The vault object holding the tokens (`person:<user id>`, `key:<key id>`). */
	vault: z.string(),
	/** A person: their issuer and subject; an API key: its id. */
	issuer: z.string().nullable(),
	subject: z.string().nullable(),
	keyId: z.string().nullable(),
	/** Their verified email, or another name for them, for the operator. */
	label: z.string(),
	/** The access rule they connected under (people), so removing it cuts them off. */
	rule: z.string().nullable(),
	connectedAt: z.number(),
});
export type ConnectionRecord = z.infer<typeof ConnectionRecordSchema>;

/** A virtual server: one endpoint in front of several servers. */
export const VirtualServerRecordSchema = z.object({
	name: z.string(),
	/** Member server names, deduplicated, in their listed order. Members may since have been deleted. */
	servers: z.array(z.string()),
	/** User paths allowed to use it (each with everything under it); null means all. */
	userPaths: z.array(z.string()).nullable(),
	/** Which of its members' tools it offers; null: all (and in records older than the field). */
	tools: EndpointToolsSchema.nullable().default(null),
	/** Which of its members' prompts it offers; null: all (and in records older than the field). */
	prompts: PromptShapingSchema.nullable().default(null),
	/** Which of its members' resources and templates it offers; null: all (and in records older than the field). */
	resources: ResourceShapingSchema.nullable().default(null),
	/** How it discloses tools; records published before the fields are "full", as they were. */
	...DISCLOSURE_RECORD_FIELDS,
	/** Random id of this incarnation: deleted and created again, it gets a new one. */
	generation: z.string(),
	createdAt: z.number(),
	updatedAt: z.number(),
});
export type VirtualServerRecord = z.infer<typeof VirtualServerRecordSchema>;

/**
 * What an `/mcp/:name` endpoint name refers to right now. For a virtual server,
 * `members` are the member servers that exist, in its listed order: a member
 * deleted since is left out rather than failing the whole endpoint.
 */
export const ResolvedEndpointSchema = z.discriminatedUnion("kind", [
	z.object({ kind: z.literal("server"), server: ServerRecordSchema }),
	z.object({
		kind: z.literal("virtual"),
		virtualServer: VirtualServerRecordSchema,
		members: z.array(ServerRecordSchema),
	}),
]);
export type ResolvedEndpoint = z.infer<typeof ResolvedEndpointSchema>;

/** What the registry must still confirm for a session to go on (see RegistryDO.checkSession). */
export const EndpointCheckSchema = z.discriminatedUnion("kind", [
	z.object({ kind: z.literal("server"), name: z.string(), generation: z.string() }),
	z.object({ kind: z.literal("virtual"), name: z.string(), generation: z.string() }),
	z.object({ kind: z.literal("aggregate") }),
]);
export type EndpointCheck = z.infer<typeof EndpointCheckSchema>;

/** What a SessionDO knows of its session, to ask the registry whether it may go on. */
export interface SessionCheckInput {
	keyId: string;
	userPath: string;
	endpoint: EndpointCheck;
	/**
	 * Members of the session as it knows them (a transparent session's one
	 * server too). A member deleted or recreated since, or no longer allowed to
	 * the key, ends the session: a session never carries on with an
	 * incarnation that was removed. A member whose configuration digest differs
	 * is reported as changed.
	 */
	members?: Array<{ name: string; generation: string; configDigest?: string | undefined }>;
}

/**
 * `reason` is a short sentence for logs and the client's error message.
 * `changed`: members whose configuration changed since the session last saw
 * it, as they are now; the session reopens its upstream session on them.
 */
export type SessionCheckResult = { ok: true; changed: ServerRecord[] } | { ok: false; reason: string };

/**
 * Words for a zod failure, for a 400 body: "url: must be an http(s) URL". An issue
 * of the whole value is named by `whole` ("body: …").
 */
export function describeIssues(error: z.ZodError, whole = "body"): string {
	return error.issues
		.map((issue) => `${issue.path.length > 0 ? issue.path.join(".") : whole}: ${issue.message}`)
		.join("; ");
}
