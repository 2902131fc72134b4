import type { CallToolResult, JSONRPCMessage, RequestId } from "@modelcontextprotocol/sdk/types.js";
import type { GatewayError } from "./gateway-error.ts";

/** Where a failure's machine-readable kind goes in a `CallToolResult`'s `_meta`. */
export const ERROR_META_KEY = "mcp-edge-gateway/error";

/**
 * The reply to a request that an upstream failure ended. Inside `tools/call`
 * the failure is a tool result with `isError: true`, a sentence a model can
 * act on, and the kind in `_meta`, so the model sees it as the tool's outcome;
 * every other method gets a JSON-RPC error with the kind in `data`.
 */
export function failureReply(method: string, id: RequestId, error: GatewayError): JSONRPCMessage {
	if (method !== "tools/call") return { jsonrpc: "2.0", id, error: error.toJsonRpcError() };
	const result: CallToolResult = {
		content: [{ type: "text", text: error.message }],
		isError: true,
		_meta: { [ERROR_META_KEY]: error.data() },
	};
	return { jsonrpc: "2.0", id, result };
}
