import { z } from "zod";
import type { CredentialCaller } from "../credentials/credentials-for.ts";
import { ModernClientSchema } from "../mcp/2026-07-28/modern-outgoing.ts";
import { IdentitySchema } from "../registry/access-rules.ts";
import { DisclosureSchema } from "../registry/disclosure-schema.ts";
import { PromptShapingSchema, ResourceShapingSchema } from "../registry/offer-shaping-schema.ts";
import {
	EndpointCheckSchema,
	ServerAuthSchema,
	type ServerRecord,
	ServerRecordSchema,
	UpstreamProtocolSchema,
} from "../registry/schemas.ts";
import { PinningModeSchema } from "../registry/tool-pins.ts";
import { EndpointToolsSchema, ToolShapingSchema } from "../registry/tool-shaping-schema.ts";

export type { EndpointCheck } from "../registry/schemas.ts";

/** Who may use a session: the key and user path that opened it, on the endpoint it was opened on. */
export interface SessionScope {
	keyId: string;
	userPath: string;
	/** The request path the session lives on, e.g. `/mcp/alpha`. */
	endpoint: string;
	/**
	 * Who calls, for the upstream credentials of this request: never compared
	 * (the key id decides), and its `subjectToken` never stored. Absent on
	 * requests the session makes of itself.
	 */
	calling?: Calling | undefined;
}

/** The caller of a request and what credentials for them need (the gateway's origin, an exchangeable token). */
export type Calling = CredentialCaller;

/** What a session keeps of its caller: enough to make their credentials when no request is there to say. */
export const StoredCallerSchema = z.object({
	caller: z.object({
		principalId: z.string(),
		vault: z.string(),
		identity: IdentitySchema.nullable(),
		keyId: z.string().nullable(),
		keyName: z.string().nullable().optional(),
	}),
	origin: z.string(),
});
export type StoredCaller = z.infer<typeof StoredCallerSchema>;

/**
 * A member server as the session knows it: a snapshot of the registry row taken at open.
 * Not whether it is reached through connectors or made from a document: its `url` (a served address then) says where it goes.
 */
export const MemberSchema = ServerRecordSchema.omit({
	createdAt: true,
	updatedAt: true,
	connector: true,
	openapi: true,
}).extend({
	/** The configuration the session uses; absent in bindings older than digests (refreshed at the next recheck). */
	configDigest: z.string().optional(),
	/** The operator's protocol setting; absent in bindings older than it, which means "auto". */
	protocol: UpstreamProtocolSchema.optional(),
	/** Whose credentials its requests carry; absent in bindings older than it, which means "operator". */
	auth: ServerAuthSchema.optional(),
	/** How its tools look to callers; absent in bindings older than it: as the upstream has them. */
	tools: ToolShapingSchema.nullable().optional(),
	/** Which of its prompts and resources callers see; absent in bindings older than them: all. */
	prompts: PromptShapingSchema.nullable().optional(),
	resources: ResourceShapingSchema.nullable().optional(),
	/** What its changed tool definitions do; absent in bindings older than it, which means the default, "warn". */
	pinning: PinningModeSchema.optional(),
	/** Whether tool_call events carry argument values; absent in bindings older than it: they do not. */
	captureArguments: z.boolean().optional(),
});
export type Member = z.infer<typeof MemberSchema>;

/** A session's snapshot of a server's registry row. */
export function memberOf(server: ServerRecord): Member {
	return {
		name: server.name,
		url: server.url,
		headers: server.headers,
		timeoutSeconds: server.timeoutSeconds,
		generation: server.generation,
		configDigest: server.configDigest,
		protocol: server.protocol,
		auth: server.auth,
		tools: server.tools,
		prompts: server.prompts,
		resources: server.resources,
		pinning: server.pinning,
		captureArguments: server.captureArguments,
	};
}

/** A member's upstream session as stored: its era says how it is spoken to (see `UpstreamSession`). */
export const UpstreamSessionSchema = z.preprocess(
	// Bindings stored before sessions named their era: a client in one meant a 2026-07-28 upstream.
	(stored) =>
		typeof stored === "object" && stored !== null && !("era" in stored)
			? { ...stored, era: "client" in stored && stored.client !== undefined ? "modern" : "legacy" }
			: stored,
	z.discriminatedUnion("era", [
		z.object({ era: z.literal("legacy"), sessionId: z.string().nullable(), protocolVersion: z.string() }),
		z.object({
			era: z.literal("modern"),
			sessionId: z.null(),
			protocolVersion: z.string(),
			/** Who the client is, sent in every request's envelope (there is no session). */
			client: ModernClientSchema,
		}),
	]),
);

/**
 * What a SessionDO stores: the binding of the session, keyed (by the DO's own
 * identity) by the digest of the session ID. The raw ID is never part of it.
 */
export const SessionBindingSchema = z.object({
	keyId: z.string(),
	userPath: z.string(),
	endpoint: z.string(),
	/** transparent: one upstream, nothing renamed; aggregate: namespaced union of members. */
	mode: z.enum(["transparent", "aggregate"]),
	endpointCheck: EndpointCheckSchema,
	protocolVersion: z.string(),
	clientCapabilities: z.record(z.string(), z.unknown()),
	clientInfo: z.object({ name: z.string(), version: z.string() }).loose(),
	members: z.array(MemberSchema),
	/** A virtual server's choice of its members' tools, as at open; absent: all. */
	endpointTools: EndpointToolsSchema.optional(),
	/** A virtual server's choice of its members' prompts and resources, as at open; absent: all. */
	endpointPrompts: PromptShapingSchema.optional(),
	endpointResources: ResourceShapingSchema.optional(),
	/** How an aggregate discloses its tools, as at open; absent (and in bindings older than it): in full. */
	disclosure: DisclosureSchema.optional(),
	/** Upstream sessions by member name; a member missing here is connected on next use. */
	upstreams: z.record(z.string(), UpstreamSessionSchema),
	/**
	 * What the session's initialize answered (capabilities, server info,
	 * instructions): a 2026-07-28 client asks for it with `server/discover`.
	 * Absent in bindings older than that.
	 */
	server: z
		.object({
			capabilities: z.record(z.string(), z.unknown()),
			serverInfo: z.record(z.string(), z.unknown()),
			instructions: z.string().optional(),
		})
		.optional(),
	/** Who opened it, for the members' credentials; absent in bindings older than it (operator credentials only). */
	caller: StoredCallerSchema.optional(),
	createdAt: z.number(),
	/** Last activity as last written; in memory the DO knows a later one. */
	lastActivity: z.number(),
	/** Last successful registry recheck. */
	verifiedAt: z.number(),
});
export type SessionBinding = z.infer<typeof SessionBindingSchema>;

/** The scope of the session's own principal: for requests the session makes of itself, and the ids it seals for it. */
export function scopeOf(binding: SessionBinding): SessionScope {
	return { keyId: binding.keyId, userPath: binding.userPath, endpoint: binding.endpoint };
}

/** A request may use the session only with the exact scope it was opened with (invariant "A session belongs to a key, a user path and an endpoint"). */
export function scopeMatches(binding: SessionBinding, scope: SessionScope): boolean {
	return binding.keyId === scope.keyId && binding.userPath === scope.userPath && binding.endpoint === scope.endpoint;
}
