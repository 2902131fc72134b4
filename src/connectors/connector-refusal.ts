import { GatewayError } from "../mcp/gateway-error.ts";

/*
 * What the ConnectorDO answers when it cannot carry a request itself (no
 * connector online, the connector went away before answering, too many in
 * flight): a status and a sentence, marked by a header the connector fetch
 * turns into the gateway's own error. A connector's answers never carry the
 * mark: the object builds them from the connector's frames, never copying it.
 */

/** Set on the object's own refusals (its value says why, a `RefusalReason`); its body is the sentence. */
export const REFUSAL_HEADER = "mcpgw-connector-refusal";

/** The headers the edge sets on a connector's upgrade (after removing any the connector sent). */
export const TOKEN_ID_HEADER = "mcpgw-connector-token-id";
export const SERVER_HEADER = "mcpgw-connector-server";

/** What a call whose connector closed before it answered is told (it is never sent again). */
export const WENT_AWAY = "connector went away; the call may have run";

/** Why the object answered itself. */
export type RefusalReason = "no_connector_online" | "went_away" | "failed" | "busy" | "too_large" | "not_carried";

/** The object's own refusal: `status` and `sentence`, marked with why. */
export function refusal(status: number, sentence: string, reason: RefusalReason): Response {
	return new Response(sentence, {
		status,
		headers: { [REFUSAL_HEADER]: reason, "content-type": "text/plain; charset=utf-8" },
	});
}

/** Whether an upstream failure is "no connector online" (an aggregate leaves that member out and says so). */
export function isNoConnectorOnline(error: unknown): boolean {
	return error instanceof GatewayError && error.details?.reason === "no_connector_online";
}

/** The sentence when no connector of `server` is online. */
export function noConnector(server: string): string {
	return `No connector is online for server '${server}': the gateway reaches it only through connectors (mcpgw connect), and none is connected now.`;
}
