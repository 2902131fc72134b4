import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

/**
 * Makes a client message safe to send upstream, changing nothing else:
 * `tools/call` always carries `arguments` as an object (`{}` for none or
 * null), and no message carries an empty or null `params._meta`, which some
 * hosted servers reject with 400. A non-empty `_meta` (e.g. a progressToken)
 * is kept as it is.
 */
export function normalizeOutgoing(message: JSONRPCMessage): JSONRPCMessage {
	if (!("method" in message) || message.params === undefined || message.params === null) {
		return "method" in message && message.method === "tools/call" ? { ...message, params: { arguments: {} } } : message;
	}
	const params: Record<string, unknown> = { ...message.params };
	let changed = false;
	if (message.method === "tools/call" && (params.arguments === undefined || params.arguments === null)) {
		params.arguments = {};
		changed = true;
	}
	if ("_meta" in params && isEmptyMeta(params._meta)) {
		delete params._meta;
		changed = true;
	}
	return changed ? ({ ...message, params } as JSONRPCMessage) : message;
}

function isEmptyMeta(meta: unknown): boolean {
	if (meta === null || meta === undefined) return true;
	return typeof meta === "object" && !Array.isArray(meta) && Object.keys(meta).length === 0;
}
