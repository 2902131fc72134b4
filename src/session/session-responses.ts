import type { RequestId } from "@modelcontextprotocol/sdk/types.js";
import { GatewayError } from "../mcp/gateway-error.ts";

export const SESSION_NOT_FOUND =
	"Session not found: it expired, was deleted, or belongs to another client. Initialize a new session.";

/** 404 for a session that is not (or no longer) here, or not the caller's. */
export function notFound(): Response {
	return new GatewayError("session_not_found", SESSION_NOT_FOUND).toResponse();
}

/** A failure as the answer to a JSON-RPC request: HTTP 200 with an error for its id. */
export function renderRpcFailure(error: unknown, id: RequestId): Response {
	return asGatewayError(error).toRpcResponse(id);
}

/** A failure outside a JSON-RPC exchange: the status says what happened. */
export function renderHttpFailure(error: unknown): Response {
	return asGatewayError(error).toResponse();
}

/** Unexpected errors are logged in full and reach the client as a plain `internal` sentence. */
export function asGatewayError(error: unknown): GatewayError {
	if (error instanceof GatewayError) return error;
	console.error("session: unexpected failure", error);
	return new GatewayError("internal", "The gateway failed unexpectedly while handling this session.", { cause: error });
}
