import type { Settings } from "../config.ts";
import type { Env } from "../env.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import type { SessionDO } from "../session/session-do.ts";
import { sessionDigest, verifySessionId } from "./session-id.ts";

/** The SessionDO of a session ID: `idFromName(sha256(id))`, from any edge (invariant "One session, one place"). */
export async function sessionStub(env: Env, sessionId: string): Promise<DurableObjectStub<SessionDO>> {
	return env.SESSIONS.get(env.SESSIONS.idFromName(await sessionDigest(sessionId)));
}

/**
 * The SessionDO at `place`, a Durable Object id as `ctx.id.toString()` wrote it (a task id's
 * prefix, a key's ledger of live sessions), or null when the namespace does not know the id: 64
 * hex digits that no object of this namespace was given (a forged task id) are refused by
 * `idFromString` with a TypeError, which would otherwise be an HTTP 500.
 */
export function sessionObjectAt(env: Pick<Env, "SESSIONS">, place: string): DurableObjectStub<SessionDO> | null {
	let id: DurableObjectId;
	try {
		id = env.SESSIONS.idFromString(place);
	} catch (error) {
		if (error instanceof TypeError) return null;
		throw error;
	}
	return env.SESSIONS.get(id);
}

/** The gateway's session secret, or a clear configuration error. */
export function requireSessionSecret(settings: Pick<Settings, "sessionSecret">): string {
	if (!settings.sessionSecret) {
		throw new GatewayError(
			"misconfigured",
			"The gateway is misconfigured: the SESSION_SECRET secret is not set (at least 32 characters).",
		);
	}
	return settings.sessionSecret;
}

/**
 * The SessionDO for a request's `Mcp-Session-Id`, after its MAC verifies: a
 * forged or malformed ID gets 404 here without waking any Durable Object.
 */
export async function verifiedSessionStub(
	env: Env,
	settings: Settings,
	sessionId: string | null,
): Promise<DurableObjectStub<SessionDO>> {
	if (sessionId === null) {
		throw new GatewayError(
			"session_required",
			"Bad Request: Mcp-Session-Id header is required; send initialize first to open a session.",
		);
	}
	if (!(await verifySessionId(requireSessionSecret(settings), sessionId))) {
		throw new GatewayError(
			"session_not_found",
			"Session not found: it expired, was deleted, or belongs to another client. Initialize a new session.",
		);
	}
	return sessionStub(env, sessionId);
}
