/**
 * Methods that only read, so repeating them after a failure that may have
 * reached the upstream changes nothing. Everything else (including methods the
 * gateway does not know, passed through a transparent endpoint) is sent at most
 * once; `tools/call` is repeated only for tools listed as read-only (the
 * session knows which).
 */
export const REPEATABLE_METHODS: ReadonlySet<string> = new Set([
	"tools/list",
	"prompts/list",
	"prompts/get",
	"resources/list",
	"resources/templates/list",
	"resources/read",
	"ping",
]);

/**
 * Whether a request refused before it was performed (an upstream's 401) may be
 * sent once more with fresh credentials: reads, the handshake, and what has no
 * body (a GET stream, a DELETE). A write is never sent twice: its refusal is
 * the answer, and the fresh credential serves the next request.
 */
export function resendableAfterRefusal(method: string | undefined): boolean {
	return (
		method === undefined || method === "initialize" || method === "server/discover" || REPEATABLE_METHODS.has(method)
	);
}
