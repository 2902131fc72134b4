import { parsePrincipalId } from "../registry/access-rules.ts";
import type { ToolCallPrincipal } from "../telemetry/tool-call.ts";
import type { Caller } from "./caller.ts";

/**
 * Who a `tool_call` event names: the principal as the edge authenticated it
 * (a key, or a person by their verified claims and the rule they came in by),
 * never the credential itself. The edge's events and a session's (a held
 * program's inner calls) name it alike.
 */
export function toolCallPrincipal(caller: Caller): ToolCallPrincipal {
	const identity = caller.identity;
	return {
		kind: identity ? "person" : "key",
		id: caller.principalId,
		subject: identity?.subject ?? null,
		// `email` is set only when the issuer verified it (identityFromClaims).
		email: identity?.email ?? null,
		rule: parsePrincipalId(caller.principalId)?.rule ?? null,
		key_name: caller.keyName ?? null,
	};
}
