import { z } from "zod";
import { openJson, signJson } from "../../primitives/signed-json.ts";
import type { SessionScope } from "../binding.ts";

/**
 * Tasks an upstream holds itself (a 2026-07-28 server advertising the tasks
 * extension, a 2025-11-25 tool it lists with task support) reach the client
 * under an id of the gateway's: the upstream's id, the server, and the key,
 * user path and endpoint that created it (and, in a 2025 session, the
 * session's object), MAC'd. The client's `tasks/*` naming it go to that server with the
 * upstream's id; from any other key, user path or endpoint the id is
 * unknown, as every id the gateway mints is (invariant "A session belongs to a principal and an endpoint"),
 * and a forged one is refused by the MAC before anything is asked (invariant "Forged IDs cost nothing").
 * No state is kept: the id carries it.
 */
const LABEL = "upstream-task";

/** Ids of tasks an upstream holds start with this; the session's own never do (they start with its 64-hex place). */
const PREFIX = "up.";

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

/** The client's id of the task `upstreamTaskId` that `server` holds for this scope. */
export async function sealUpstreamTaskId(secret: string, scope: SessionScope, task: UpstreamTask): Promise<string> {
	const sealed = {
		k: scope.keyId,
		u: scope.userPath,
		e: scope.endpoint,
		s: task.server,
		t: task.upstreamTaskId,
		p: task.place,
	};
	return `${PREFIX}${await signJson(secret, LABEL, sealed)}`;
}

/**
 * The upstream task a client's id names, when it is one the gateway sealed for
 * this same scope; null for anything else (malformed, forged, another's), which
 * the caller answers as an unknown task.
 */
export async function openUpstreamTaskId(
	secret: string,
	scope: SessionScope,
	taskId: string,
	place?: string,
): Promise<UpstreamTask | null> {
	if (!isUpstreamTaskId(taskId)) return null;
	const sealed = await openJson(secret, LABEL, taskId.slice(PREFIX.length), SealedSchema);
	if (!sealed || sealed.k !== scope.keyId || sealed.u !== scope.userPath || sealed.e !== scope.endpoint) return null;
	if (sealed.p !== place) return null;
	return { server: sealed.s, upstreamTaskId: sealed.t };
}

/** Whether an id has the shape of one the gateway sealed for an upstream's task (not whether it opens). */
export function isUpstreamTaskId(taskId: string): boolean {
	return taskId.startsWith(PREFIX);
}
