import type { Context } from "hono";
import { z } from "zod";
import { settingsFrom } from "../config.ts";
import type { Env } from "../env.ts";
import { describeError, GatewayError } from "../mcp/gateway-error.ts";
import type { ServerRecord } from "../registry/schemas.ts";
import { checkUpstream, type UpstreamCheck } from "../upstream/upstream-era.ts";
import { targetLimitsOf, targetOrProblem } from "../upstream/upstream-target.ts";

const CheckQuerySchema = z.enum(["true", "false"]).optional();

/** Whether `?check=` asks for a check (`true`/`false`; absent: `byDefault`); anything else is 400. */
export function wantsCheck(c: Context<{ Bindings: Env }>, byDefault: boolean): boolean {
	const parsed = CheckQuerySchema.safeParse(c.req.query("check"));
	if (!parsed.success) throw new GatewayError("bad_request", "Bad Request: check must be true or false.");
	return parsed.data === undefined ? byDefault : parsed.data === "true";
}

/**
 * Whether a registered server answers, for its operator: one bounded probe
 * with its headers resolved as a client's request would have them, or, when
 * they cannot be (an unset `${UPSTREAM_...}`), why no probe was sent. Names
 * a header or variable at most, never a value.
 */
export async function checkServer(env: Env, server: ServerRecord): Promise<UpstreamCheck> {
	const settings = settingsFrom(env);
	const resolved = targetOrProblem(server, env, targetLimitsOf(settings));
	if ("problem" in resolved) {
		return { reachable: false, speaksMcp: false, era: null, detail: `Not asked: ${resolved.problem}.` };
	}
	try {
		return await checkUpstream(resolved.target, server.protocol);
	} catch (error) {
		// The registration has committed by now: a failing check must not turn it into a 500.
		console.error(`upstream ${server.name}: the admin check failed unexpectedly: ${describeError(error)}`);
		return {
			reachable: false,
			speaksMcp: false,
			era: null,
			detail: "The check failed unexpectedly; the gateway's log says why.",
		};
	}
}
