import { type Tool, ToolSchema } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import {
	buildToolIndex,
	FUZZY_UP_TO_LENGTH,
	MAX_QUERY_CHARS,
	MAX_QUERY_WORDS,
	MAX_WORD_CHARS,
	queryOverLimit,
	searchTools,
} from "../src/mcp/tool-search.ts";
import { stem, tokenize } from "../src/mcp/tool-search-terms.ts";
import { seededRandom } from "./support/seeded-random.ts";

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

describe("a search query's cost is bounded", () => {
	// The same catalog and queries on every run.
	const random = seededRandom(7);
	// Words of two letters only, so that the index is dense and every query word has many
	// neighbours within two edits: the most work fuzzy matching can be made to do.
	const word = (length: number) => Array.from({ length }, () => (random() < 0.5 ? "a" : "b")).join("");
	const longWords = Array.from({ length: 1000 }, () => word(MAX_WORD_CHARS));
	const dense = longWords.map((longWord, i) =>
		tool(`s${i % 10}__t${i}`, Array.from({ length: 20 }, () => word(5 + Math.floor(random() * 30))).join(" "), {
			[word(10)]: { type: "string", description: `${word(FUZZY_UP_TO_LENGTH)} ${longWord}` },
		}),
	);
	const index = buildToolIndex(dense);

	const timed = (query: string) => {
		const started = performance.now();
		const found = searchTools(index, query, 50);
		return { found, ms: performance.now() - started };
	};

	it("the largest queries the limits admit are ranked over a thousand tools in well under a second", () => {
		const words = (count: number, length: number) => Array.from({ length: count }, () => word(length)).join(" ");
		const fuzzyEligible = words(MAX_QUERY_WORDS, FUZZY_UP_TO_LENGTH);
		const longestWords = longWords.slice(0, Math.floor((MAX_QUERY_CHARS + 1) / (MAX_WORD_CHARS + 1))).join(" ");
		const rest = MAX_QUERY_CHARS - fuzzyEligible.length;
		const longestText = `${fuzzyEligible}${" ab".repeat(Math.floor(rest / 3))}${" ".repeat(rest % 3)}`;
		expect(longestText).toHaveLength(MAX_QUERY_CHARS);
		for (const query of [fuzzyEligible, longestWords, longestText]) {
			expect(queryOverLimit(query)).toBeNull();
			const { found, ms } = timed(query);
			expect(found.length).toBeGreaterThan(0);
			// A generous bound: it takes about a tenth of this on two busy cores.
			expect(ms).toBeLessThan(1000);
		}
	});

	it("refuses a query over MAX_QUERY_CHARS characters or with a word over MAX_WORD_CHARS, in a sentence naming the limit", () => {
		expect(queryOverLimit("x".repeat(1_000_000))).toBe(
			`a search query is at most ${MAX_QUERY_CHARS} characters, and this one has 1000000: say in a few words what the tool should do`,
		);
		expect(queryOverLimit(`find ${"y".repeat(MAX_WORD_CHARS + 1)} please`)).toBe(
			`a search query's words are at most ${MAX_WORD_CHARS} letters or digits each, and one here has ${MAX_WORD_CHARS + 1}`,
		);
		expect(queryOverLimit("y".repeat(MAX_WORD_CHARS))).toBeNull();
		expect(queryOverLimit("ab ".repeat(MAX_QUERY_CHARS / 4))).toBeNull();
	});

	it("counts characters as JSON Schema's maxLength does: a character outside the BMP is one", () => {
		expect(queryOverLimit("😀".repeat(MAX_QUERY_CHARS))).toBeNull();
		expect(queryOverLimit("😀".repeat(MAX_QUERY_CHARS + 1))).toContain(`this one has ${MAX_QUERY_CHARS + 1}`);
		expect(queryOverLimit("𝒜".repeat(MAX_WORD_CHARS))).toBeNull();
		expect(queryOverLimit("𝒜".repeat(MAX_WORD_CHARS + 1))).toContain(`one here has ${MAX_WORD_CHARS + 1}`);
	});

	it("ranks even a word of a million characters in-process at once: only words up to FUZZY_UP_TO_LENGTH are matched fuzzily", () => {
		const { found, ms } = timed("a".repeat(1_000_000));
		expect(found).toEqual([]);
		expect(ms).toBeLessThan(1000);
	});

	it("matches a word longer than FUZZY_UP_TO_LENGTH exactly and by prefix, but not one edit away", () => {
		const long = "internationalizationsupport";
		expect(long.length).toBeGreaterThan(FUZZY_UP_TO_LENGTH);
		const own = buildToolIndex([tool("i18n__set_locale", `Turns on ${long} for a project.`)]);
		expect(names(searchTools(own, long, 5))).toEqual(["i18n__set_locale"]);
		expect(names(searchTools(own, long.slice(0, FUZZY_UP_TO_LENGTH + 1), 5))).toEqual(["i18n__set_locale"]);
		expect(names(searchTools(own, long.replace("support", "suport"), 5))).toEqual([]);
		// Shorter, one edit away is still forgiven.
		expect(names(searchTools(own, "projct", 5))).toEqual(["i18n__set_locale"]);
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
