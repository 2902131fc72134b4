/** Whether a JSON value is an object (not an array, not null): what JSON-RPC params and MCP results are. */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
	return typeof value === "object" && value !== null && !Array.isArray(value);
}
