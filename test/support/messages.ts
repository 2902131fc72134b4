import {
	clientMessageOf,
	type SessionMessage,
	type SessionRequest,
	type ToolCall,
} from "../../src/mcp/client-message.ts";
import { INITIALIZE, TOOLS_CALL } from "../../src/mcp/methods.ts";

/**
 * A client message parsed as the edge parses it (`clientMessageOf`): what a
 * session object, or a part of it, is given. Tests that hand one straight to
 * the object or a part build it here.
 */
export function parsedMessage(raw: unknown): SessionMessage {
	const message = clientMessageOf(raw);
	if (message.kind === "request" && message.method === INITIALIZE) throw new Error("initialize opens a session");
	return message;
}

/** A client request, parsed as the edge parses it. */
export function parsedRequest(raw: unknown): SessionRequest {
	const message = parsedMessage(raw);
	if (message.kind !== "request") throw new Error(`not a request: ${JSON.stringify(raw)}`);
	return message;
}

/** A client's `tools/call`, parsed as the edge parses it. */
export function parsedCall(raw: unknown): ToolCall {
	const request = parsedRequest(raw);
	if (request.method !== TOOLS_CALL) throw new Error(`not a tools/call: ${JSON.stringify(raw)}`);
	return request;
}
