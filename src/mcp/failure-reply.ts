import type { CallToolResult, JSONRPCMessage, RequestId } from "@modelcontextprotocol/sdk/types.js";
import type { GatewayError } from "./gateway-error.ts";
import { TOOLS_CALL } from "./methods.ts";

/**
 * Whether a client declared URL-mode elicitation, so it can open a connect
 * link itself (MCP: `capabilities.elicitation.url`). One that did not gets
 * the link as a tool result's sentence, which its user or model can act on.
 */
export function acceptsUrlElicitation(capabilities: Record<string, unknown> | undefined): boolean {
	const elicitation = capabilities?.elicitation;
	return typeof elicitation === "object" && elicitation !== null && "url" in elicitation;
}

/** Where a failure's machine-readable kind goes in a `CallToolResult`'s `_meta`. */
export const ERROR_META_KEY = "mcp-edge-gateway/error";

/**
 * The reply to a request that an upstream failure ended. Inside `tools/call`
 * the failure is a tool result with `isError: true`, a sentence a model can
 * act on, and the kind in `_meta`, so the model sees it as the tool's outcome;
 * every other method gets a JSON-RPC error with the kind in `data`. A
 * connection the person must make is the spec's URLElicitationRequiredError
 * (-32042) for every method, a tools/call included, when the client declared
 * URL elicitation (`clientCapabilities`).
 */
export function failureReply(
	method: string,
	id: RequestId,
	error: GatewayError,
	clientCapabilities?: Record<string, unknown>,
): JSONRPCMessage {
	if (method !== TOOLS_CALL || (error.kind === "connection_required" && acceptsUrlElicitation(clientCapabilities))) {
		return { jsonrpc: "2.0", id, error: error.toJsonRpcError() };
	}
	const result: CallToolResult = {
		content: [{ type: "text", text: error.message }],
		isError: true,
		_meta: { [ERROR_META_KEY]: error.data() },
	};
	return { jsonrpc: "2.0", id, result };
}
