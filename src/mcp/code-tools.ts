import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { ToolCall } from "./client-message.ts";
import { parsed } from "./disclosure-tools.ts";
import { callArguments } from "./message-accessors.ts";

/**
 * The gateway's own `execute_code` on an aggregate in code mode
 * (docs/code-mode.md): its definition, its arguments and its answer. The
 * session runs the program; each of its inner calls is a call.
 */

export const EXECUTE_CODE = "execute_code";

/** A program's time bound: by default, and at most (a caller may ask for less or more within it). */
export const DEFAULT_PROGRAM_TIMEOUT_MS = 10_000;
export const MAX_PROGRAM_TIMEOUT_MS = 30_000;
/** A program's source, at most: a short program is the point. */
export const MAX_PROGRAM_CHARS = 65_536;

const CONVENTION = [
	"Runs a JavaScript program against this endpoint's tools, in a sandbox without network, and answers what it returns and what it logged.",
	'Write the body of an async function (no TypeScript syntax); call a tool with `await codemode.<tool name>(arguments)`, the tool named as search_tools names it (a `-` or `.` in a name becomes `_`, or write `codemode["a-name"]`).',
	"A call returns the tool's structured content, or else its text (parsed when it is JSON); a refused or failed call throws an Error with the reason.",
	"Use console.log to report progress; return the result. Example: const a = await codemode.tracker__get_issue({ id: 'WEB-1' }); return a.title;",
].join(" ");

/** `execute_code`'s definition; `api`, when given, the typed API of every tool, for a catalog small enough to list. */
export function executeCodeTool(api: string | null): Tool {
	const description =
		api === null
			? `${CONVENTION} Find the tools with search_tools: each match comes with its TypeScript signature.`
			: `${CONVENTION}\n\nThe tools:\n\n${api}`;
	return {
		name: EXECUTE_CODE,
		title: "Execute code",
		description,
		inputSchema: {
			type: "object",
			properties: {
				code: {
					type: "string",
					minLength: 1,
					maxLength: MAX_PROGRAM_CHARS,
					description: "The body of an async JavaScript function; what it returns is the answer.",
				},
				timeoutMs: {
					type: "integer",
					minimum: 1,
					maximum: MAX_PROGRAM_TIMEOUT_MS,
					default: DEFAULT_PROGRAM_TIMEOUT_MS,
					description: `How long the program may run, in milliseconds (at most ${MAX_PROGRAM_TIMEOUT_MS}).`,
				},
			},
			required: ["code"],
		},
		annotations: { title: "Execute code", openWorldHint: false },
	};
}

const ExecuteArgumentsSchema = z.object({
	code: z
		.string({ error: "code must be the program, a string of JavaScript" })
		.min(1, "code must be the program; it is empty")
		.max(MAX_PROGRAM_CHARS, `a program is at most ${MAX_PROGRAM_CHARS} characters`),
	timeoutMs: z
		.number({ error: "timeoutMs must be a number of milliseconds" })
		.int("timeoutMs must be a whole number of milliseconds")
		.min(1, `timeoutMs must be between 1 and ${MAX_PROGRAM_TIMEOUT_MS}`)
		.max(MAX_PROGRAM_TIMEOUT_MS, `timeoutMs must be between 1 and ${MAX_PROGRAM_TIMEOUT_MS}`)
		.default(DEFAULT_PROGRAM_TIMEOUT_MS),
});
export type ExecuteArguments = z.infer<typeof ExecuteArgumentsSchema>;

/** `execute_code`'s arguments from its call; bad ones are invalid params, said plainly, and nothing runs. */
export function executeArgumentsOf(call: ToolCall): ExecuteArguments {
	return parsed(EXECUTE_CODE, ExecuteArgumentsSchema, callArguments(call));
}

/** What a program returned, as JSON text and structured content, with its console lines beside it. */
export function programResult(value: unknown, logs: readonly string[]): CallToolResult {
	const text = value === undefined ? "undefined" : JSON.stringify(value);
	return {
		content: [{ type: "text", text }, ...logsContent(logs)],
		structuredContent: { result: value ?? null, logs: [...logs] },
	};
}

/** A program that failed or was stopped: a tool error with the sentence, and what it logged until then. */
export function programFailure(error: string, logs: readonly string[]): CallToolResult {
	return { content: [{ type: "text", text: error }, ...logsContent(logs)], isError: true };
}

function logsContent(logs: readonly string[]): CallToolResult["content"] {
	return logs.length === 0 ? [] : [{ type: "text", text: `console:\n${logs.join("\n")}` }];
}

/**
 * What `await codemode.<tool>()` gives a program for a tool's result: its
 * structured content, else the text of its text contents (parsed when it is
 * JSON), else its contents as they are. A tool error is thrown with its text.
 */
export function innerValue(result: CallToolResult): unknown {
	const texts = result.content.flatMap((part) => (part.type === "text" ? [part.text] : []));
	if (result.isError === true) throw new Error(texts.join("\n") || "The tool answered an error with no text.");
	if (result.structuredContent !== undefined) return result.structuredContent;
	if (texts.length === result.content.length && texts.length > 0) {
		const text = texts.join("\n");
		return jsonOrText(text);
	}
	return result.content;
}

function jsonOrText(text: string): unknown {
	try {
		return JSON.parse(text);
	} catch (error) {
		// Not JSON: the text is the value.
		if (error instanceof SyntaxError) return text;
		throw error;
	}
}
