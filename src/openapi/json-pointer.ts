/** JSON Pointers (RFC 6901): how a problem says where in a document it is. */

/** The pointer of a path of keys and indexes: `["paths", "/pets", "get"]` → `/paths/~1pets/get`. */
export function pointerOf(path: readonly (string | number)[]): string {
	return path.map((key) => `/${String(key).replaceAll("~", "~0").replaceAll("/", "~1")}`).join("");
}

/**
 * The value a pointer names in `root`, or undefined. The pointer is the
 * fragment of a `$ref` after its `#`, so it may be percent-encoded (RFC 6901 §6).
 */
export function valueAt(root: unknown, pointer: string): unknown {
	if (pointer === "") return root;
	if (!pointer.startsWith("/")) return undefined;
	let decoded: string;
	try {
		decoded = decodeURIComponent(pointer);
	} catch (error) {
		if (error instanceof URIError) return undefined;
		throw error;
	}
	let value: unknown = root;
	for (const segment of decoded.slice(1).split("/")) {
		const key = segment.replaceAll("~1", "/").replaceAll("~0", "~");
		if (typeof value !== "object" || value === null || !Object.hasOwn(value, key)) return undefined;
		value = Reflect.get(value, key);
	}
	return value;
}
