/**
 * What an aggregate in search mode lists instead of its tools, and what one `search_tools` answers:
 * the definitions of the gateway's own two tools and the answer's shape, as the disclosure mode
 * lists and answers them (src/mcp/disclosure-tools.ts on the branch that adds the mode). Kept here
 * as a copy until that module is on this branch; then import SEARCH_TOOLS_TOOL, CALL_TOOL_TOOL and
 * searchResult from it instead, so the bench measures exactly what the gateway sends.
 */

import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";

const DEFAULT_SEARCH_LIMIT = 10;
const MAX_SEARCH_LIMIT = 50;

const FOUND_TOOL_JSON_SCHEMA = {
	type: "object",
	properties: {
		name: { type: "string" },
		title: { type: "string" },
		description: { type: "string" },
		inputSchema: { type: "object" },
		annotations: { type: "object" },
	},
	required: ["name", "inputSchema"],
} as const;

export const SEARCH_TOOLS_TOOL: Tool = {
	name: "search_tools",
	title: "Search tools",
	description:
		"Finds the tools of this endpoint that match a query, best first: say in a few words what you want to do. Each tool found comes with its name, description and input schema; call it with call_tool.",
	inputSchema: {
		type: "object",
		properties: {
			query: { type: "string", description: "What the tool should do, in words (e.g. 'create an issue')." },
			limit: {
				type: "integer",
				minimum: 1,
				maximum: MAX_SEARCH_LIMIT,
				default: DEFAULT_SEARCH_LIMIT,
				description: `How many tools to answer at most (1-${MAX_SEARCH_LIMIT}, default ${DEFAULT_SEARCH_LIMIT}).`,
			},
		},
		required: ["query"],
	},
	outputSchema: {
		type: "object",
		properties: { tools: { type: "array", items: FOUND_TOOL_JSON_SCHEMA } },
		required: ["tools"],
	},
	annotations: { title: "Search tools", readOnlyHint: true, openWorldHint: false },
};

export const CALL_TOOL_TOOL: Tool = {
	name: "call_tool",
	title: "Call a tool",
	description:
		"Calls a tool of this endpoint by the name search_tools gave, with its arguments; answers exactly what the tool answers.",
	inputSchema: {
		type: "object",
		properties: {
			name: { type: "string", description: "The tool's name, as search_tools gave it." },
			arguments: { type: "object", description: "The tool's arguments, as its input schema describes them." },
		},
		required: ["name"],
	},
	annotations: { title: "Call a tool" },
};

/** `search_tools`' answer: the tools found, best first, as structured content and the same JSON as text. */
export function searchResult(found: readonly Tool[]): CallToolResult {
	const tools = found.map((tool) => ({
		name: tool.name,
		...(tool.title !== undefined ? { title: tool.title } : {}),
		...(tool.description !== undefined ? { description: tool.description } : {}),
		inputSchema: tool.inputSchema,
		...(tool.annotations !== undefined ? { annotations: tool.annotations } : {}),
	}));
	const structuredContent = { tools };
	return { content: [{ type: "text", text: JSON.stringify(structuredContent) }], structuredContent };
}
