import { type Tool, ToolSchema } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { buildToolIndex, MAX_QUERY_WORDS, searchTools } from "../src/mcp/tool-search.ts";
import { stem, tokenize } from "../src/mcp/tool-search-terms.ts";

/** A tool as an upstream lists it, parsed by the SDK's schema as the gateway's catalog parses it. */
function tool(name: string, description: string, properties: Record<string, object> = {}, title?: string): Tool {
	return ToolSchema.parse({ name, title, description, inputSchema: { type: "object", properties } });
}

/** An aggregate's catalog: namespaced names, real descriptions and parameters. */
const catalog: Tool[] = [
	tool(
		"tracker__create_issue",
		"Creates an issue in a project with a title and an optional body.",
		{
			project: { type: "string", description: "The project key, such as WEB." },
			title: { type: "string", description: "A one-line summary." },
			body: { type: "string", description: "Markdown text of the issue." },
		},
		"Create issue",
	),
	tool("tracker__listComments", "Lists the comments on an issue, oldest first.", {
		issueId: { type: "string", description: "The issue's key, such as WEB-12." },
	}),
	tool("tracker__assign_issue", "Assigns an issue to a person.", {
		issueId: { type: "string" },
		assignee: { type: "string", description: "The username of the person who will own it." },
	}),
	tool("files__stat-file", "Returns a file's size in bytes, its media type and when it was last modified.", {
		path: { type: "string", description: "The file's path, from the root of the drive." },
	}),
	tool("files__share_link", "Makes a link that opens a file without signing in.", {
		path: { type: "string" },
		expiresInDays: { type: "number", description: "How many days until the link stops working." },
	}),
	tool("alpha__echo", "Echoes its input.", { text: { type: "string", description: "The text to send back." } }),
];

function names(found: Tool[]): string[] {
	return found.map((match) => match.name);
}

describe("tool search ranks an aggregate's tools", () => {
	const index = buildToolIndex(catalog);

	it("counts the tools it indexed", () => {
		expect(index.size).toBe(catalog.length);
	});

	it("finds a tool by words of its description", () => {
		expect(names(searchTools(index, "how big is this file, in bytes", 3))[0]).toBe("files__stat-file");
	});

	it("finds a tool by words of a parameter's description only", () => {
		expect(names(searchTools(index, "link that stops working after some days", 1))).toEqual(["files__share_link"]);
		expect(names(searchTools(index, "username", 5))).toEqual(["tracker__assign_issue"]);
	});

	it("finds a tool by a part of its namespaced name, split at __, _, - and camelCase", () => {
		expect(names(searchTools(index, "echo", 5))).toEqual(["alpha__echo"]);
		expect(names(searchTools(index, "stat", 5))[0]).toBe("files__stat-file");
		expect(names(searchTools(index, "comments", 5))[0]).toBe("tracker__listComments");
		expect(names(searchTools(index, "alpha", 5))).toEqual(["alpha__echo"]);
	});

	it("ranks a name and title match above a description-only match", () => {
		expect(names(searchTools(index, "create an issue", 5))[0]).toBe("tracker__create_issue");
	});

	it("answers at most limit tools, best first", () => {
		const all = names(searchTools(index, "issue", 10));
		expect(all.length).toBeGreaterThan(2);
		expect(names(searchTools(index, "issue", 2))).toEqual(all.slice(0, 2));
		expect(searchTools(index, "issue", 0)).toEqual([]);
	});

	it("answers the tools as listed, schema and all", () => {
		expect(searchTools(index, "echo", 1)).toEqual([catalog[5]]);
	});

	it("answers nothing for a blank query, a query of stop words, or words no tool has", () => {
		expect(searchTools(index, "", 5)).toEqual([]);
		expect(searchTools(index, "   \n\t", 5)).toEqual([]);
		expect(searchTools(index, "what is the", 5)).toEqual([]);
		expect(searchTools(index, "zebra", 5)).toEqual([]);
	});

	it("orders equal scores by name, whatever the catalog's order", () => {
		const twins = [tool("b__ping", "Answers pong."), tool("a__ping", "Answers pong.")];
		expect(names(searchTools(buildToolIndex(twins), "pong", 5))).toEqual(["a__ping", "b__ping"]);
		expect(names(searchTools(buildToolIndex([...twins].reverse()), "pong", 5))).toEqual(["a__ping", "b__ping"]);
	});

	it("forgives a typo in a longer word", () => {
		expect(names(searchTools(index, "asign isue", 1))).toEqual(["tracker__assign_issue"]);
	});

	it("reads no more than the first MAX_QUERY_WORDS words of a query", () => {
		const filler = (count: number) => Array.from({ length: count }, () => "qqq").join(" ");
		expect(names(searchTools(index, `${filler(MAX_QUERY_WORDS - 1)} echo`, 5))).toEqual(["alpha__echo"]);
		expect(searchTools(index, `${filler(MAX_QUERY_WORDS)} echo`, 5)).toEqual([]);
	});

	it("searches a parameter whose schema has no usable description by its name", () => {
		const odd = tool("geo__lookup", "Answers where a place is.", {
			region: { description: 42 },
			zone: { type: "string" },
		});
		expect(names(searchTools(buildToolIndex([odd]), "region", 5))).toEqual(["geo__lookup"]);
		expect(names(searchTools(buildToolIndex([odd]), "zone", 5))).toEqual(["geo__lookup"]);
	});

	it("answers nothing from an empty catalog", () => {
		expect(searchTools(buildToolIndex([]), "issue", 5)).toEqual([]);
	});
});

describe("tool search terms", () => {
	it("splits names at __, _, - and camelCase humps", () => {
		expect(tokenize("tracker__listComments")).toEqual(["tracker", "list", "Comments"]);
		expect(tokenize("files__stat-file_v2")).toEqual(["files", "stat", "file", "v2"]);
		expect(tokenize("getHTTPStatus")).toEqual(["get", "HTTP", "Status"]);
	});

	it("brings a word's inflections to one stem", () => {
		for (const family of [
			["create", "creates", "creating", "created"],
			["file", "files"],
			["query", "queries"],
			["issue", "issues"],
		]) {
			expect(new Set(family.map(stem)).size).toBe(1);
		}
		expect(stem("status")).toBe("status");
		expect(stem("string")).toBe("string");
	});
});
