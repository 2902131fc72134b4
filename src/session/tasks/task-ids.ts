import { randomToken } from "../../primitives/crypto.ts";

/** A Durable Object id as `ctx.id.toString()` gives it: 64 hex digits. */
const PLACE = /^[0-9a-f]{64}$/;
/** `<place>.<random>`: the random part is 16 bytes (22 base64url characters) or more. */
const TASK_ID = /^([0-9a-f]{64})\.[A-Za-z0-9_-]{22,}$/;

/**
 * A new task id for a task held in the Durable Object at `place` (its
 * `ctx.id.toString()`). The place lets any edge route a task's later
 * requests to the object that holds it without a lookup; the random part
 * (128 bits) makes ids unguessable. An id names a task only in the object
 * that minted it, which authorizes every request by the session's scope:
 * a well-formed id of another session is simply unknown there.
 *
 * @example
 * const taskId = mintTaskId(ctx.id.toString()); // "3f…9a.Vx3…"
 */
export function mintTaskId(place: string): string {
	if (!PLACE.test(place)) throw new Error(`not a Durable Object id: ${place}`);
	return `${place}.${randomToken(16)}`;
}

/** The place (64 hex) a task id was minted in, or null when it is not a gateway task id. */
export function placeOfTaskId(taskId: string): string | null {
	return TASK_ID.exec(taskId)?.[1] ?? null;
}
