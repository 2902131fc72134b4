import { z } from "zod";

/** Who may use a session: the key and user path that opened it, on the endpoint it was opened on. */
export interface SessionScope {
	keyId: string;
	userPath: string;
	/** The request path the session lives on, e.g. `/mcp/alpha`. */
	endpoint: string;
}

const UpstreamServerSchema = z.object({
	name: z.string(),
	url: z.string(),
	headers: z.record(z.string(), z.string()),
	timeoutSeconds: z.number().nullable(),
	generation: z.string(),
});

/**
 * What a SessionDO stores: the binding of the session, keyed (by the DO's own
 * identity) by the digest of the session ID. The raw ID is never part of it.
 */
export const SessionBindingSchema = z.object({
	keyId: z.string(),
	userPath: z.string(),
	endpoint: z.string(),
	protocolVersion: z.string(),
	clientCapabilities: z.record(z.string(), z.unknown()),
	server: UpstreamServerSchema,
	upstream: z.object({ sessionId: z.string().nullable(), protocolVersion: z.string() }),
	createdAt: z.number(),
	/** Last activity as last written; in memory the DO knows a later one. */
	lastActivity: z.number(),
});
export type SessionBinding = z.infer<typeof SessionBindingSchema>;

/** A request may use the session only with the exact scope it was opened with (invariant 3). */
export function scopeMatches(binding: SessionBinding, scope: SessionScope): boolean {
	return binding.keyId === scope.keyId && binding.userPath === scope.userPath && binding.endpoint === scope.endpoint;
}
