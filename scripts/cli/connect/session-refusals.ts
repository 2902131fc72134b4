/**
 * The connector's own answers to the gateway, in streamable HTTP's words: a
 * JSON-RPC error body with a sentence, and the status the gateway maps as it
 * maps an upstream's (503: try later or elsewhere; 404: the session is gone).
 */
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import type { IncomingCall } from "./request-runs.ts";

/** The JSON-RPC id of a body, when it is one request with an id. */
function requestId(body: string | undefined): string | number | null {
	const parsed = parseBody(body);
	if (parsed && typeof parsed === "object" && "id" in parsed) {
		const { id } = parsed as { id: unknown };
		if (typeof id === "string" || typeof id === "number") return id;
	}
	return null;
}

function parseBody(body: string | undefined): unknown {
	if (body === undefined) return undefined;
	try {
		return JSON.parse(body);
	} catch (error) {
		// Not JSON: the upstream's own transport answers it with its parse error.
		void error;
		return undefined;
	}
}

/** A POST `initialize` without a session: the start of a new upstream session. */
export function startsSession(call: IncomingCall): boolean {
	return call.method === "POST" && !call.headers.has("mcp-session-id") && isInitializeRequest(parseBody(call.body));
}

/** A JSON-RPC error reply with HTTP status `status`, answering the call's request id. */
export function refusal(call: IncomingCall, status: number, code: number, message: string): Response {
	return Response.json({ jsonrpc: "2.0", id: requestId(call.body), error: { code, message } }, { status });
}

/** New sessions refused while the connector drains. */
export function drainingRefusal(call: IncomingCall): Response {
	return refusal(call, 503, -32000, "this connector is stopping and takes no new sessions; try again");
}
