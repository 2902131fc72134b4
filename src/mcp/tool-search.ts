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
/**
 * ...and no longer than this. Fuzzy matching allocates a table of the word's length squared (a
 * 64k-character word took 4 GB), and a real word is found by a prefix or exact match long before
 * this: a word longer than any English one still matches, only not fuzzily.
 */
export const FUZZY_UP_TO_LENGTH = 24;
/** Edits allowed, as a fraction of the word's length (0.2: one edit in five letters). */
const FUZZINESS = 0.2;
const MAX_FUZZY_EDITS = 2;

/**
 * Words of a query past these are not read. A search costs about linearly in its words, each fuzzy
 * matched over the whole index: a sentence is a dozen, and a thousand would cost a caller's session
 * a quarter of a second of CPU per call.
 */
export const MAX_QUERY_WORDS = 32;

/**
 * What `search_tools` admits, refused before any matching (docs/tool-search.md, "Limits"): a query
 * of at most this many characters (Unicode code points, as JSON Schema's `maxLength` counts)...
 */
export const MAX_QUERY_CHARS = 1024;
/** ...whose words (runs of letters and digits, camelCase split, as `tokenize` reads them) are at most this long. */
export const MAX_WORD_CHARS = 64;

const SEARCH_OPTIONS: SearchOptions = {
	boost: BOOST,
	prefix: (term) => term.length >= PREFIX_FROM_LENGTH,
	fuzzy: (term) => (term.length >= FUZZY_FROM_LENGTH && term.length <= FUZZY_UP_TO_LENGTH ? FUZZINESS : false),
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
 * Why `query` is more than a search admits, as the end of a sentence a person can act on, or null
 * when it is within MAX_QUERY_CHARS and MAX_WORD_CHARS. Linear in the query's length, and its words
 * are looked at only once the whole is within the limit.
 */
export function queryOverLimit(query: string): string | null {
	const length = codePoints(query);
	if (length > MAX_QUERY_CHARS) {
		return `a search query is at most ${MAX_QUERY_CHARS} characters, and this one has ${length}: say in a few words what the tool should do`;
	}
	const longest = Math.max(0, ...tokenize(query).map(codePoints));
	if (longest > MAX_WORD_CHARS) {
		return `a search query's words are at most ${MAX_WORD_CHARS} letters or digits each, and one here has ${longest}`;
	}
	return null;
}

/** Unicode code points, as JSON Schema's `maxLength` counts characters: a surrogate pair is one. */
function codePoints(text: string): number {
	let count = text.length;
	for (let i = 0; i + 1 < text.length; i++) {
		const code = text.charCodeAt(i);
		if (code >= 0xd800 && code <= 0xdbff) {
			const next = text.charCodeAt(i + 1);
			if (next >= 0xdc00 && next <= 0xdfff) {
				count--;
				i++;
			}
		}
	}
	return count;
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
