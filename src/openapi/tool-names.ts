import type { OperationKey } from "./document-shape.ts";

/*
 * An operation's tool name: its `operationId` made a valid MCP tool name
 * (`[A-Za-z0-9_.-]`, at most 128 characters), else `<method>_<path>`; unique
 * within the server. Names are given over every operation of the document,
 * before tools.include/exclude choose, so choosing never renames a tool.
 */

/** MCP's longest tool name (2025-11-25, "Tool names"). */
export const MAX_TOOL_NAME = 128;

/** The tool names of operations, in their order: each unique among them. */
export function toolNames(
	operations: readonly { method: OperationKey; path: string; operationId?: string }[],
): string[] {
	const taken = new Set<string>();
	return operations.map((operation) => {
		const name = unique(baseName(operation), taken);
		taken.add(name);
		return name;
	});
}

function baseName(operation: { method: OperationKey; path: string; operationId?: string }): string {
	const fromId = (operation.operationId ?? "").trim().replace(/[^A-Za-z0-9_.-]/g, "_");
	if (/[A-Za-z0-9]/.test(fromId)) return fromId.slice(0, MAX_TOOL_NAME);
	const path = operation.path.replace(/[^A-Za-z0-9.-]+/g, "_").replace(/^_+|_+$/g, "");
	return (path === "" ? operation.method : `${operation.method}_${path}`).slice(0, MAX_TOOL_NAME);
}

/** `name`, or `name_2`, `name_3`… (shortened to fit) when it is taken. */
function unique(name: string, taken: ReadonlySet<string>): string {
	if (!taken.has(name)) return name;
	for (let n = 2; ; n++) {
		const suffix = `_${n}`;
		const candidate = `${name.slice(0, MAX_TOOL_NAME - suffix.length)}${suffix}`;
		if (!taken.has(candidate)) return candidate;
	}
}
