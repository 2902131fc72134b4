import { isJsonObject } from "../../primitives/json-object.ts";
import { headerValue } from "./header-value.ts";

/** One `x-mcp-header` declaration of a tool: where the value is in the arguments, and the header's name. */
export interface ParamHeader {
	path: string[];
	header: string;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * The `x-mcp-header` declarations of a tool's input schema (2026-07-28):
 * only properties reachable from the root through `properties` alone count;
 * a declaration that is not a valid header token is skipped, as clients must
 * not send it.
 */
export function paramHeadersOf(inputSchema: unknown): ParamHeader[] {
	const found: ParamHeader[] = [];
	const walk = (schema: unknown, path: string[]) => {
		if (!isJsonObject(schema) || !isJsonObject(schema.properties)) return;
		for (const [name, property] of Object.entries(schema.properties)) {
			if (!isJsonObject(property)) continue;
			const header = property["x-mcp-header"];
			if (typeof header === "string" && TOKEN.test(header)) found.push({ path: [...path, name], header });
			walk(property, [...path, name]);
		}
	};
	walk(inputSchema, []);
	return found;
}

/**
 * The `Mcp-Param-*` headers a call's arguments give: strings as they are,
 * integers in decimal, booleans as true/false, each encoded for a header;
 * an absent or null value gives no header.
 */
export function paramHeaderValues(declarations: ParamHeader[], args: unknown): Array<[string, string]> {
	const headers: Array<[string, string]> = [];
	for (const { path, header } of declarations) {
		let value: unknown = args;
		for (const key of path) value = isJsonObject(value) ? value[key] : undefined;
		if (typeof value === "string") headers.push([`mcp-param-${header}`, headerValue(value)]);
		else if (typeof value === "number" && Number.isSafeInteger(value))
			headers.push([`mcp-param-${header}`, String(value)]);
		else if (typeof value === "boolean") headers.push([`mcp-param-${header}`, String(value)]);
	}
	return headers;
}
