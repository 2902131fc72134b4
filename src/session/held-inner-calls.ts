import { toolCallPrincipal } from "../credentials/tool-call-principal.ts";
import { tallyCall } from "../telemetry/call-counts.ts";
import { emitToolCall, type InnerCallNote, innerCallEvents, type ToolCallPrincipal } from "../telemetry/tool-call.ts";
import type { SessionState } from "./session-state.ts";

/** The endpoint's server, as the edge reads it from `/mcp/<name>` (null on `/mcp`). */
const ENDPOINT_SERVER = /^\/mcp\/([^/]+)$/;

/**
 * The `tool_call` events of a held program's inner calls (decision 0139),
 * accounted by the session that holds the task, once, when the program ends:
 * the same events, to the same sinks (log line, dataset, the dashboard's
 * counts), as the edge's for a program answered at once, naming the
 * session's principal, endpoint and server. There is no span to put them on:
 * the `execute_code` span ended when the task was answered.
 */
export function accountHeldInnerCalls(
	state: SessionState,
	within: string,
	notes: readonly InnerCallNote[],
	era: "2025" | "2026-07-28",
): void {
	const binding = state.binding;
	if (!binding) return;
	const { env, settings } = state;
	const caller = state.caller()?.caller;
	// A binding older than the stored caller names its key alone.
	const principal: ToolCallPrincipal = caller
		? toolCallPrincipal(caller)
		: { kind: "key", id: binding.keyId, subject: null, email: null, rule: null, key_name: null };
	const base = {
		principal,
		endpoint: binding.endpoint,
		era,
		protocol_version: era === "2025" ? binding.protocolVersion : era,
	};
	const server = ENDPOINT_SERVER.exec(binding.endpoint)?.[1] ?? null;
	const sinks = { log: settings.toolCallLog, dataset: env.TOOL_CALLS };
	for (const event of innerCallEvents(base, within, notes, server)) {
		emitToolCall(event, null, sinks);
		if (env.CALL_COUNTS) tallyCall(env, event, (promise) => state.waitUntil(promise));
	}
}
