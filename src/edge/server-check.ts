import type { Context } from "hono";
import { z } from "zod";
import { settingsFrom } from "../config.ts";
import { connectorObject } from "../connectors/connector-do.ts";
import type { Env } from "../env.ts";
import { describeError, GatewayError } from "../mcp/gateway-error.ts";
import { connectorServerOf } from "../registry/connector-tokens.ts";
import type { ServerAuth, ServerRecord } from "../registry/schemas.ts";
import { checkUpstream, type UpstreamCheck } from "../upstream/upstream-era.ts";
import { targetLimitsOf, targetOrProblem } from "../upstream/upstream-target.ts";

const CheckQuerySchema = z.enum(["true", "false"]).optional();

/** Whether `?check=` asks for a check (`true`/`false`; absent: `byDefault`); anything else is 400. */
export function wantsCheck(c: Context<{ Bindings: Env }>, byDefault: boolean): boolean {
	const parsed = CheckQuerySchema.safeParse(c.req.query("check"));
	if (!parsed.success) throw new GatewayError("bad_request", "Bad Request: check must be true or false.");
	return parsed.data === undefined ? byDefault : parsed.data === "true";
}

/** The auth modes whose requests carry each caller's own credential, which a check (no caller) has none of. */
export type CallerAuth = Exclude<ServerAuth["type"], "operator">;

/**
 * A check as the admin API answers it. `needsCaller` is there only when the
 * server refused the check (401/403) and its `auth` says every request carries
 * the caller's own credential: then the refusal is the expected answer to a
 * request made for nobody, not a fault of the operator's configuration.
 */
export interface ServerCheck extends UpstreamCheck {
	needsCaller?: CallerAuth;
}

/** What each per-caller mode puts on a request, for the check's sentence. */
const WHAT_CALLS_CARRY: Record<CallerAuth, string> = {
	oauth: "each caller connects their own account at its authorization server and their calls carry their own token",
	identity: "each call carries the gateway's signed assertion of who is calling",
	"token-exchange": "each call carries the caller's own token, exchanged for one it accepts",
};

/**
 * Whether a registered server answers, for its operator: one bounded probe
 * with its headers resolved as a client's request would have them, or, when
 * they cannot be (an unset `${UPSTREAM_...}`), why no probe was sent. Names
 * a header or variable at most, never a value.
 */
export async function checkServer(env: Env, server: ServerRecord): Promise<ServerCheck> {
	const settings = settingsFrom(env);
	const resolved = targetOrProblem(server, env, targetLimitsOf(settings));
	if ("problem" in resolved) {
		return { reachable: false, speaksMcp: false, era: null, detail: `Not asked: ${resolved.problem}.` };
	}
	try {
		const connectors = connectorServerOf(resolved.target.url) === null ? null : await onlineConnectors(env, server);
		if (connectors === 0) {
			return {
				reachable: false,
				speaksMcp: false,
				era: null,
				detail: `No connector online: '${server.name}' is reached only through connectors (mcpgw connect), and none is connected now.`,
			};
		}
		const answer = await checkUpstream(resolved.target, server.protocol);
		if (connectors !== null)
			answer.detail = `Reached through ${connectors} connector${connectors === 1 ? "" : "s"}. ${answer.detail}`;
		if (!("refused" in answer)) return answer;
		const checked = { reachable: true, speaksMcp: false, era: null };
		const mode = server.auth.type;
		if (mode === "operator") return { ...checked, detail: answer.detail };
		return {
			...checked,
			needsCaller: mode,
			detail: `It refused the check's server/discover with HTTP ${answer.refused}, as expected: its auth is ${mode}, so ${WHAT_CALLS_CARRY[mode]}, and the check is made for no caller. A caller's own call shows what it serves.`,
		};
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

/** How many connectors are online for a server reached through connectors. */
async function onlineConnectors(env: Env, server: ServerRecord): Promise<number> {
	return (await connectorObject(env, server.name).online()).length;
}
