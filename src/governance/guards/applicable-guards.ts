import type { GuardRecord } from "../../registry/guard-records.ts";
import { globMatches } from "../globs.ts";
import { appliesTo, type PolicyPrincipal } from "../policies.ts";

/**
 * Which guards apply to a request: a guard's `applies` matched as a policy's
 * is (servers, virtual servers, keys, rules), and its `tools` globs against
 * the tool as the caller's endpoint names it. A guard that names tools
 * applies to tool calls only; one that names none applies to resource reads
 * as well.
 */

/** The request a guard is matched against. */
export interface GuardedRequest {
	principal: PolicyPrincipal;
	server: string;
	virtualServer: string | null;
	/** The tool called, as the endpoint names it (without an aggregate's prefix); null for a resource read. */
	tool: string | null;
}

/** The guards that apply to a request, by stage, each in name order. */
export interface ApplicableGuards {
	readonly request: readonly GuardRecord[];
	readonly response: readonly GuardRecord[];
}

export const NO_GUARDS: ApplicableGuards = Object.freeze({ request: [], response: [] });

export function applicableGuards(guards: readonly GuardRecord[], request: GuardedRequest): ApplicableGuards {
	if (guards.length === 0) return NO_GUARDS;
	const applying = guards.filter((guard) => applies(guard, request));
	if (applying.length === 0) return NO_GUARDS;
	return {
		request: applying.filter((guard) => guard.stage === "request"),
		response: applying.filter((guard) => guard.stage === "response"),
	};
}

/** Whether any published guard could apply to `server` at all (the stateless edge's first, cheap question). */
export function guardsReach(guards: readonly GuardRecord[], server: string): boolean {
	return guards.some((guard) => guard.applies?.servers?.includes(server) !== false);
}

function applies(guard: GuardRecord, request: GuardedRequest): boolean {
	const { applies } = guard;
	if (applies === null) return true;
	if (!appliesTo(applies, request)) return false;
	if (!applies.tools) return true;
	const tool = request.tool;
	return tool !== null && applies.tools.some((glob) => globMatches(glob, tool));
}
