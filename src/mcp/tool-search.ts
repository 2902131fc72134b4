import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import MiniSearch, { type SearchOptions } from "minisearch";
import { z } from "zod";
import { SEPARATOR } from "./namespacing.ts";
import { processTerm, tokenize } from "./tool-search-terms.ts";

/**
 * Full-text ranking of a catalog's tools for `search_tools` (docs/tool-search.md): BM25 over each
 * tool's words, with MiniSearch (docs/decisions/0055-tool-search-ranks-with-minisearch.md).
 */

/** An index over tools' name, title, description and parameter names/descriptions (MiniSearch). */
export interface ToolIndex {
	readonly size: number;
}

/** The fields of a tool's search document; `server` is the part of a namespaced name before `__`. */
type Field = "server" | "name" | "title" | "description" | "parameters";
type ToolDocument = { id: number } & Record<Field, string>;

const FIELDS: readonly Field[] = ["server", "name", "title", "description", "parameters"];

/**
 * How much a match in each field counts. A tool's name and title say what it does in a few words,
 * so a word found there counts more; a parameter's description says as much as the tool's own
 * (a query often names what it acts on: "a file's path", "the issue's key"); the server only
 * narrows ("the tracker's ..."), and a word shared by all its tools (a "files" server) should not
 * outweigh the one tool that says it. Set on the bench's labelled queries (docs/tool-search.md):
 * name 3 / title 2.5 / parameters 0.6 / server 1 gave MRR 0.751, these 0.768; BM25's own
 * parameters moved nothing that mattered and keep MiniSearch's defaults.
 */
const BOOST: Readonly<Record<Field, number>> = { server: 0.5, name: 2, title: 1.5, description: 1, parameters: 1 };

/** Query words this long or longer also match words they begin ("attach" → "attachment"). */
const PREFIX_FROM_LENGTH = 3;
/** Query words this long or longer also match words one or two edits away ("repositroy"). */
const FUZZY_FROM_LENGTH = 5;
/** Edits allowed, as a fraction of the word's length (0.2: one edit in five letters). */
const FUZZINESS = 0.2;
const MAX_FUZZY_EDITS = 2;

/**
 * Words of a query past these are not read. A search costs about linearly in its words, each fuzzy
 * matched over the whole index: a sentence is a dozen, and a thousand would cost a caller's session
 * a quarter of a second of CPU per call.
 */
export const MAX_QUERY_WORDS = 32;

const SEARCH_OPTIONS: SearchOptions = {
	boost: BOOST,
	prefix: (term) => term.length >= PREFIX_FROM_LENGTH,
	fuzzy: (term) => (term.length >= FUZZY_FROM_LENGTH ? FUZZINESS : false),
	maxFuzzy: MAX_FUZZY_EDITS,
	combineWith: "OR",
};

/** What a tool's input schema says of one parameter; anything else in it is not searched. */
const ParameterSchema = z.object({ description: z.string().optional() });

/** The index `buildToolIndex` makes: the tools in catalog order and MiniSearch over their documents. */
class MiniSearchToolIndex implements ToolIndex {
	readonly size: number;
	readonly tools: readonly Tool[];
	readonly search: MiniSearch<ToolDocument>;
	constructor(tools: readonly Tool[], search: MiniSearch<ToolDocument>) {
		this.size = tools.length;
		this.tools = tools;
		this.search = search;
	}
}

/** The words of a tool's parameters: each one's name and description. */
function parameterText(tool: Tool): string {
	const properties = tool.inputSchema.properties ?? {};
	return Object.entries(properties)
		.map(([name, schema]) => {
			const parsed = ParameterSchema.safeParse(schema);
			return parsed.success && parsed.data.description !== undefined ? `${name} ${parsed.data.description}` : name;
		})
		.join(" \n ");
}

function toolDocument(tool: Tool, id: number): ToolDocument {
	const at = tool.name.indexOf(SEPARATOR);
	const server = at > 0 ? tool.name.slice(0, at) : "";
	const name = at > 0 ? tool.name.slice(at + SEPARATOR.length) : tool.name;
	const titles = [tool.title, tool.annotations?.title].filter((title) => title !== undefined);
	return {
		id,
		server,
		name,
		title: [...new Set(titles)].join(" \n "),
		description: tool.description ?? "",
		parameters: parameterText(tool),
	};
}

/**
 * Indexes `tools` for `searchTools`. Build it once per catalog generation: it costs a pass over
 * every tool's text, a search afterwards only the query's words.
 */
export function buildToolIndex(tools: readonly Tool[]): ToolIndex {
	const search = new MiniSearch<ToolDocument>({
		fields: [...FIELDS],
		tokenize,
		processTerm,
		searchOptions: SEARCH_OPTIONS,
	});
	search.addAll(tools.map(toolDocument));
	return new MiniSearchToolIndex([...tools], search);
}

/**
 * The best matches first, at most `limit`; an empty or blank query gives [], and words past the
 * first MAX_QUERY_WORDS are not read. Equal scores are ordered by name, so one catalog and one query
 * always give one answer.
 *
 * @example
 * searchTools(buildToolIndex(tools), "open a new issue about a login bug", 5)
 */
export function searchTools(index: ToolIndex, query: string, limit: number): Tool[] {
	if (!(index instanceof MiniSearchToolIndex)) throw new TypeError("searchTools needs an index from buildToolIndex");
	const words = tokenize(query).slice(0, MAX_QUERY_WORDS);
	if (words.length === 0 || limit <= 0) return [];
	const ranked = index.search
		.search(words.join(" "))
		.map((result) => ({
			tool: typeof result.id === "number" ? index.tools[result.id] : undefined,
			score: result.score,
		}))
		.filter((match): match is { tool: Tool; score: number } => match.tool !== undefined)
		.sort((a, b) => b.score - a.score || compareNames(a.tool.name, b.tool.name));
	return ranked.slice(0, Math.floor(limit)).map((match) => match.tool);
}

/** Code-point order, not the locale's: the same on every isolate. */
function compareNames(a: string, b: string): number {
	return a < b ? -1 : a > b ? 1 : 0;
}
