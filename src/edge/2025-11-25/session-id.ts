import type { Settings } from "../../config.ts";
import type { Env } from "../../env.ts";
import { GatewayError } from "../../mcp/gateway-error.ts";
import { randomToken, sha256Hex } from "../../primitives/crypto.ts";
import { openToken, signToken } from "../../primitives/signed-token.ts";
import type { SessionDO } from "../../session/session-do.ts";
import { requireSessionSecret } from "../session-routing.ts";

/**
 * Session IDs are `gw1.<192 random bits>.<HMAC-SHA256 of the rest>`, all
 * base64url. The MAC lets the edge reject a forged or mangled ID before any
 * Durable Object is woken (invariant "Forged IDs cost nothing"); the random part makes IDs unguessable.
 * Only 2025 clients carry one (2026-07-28 has no sessions), so it lives in this era's folder,
 * with the SessionDO an ID names.
 */
const PREFIX = "gw1";
const RANDOM_BYTES = 24;
const SESSION_ID_SHAPE = /^gw1\.[A-Za-z0-9_-]{32}\.[A-Za-z0-9_-]{43}$/;

/** Mints a new session ID under the gateway's session secret. */
export async function mintSessionId(secret: string): Promise<string> {
	return signToken(secret, `${PREFIX}.${randomToken(RANDOM_BYTES)}`);
}

/** True when the ID has the right shape and carries exactly the MAC this gateway would mint for it. */
export async function verifySessionId(secret: string, id: string): Promise<boolean> {
	return SESSION_ID_SHAPE.test(id) && (await openToken(secret, id)) !== null;
}

/** The name of the session's Durable Object: the raw ID itself is never stored anywhere. */
export function sessionDigest(id: string): Promise<string> {
	return sha256Hex(id);
}

/** The SessionDO of a session ID: `idFromName(sha256(id))`, from any edge (invariant "One session, one place"). */
export async function sessionStub(env: Env, sessionId: string): Promise<DurableObjectStub<SessionDO>> {
	return env.SESSIONS.get(env.SESSIONS.idFromName(await sessionDigest(sessionId)));
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
