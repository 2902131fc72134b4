import { generateTypesFromJsonSchema, type JsonSchemaToolDescriptor } from "@cloudflare/codemode";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import type { JSONSchema7 } from "json-schema";

/** Tools up to this many have their typed API in `execute_code`'s description; more are found with search_tools. */
export const MAX_TOOLS_DESCRIBED = 20;

/** The typed API of `tools` as a program sees it (`declare const codemode: { ... }`), from their JSON Schemas. */
export function typedApi(tools: readonly Tool[]): string {
	return generateTypesFromJsonSchema(Object.fromEntries(tools.map((tool) => [tool.name, descriptorOf(tool)])));
}

/** One tool's signature, for a search match. */
export function signatureOf(tool: Tool): string {
	return typedApi([tool]);
}

function descriptorOf(tool: Tool): JsonSchemaToolDescriptor {
	// An MCP tool's schemas are JSON Schema objects (the SDK's parse checked `type: "object"`); the generator reads them as such.
	const inputSchema: JSONSchema7 = tool.inputSchema;
	const outputSchema: JSONSchema7 | undefined = tool.outputSchema;
	return {
		...(tool.description !== undefined ? { description: tool.description } : {}),
		inputSchema,
		...(outputSchema !== undefined ? { outputSchema } : {}),
	};
}
