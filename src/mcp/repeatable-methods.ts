import {
	INITIALIZE,
	PING,
	PROMPTS_GET,
	PROMPTS_LIST,
	RESOURCES_LIST,
	RESOURCES_READ,
	RESOURCES_TEMPLATES_LIST,
	SERVER_DISCOVER,
	TOOLS_LIST,
} from "./methods.ts";
/**
 * Methods that only read, so repeating them after a failure that may have
 * reached the upstream changes nothing. Everything else (including methods the
 * gateway does not know, passed through a transparent endpoint) is sent at most
 * once; `tools/call` is repeated only for tools listed as read-only (the
 * session knows which).
 */
export const REPEATABLE_METHODS: ReadonlySet<string> = new Set([
	TOOLS_LIST,
	PROMPTS_LIST,
	PROMPTS_GET,
	RESOURCES_LIST,
	RESOURCES_TEMPLATES_LIST,
	RESOURCES_READ,
	PING,
]);

/**
 * Whether a request refused before it was performed (an upstream's 401) may be
 * sent once more with fresh credentials: reads, the handshake, and what has no
 * body (a GET stream, a DELETE). A write is never sent twice: its refusal is
 * the answer, and the fresh credential serves the next request.
 */
export function resendableAfterRefusal(method: string | undefined): boolean {
	return method === undefined || method === INITIALIZE || method === SERVER_DISCOVER || REPEATABLE_METHODS.has(method);
}
