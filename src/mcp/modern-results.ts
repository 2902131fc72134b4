import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

/** Results a 2026-07-28 client may cache, which must say for how long and for whom. */
export const CACHEABLE_METHODS: ReadonlySet<string> = new Set([
	"server/discover",
	"tools/list",
	"prompts/list",
	"resources/list",
	"resources/templates/list",
	"resources/read",
]);

/**
 * A 2025 peer's result as a 2026-07-28 result: `resultType` is required, and
 * cacheable results carry `ttlMs` and `cacheScope`. A 2025 peer says nothing
 * about caching, so the gateway claims nothing: stale at once, and private
 * (never shared across principals).
 */
export function modernResult(method: string, result: Record<string, unknown>): Record<string, unknown> {
	const modern: Record<string, unknown> = { resultType: "complete", ...result };
	if (CACHEABLE_METHODS.has(method)) {
		modern.ttlMs ??= 0;
		modern.cacheScope ??= "private";
	}
	return modern;
}

/** A 2025 peer's reply message as a 2026-07-28 one (errors are the same in both eras). */
export function modernReply(method: string, message: JSONRPCMessage): JSONRPCMessage {
	if (!("result" in message)) return message;
	return { ...message, result: modernResult(method, message.result) };
}
