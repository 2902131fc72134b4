import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { ToolCall } from "./client-message.ts";
import { GatewayError } from "./gateway-error.ts";
import { callArguments } from "./message-accessors.ts";
import { MAX_QUERY_CHARS, MAX_WORD_CHARS, queryOverLimit } from "./tool-search.ts";

/**
 * The gateway's own tools on an aggregate in search mode (docs/tool-search.md):
 * `search_tools` finds the endpoint's tools by words, `call_tool` calls one by
 * the name the search gave. Their definitions, their arguments' schemas and
 * their answers' shapes; the session decides what they search and call.
 */

export const SEARCH_TOOLS = "search_tools";
export const CALL_TOOL = "call_tool";

/** How many tools a search answers: by default, and at most. */
export const DEFAULT_SEARCH_LIMIT = 10;
export const MAX_SEARCH_LIMIT = 50;

/** What one found tool is told as: all a client needs to call it, nothing it would not list. */
const FOUND_TOOL_JSON_SCHEMA = {
	type: "object",
	properties: {
		name: { type: "string" },
		title: { type: "string" },
		description: { type: "string" },
		inputSchema: { type: "object" },
		annotations: { type: "object" },
		signature: { type: "string", description: "In code mode: how a program calls it, as TypeScript." },
	},
	required: ["name", "inputSchema"],
} as const;

export const SEARCH_TOOLS_TOOL: Tool = {
	name: SEARCH_TOOLS,
	title: "Search tools",
	description:
		"Finds the tools of this endpoint that match a query, best first: say in a few words what you want to do. Each tool found comes with its name, description and input schema; call it with call_tool.",
	inputSchema: {
		type: "object",
		properties: {
			query: {
				type: "string",
				minLength: 1,
				maxLength: MAX_QUERY_CHARS,
				description: `What the tool should do, in words (e.g. 'create an issue'): at most ${MAX_QUERY_CHARS} characters, each word at most ${MAX_WORD_CHARS} letters or digits.`,
			},
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
	name: CALL_TOOL,
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

/**
 * A query within the limits the tool's schema states, checked before anything reads its words:
 * the length first, so a text of a million characters costs one pass over it and nothing more.
 */
const QuerySchema = z.string({ error: "query must be a string of words" }).superRefine((query, context) => {
	const over = queryOverLimit(query);
	if (over !== null) context.addIssue({ code: "custom", message: over });
	else if (query.trim() === "")
		context.addIssue({ code: "custom", message: "query must name what the tool should do; it is empty" });
});

const SearchArgumentsSchema = z.object({
	query: QuerySchema,
	limit: z
		.number({ error: "limit must be a number" })
		.int("limit must be a whole number")
		.min(1, `limit must be between 1 and ${MAX_SEARCH_LIMIT}`)
		.max(MAX_SEARCH_LIMIT, `limit must be between 1 and ${MAX_SEARCH_LIMIT}`)
		.default(DEFAULT_SEARCH_LIMIT),
});
export type SearchArguments = z.infer<typeof SearchArgumentsSchema>;

const CallArgumentsSchema = z.object({
	name: z
		.string({ error: "name must be the tool's name, a string" })
		.min(1, "name must be the tool's name; it is empty"),
	arguments: z.record(z.string(), z.unknown(), { error: "arguments must be an object" }).optional(),
});
export type CallArguments = z.infer<typeof CallArgumentsSchema>;

/** `search_tools`' arguments from its call; bad ones are invalid params, said plainly. */
export function searchArgumentsOf(call: ToolCall): SearchArguments {
	return parsed(SEARCH_TOOLS, SearchArgumentsSchema, callArguments(call));
}

/** `call_tool`'s arguments from its call; bad ones are invalid params, said plainly. */
export function callArgumentsOf(call: ToolCall): CallArguments {
	return parsed(CALL_TOOL, CallArgumentsSchema, callArguments(call));
}

/** A gateway tool's arguments parsed by `schema`; refused ones are invalid params naming the tool, said plainly. */
export function parsed<T>(tool: string, schema: z.ZodType<T>, value: unknown): T {
	const result = schema.safeParse(value);
	if (result.success) return result.data;
	const said = result.error.issues.map((issue) => issue.message).join("; ");
	throw new GatewayError("invalid_params", `Invalid params: ${tool}: ${said}.`);
}

/**
 * The call `call_tool` stands for: a `tools/call` of the named tool with its
 * arguments, under the same id, with the same `_meta` (progress token, trace
 * context) and task augmentation, so it goes wherever a direct call would.
 */
export function innerCall(call: ToolCall, named: CallArguments): ToolCall {
	const { _meta, task } = call.message.params;
	return {
		...call,
		message: {
			...call.message,
			params: {
				name: named.name,
				...(named.arguments !== undefined ? { arguments: named.arguments } : {}),
				...(_meta !== undefined ? { _meta } : {}),
				...(task !== undefined ? { task } : {}),
			},
		},
	};
}

/**
 * `search_tools`' answer: the tools found, best first, as structured content
 * and the same JSON as text; in code mode each with its TypeScript `signature`.
 */
export function searchResult(found: readonly Tool[], signatureOf?: (tool: Tool) => string): CallToolResult {
	const tools = found.map((tool) => ({
		name: tool.name,
		...(tool.title !== undefined ? { title: tool.title } : {}),
		...(tool.description !== undefined ? { description: tool.description } : {}),
		inputSchema: tool.inputSchema,
		...(tool.annotations !== undefined ? { annotations: tool.annotations } : {}),
		...(signatureOf !== undefined ? { signature: signatureOf(tool) } : {}),
	}));
	const structuredContent = { tools };
	return { content: [{ type: "text", text: JSON.stringify(structuredContent) }], structuredContent };
}
