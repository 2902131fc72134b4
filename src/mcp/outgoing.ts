import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { TOOLS_CALL } from "./methods.ts";

/**
 * Makes a client message safe to send upstream, changing nothing else:
 * `tools/call` always carries `arguments` as an object (`{}` for none or
 * null), and no message carries an empty or null `params._meta`, which some
 * hosted servers reject with 400. A non-empty `_meta` (e.g. a progressToken)
 * is kept as it is.
 */
export function normalizeOutgoing<T extends JSONRPCMessage>(message: T): T {
	if (!("method" in message)) return message;
	const call = message.method === TOOLS_CALL;
	if (message.params === undefined || message.params === null) {
		return call ? { ...message, params: { arguments: {} } } : message;
	}
	const noArguments = call && (message.params.arguments === undefined || message.params.arguments === null);
	const emptyMeta = "_meta" in message.params && isEmptyMeta(message.params._meta);
	if (!noArguments && !emptyMeta) return message;
	const params: Record<string, unknown> = { ...message.params };
	if (noArguments) params.arguments = {};
	if (emptyMeta) delete params._meta;
	return { ...message, params };
}

function isEmptyMeta(meta: unknown): boolean {
	if (meta === null || meta === undefined) return true;
	return typeof meta === "object" && !Array.isArray(meta) && Object.keys(meta).length === 0;
}
