import type { Settings } from "../config.ts";
import { toolCallPrincipal } from "../credentials/tool-call-principal.ts";
import type { Env } from "../env.ts";
import { tallyCall } from "../telemetry/call-counts.ts";
import type { ToolCallScope } from "../telemetry/server-operation.ts";
import type { McpContext } from "./request-context.ts";

/**
 * Who a request's tool calls are accounted to, and where: the principal as
 * the edge authenticated it (a key, or a person by their verified claims and
 * the rule they came in by), never the credential itself.
 */
export function toolCallScope(c: McpContext): ToolCallScope {
	const { env } = c;
	const { caller } = c.get("principal");
	const waitUntil = c.get("waitUntil");
	return {
		principal: toolCallPrincipal(caller),
		endpoint: c.get("scope").endpoint,
		server: c.req.param("name") ?? null,
		dataset: env.TOOL_CALLS,
		log: c.get("settings").toolCallLog,
		tally: env.CALL_COUNTS ? (event) => tallyCall(env, event, waitUntil) : undefined,
	};
}

/** Whether a tool call's `tool_call` event has anywhere to go: a log line, a dataset, the dashboard's counter. */
export function toolCallsAccounted(env: Env, settings: Settings): boolean {
	return settings.toolCallLog || env.TOOL_CALLS !== undefined || env.CALL_COUNTS !== undefined;
}
