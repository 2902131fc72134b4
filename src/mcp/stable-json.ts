/**
 * JSON with object keys sorted, so equal values give one text (and one digest) whatever their key order.
 * Written into one list of parts and joined once: building each level's text from its children's would
 * copy a deep value's text once per level (an upstream's schema of 10 MiB, 128 levels deep, a gigabyte).
 * Recursive: what it is given nests at most MAX_JSON_DEPTH levels (json-depth.ts), as parsed at entry.
 */
export function stableJson(value: unknown): string {
	const parts: string[] = [];
	writeStable(value, parts);
	return parts.join("");
}

function writeStable(value: unknown, parts: string[]): void {
	if (Array.isArray(value)) {
		parts.push("[");
		for (let index = 0; index < value.length; index++) {
			if (index > 0) parts.push(",");
			// A hole (never in parsed JSON) stays empty, as it always did.
			if (index in value) writeStable(value[index], parts);
		}
		parts.push("]");
		return;
	}
	if (typeof value === "object" && value !== null) {
		const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
		parts.push("{");
		entries.forEach(([key, entry], index) => {
			parts.push(index > 0 ? "," : "", JSON.stringify(key), ":");
			writeStable(entry, parts);
		});
		parts.push("}");
		return;
	}
	parts.push(JSON.stringify(value) ?? "null");
}
