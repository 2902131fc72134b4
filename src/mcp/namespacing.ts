/**
 * Tools and prompts of aggregate endpoints are named `{server}__{name}`.
 * Server names cannot contain `__` (`^[a-z0-9][a-z0-9-]{0,31}$`), so the first
 * `__` always splits a name unambiguously.
 */
export const SEPARATOR = "__";

/** Many model APIs refuse tool names longer than this. */
export const MAX_TOOL_NAME_LENGTH = 64;

/** Length of the hash suffix of a shortened name. */
const HASH_LENGTH = 8;

/**
 * The name a client sees for an upstream tool or prompt. Names that would be
 * too long keep a readable prefix and end in a short hash of the full name, so
 * the result is deterministic, unique in practice, and still starts with
 * `{server}__` for routing.
 *
 * @example
 * namespacedName("alpha", "echo") // "alpha__echo"
 */
export function namespacedName(server: string, name: string, maxLength = MAX_TOOL_NAME_LENGTH): string {
	const full = `${server}${SEPARATOR}${name}`;
	if (full.length <= maxLength) return full;
	const suffix = `_${fnv1a64(full)}`;
	return full.slice(0, maxLength - suffix.length) + suffix;
}

/** The server a namespaced name routes to, and the rest of the name; null if it has no prefix. */
export function splitNamespacedName(exposed: string): { server: string; name: string } | null {
	const at = exposed.indexOf(SEPARATOR);
	if (at <= 0) return null;
	return { server: exposed.slice(0, at), name: exposed.slice(at + SEPARATOR.length) };
}

/** FNV-1a, 64 bit, base36, fixed width: a small synchronous hash for name suffixes. */
function fnv1a64(text: string): string {
	let hash = 0xcbf29ce484222325n;
	const prime = 0x100000001b3n;
	for (const byte of new TextEncoder().encode(text)) {
		hash ^= BigInt(byte);
		hash = (hash * prime) & 0xffffffffffffffffn;
	}
	return hash.toString(36).padStart(13, "0").slice(-HASH_LENGTH);
}
