import { z } from "zod";
import { randomToken } from "../../primitives/crypto.ts";
import { openJson, signJson } from "../../primitives/signed-json.ts";
import type { SessionScope } from "../binding.ts";

/**
 * Every task id the gateway hands a client, minted, sealed and told apart
 * here. Two kinds, told apart by their first characters:
 *
 * - **held**, `<place>.<random>`: a task a session's Durable Object holds.
 *   `place` is that object's id (64 hex digits, `ctx.id.toString()`), so any
 *   edge routes the task's requests to it without a lookup; `random` is 16
 *   random bytes or more in base64url. The id carries no MAC: the object that
 *   minted it authorizes every request by the session's scope, so a
 *   well-formed id of another session is simply unknown there, and a forged
 *   one wakes at most the object its place names.
 * - **upstream**, `up.<body>.<mac>`: a task an upstream holds itself (a
 *   2026-07-28 server advertising the tasks extension, a 2025-11-25 tool it
 *   lists with task support). `<body>.<mac>` is `signJson` under the label
 *   `upstream-task` of `{ k, u, e, s, t, p? }`: the key, user path and
 *   endpoint that made it, the server, the upstream's own id and (in a 2025
 *   session) the session's object. No state is kept: the id carries it. From
 *   any other key, user path, endpoint or object the id is unknown, as every
 *   id the gateway mints is (invariant "A session belongs to a principal and an
 *   endpoint"), and a forged one is refused by the MAC before anything is
 *   asked (invariant "Forged IDs cost nothing").
 *
 * Ids already handed out keep this format byte for byte (test/primitives.test.ts pins it).
 */
export type ParsedTaskId =
	/** Held by the session object at `place`. */
	| { kind: "held"; place: string }
	/** Sealed for an upstream's own task: `openUpstreamTaskId` says whether it opens for a scope. */
	| { kind: "upstream" }
	/** Not an id the gateway hands out: unknown wherever it is asked about. */
	| { kind: "unknown" };

/** A Durable Object id as `ctx.id.toString()` gives it: 64 hex digits. */
const PLACE = /^[0-9a-f]{64}$/;
const HELD = /^([0-9a-f]{64})\.[A-Za-z0-9_-]{22,}$/;
/** Upstream tasks' ids start with this; held ones never do (they start with their 64-hex place). */
const UPSTREAM_PREFIX = "up.";
/** The MAC's label: a token signed for another purpose never opens as a task id. */
const UPSTREAM_LABEL = "upstream-task";

const SealedSchema = z.object({
	k: z.string(),
	u: z.string(),
	e: z.string(),
	s: z.string(),
	t: z.string(),
	/** The session object that made it (2025 sessions); absent on 2026-07-28, which has no sessions. */
	p: z.string().optional(),
});

export interface UpstreamTask {
	server: string;
	upstreamTaskId: string;
	/** The session object it is bound to, if any. */
	place?: string;
}

/** Which kind of task id `taskId` is, by its shape alone (an upstream one is not yet opened). */
export function parseTaskId(taskId: string): ParsedTaskId {
	const held = HELD.exec(taskId)?.[1];
	if (held !== undefined) return { kind: "held", place: held };
	return taskId.startsWith(UPSTREAM_PREFIX) ? { kind: "upstream" } : { kind: "unknown" };
}

/**
 * A new id for a task held in the Durable Object at `place` (its `ctx.id.toString()`).
 *
 * @example
 * const taskId = mintTaskId(ctx.id.toString()); // "3f…9a.Vx3…"
 */
export function mintTaskId(place: string): string {
	if (!PLACE.test(place)) throw new Error(`not a Durable Object id: ${place}`);
	return `${place}.${randomToken(16)}`;
}

/**
 * The client's ids of the tasks `server`'s upstream holds for this scope (and
 * the session object at `place`, in a 2025 session): each upstream task id
 * sealed as it passes.
 *
 * @example
 * const seal = upstreamTaskSealer(secret, scope, { server: "alpha" });
 * await seal("task-1"); // "up.eyJr…"
 */
export function upstreamTaskSealer(
	secret: string,
	scope: SessionScope,
	task: Omit<UpstreamTask, "upstreamTaskId">,
): (upstreamTaskId: string) => Promise<string> {
	return async (upstreamTaskId) => {
		const sealed = {
			k: scope.keyId,
			u: scope.userPath,
			e: scope.endpoint,
			s: task.server,
			t: upstreamTaskId,
			p: task.place,
		};
		return `${UPSTREAM_PREFIX}${await signJson(secret, UPSTREAM_LABEL, sealed)}`;
	};
}

/**
 * The upstream task a client's id names, when it is one the gateway sealed for
 * this same scope (and object: `place`, or none); null for anything else
 * (malformed, forged, another's, a held id), which the caller answers as an
 * unknown task.
 */
export async function openUpstreamTaskId(
	secret: string,
	scope: SessionScope,
	taskId: string,
	place?: string,
): Promise<UpstreamTask | null> {
	if (parseTaskId(taskId).kind !== "upstream") return null;
	const sealed = await openJson(secret, UPSTREAM_LABEL, taskId.slice(UPSTREAM_PREFIX.length), SealedSchema);
	if (!sealed || sealed.k !== scope.keyId || sealed.u !== scope.userPath || sealed.e !== scope.endpoint) return null;
	if (sealed.p !== place) return null;
	return { server: sealed.s, upstreamTaskId: sealed.t };
}
