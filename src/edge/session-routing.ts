import type { Settings } from "../config.ts";
import type { Env } from "../env.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import type { SessionDO } from "../session/session-do.ts";

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
