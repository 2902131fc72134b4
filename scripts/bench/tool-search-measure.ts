/**
 * The tool-search figures (issue 26, point 4) over the aggregate catalog (tool-search-catalog.ts):
 * the bytes of `tools/list` in full and in search mode, what one search answers, retrieval quality
 * of `searchTools` on the labelled queries (tool-search-queries.json: recall@1, recall@5, MRR), and
 * what building the index and searching cost on this machine.
 */

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { CALL_TOOL_TOOL, SEARCH_TOOLS_TOOL, searchResult } from "../../src/mcp/disclosure-tools.ts";
import { buildToolIndex, searchTools } from "../../src/mcp/tool-search.ts";
import { aggregateCatalog } from "./tool-search-catalog.ts";

const QueriesSchema = z.object({
	queries: z
		.array(z.object({ query: z.string().min(1), expected: z.array(z.string().min(1)).min(1) }))
		.min(50, "the labelled set needs at least 50 queries"),
});
export type LabelledQuery = z.infer<typeof QueriesSchema>["queries"][number];

/** The limits a client would ask `search_tools` for: the answers' bytes are measured at each. */
const ANSWER_LIMITS = [5, 10] as const;

export interface ToolSearchFigures {
	members: { server: string; tools: number }[];
	tools: number;
	/** Bytes of the JSON-RPC reply to tools/list (UTF-8), as the client receives and its model reads them. */
	listBytes: { full: number; search: number };
	/** Mean and largest bytes of a `search_tools` reply over the labelled queries, per limit. */
	answerBytes: { limit: number; mean: number; max: number }[];
	queries: number;
	recallAt1: number;
	recallAt5: number;
	mrr: number;
	/** Queries whose expected tool is not in the first five: the query, the expected, the first three found. */
	misses: { query: string; expected: string[]; rank: number | null; found: string[] }[];
	/** Building the index over the whole catalog, median ms; one search, mean µs over all queries. */
	buildMs: number;
	searchMicros: number;
}

export function labelledQueries(): LabelledQuery[] {
	const path = join(import.meta.dirname, "tool-search-queries.json");
	const parsed = QueriesSchema.safeParse(JSON.parse(readFileSync(path, "utf8")));
	if (!parsed.success) throw new Error(`${path}: ${z.prettifyError(parsed.error)}`);
	return parsed.data.queries;
}

function replyBytes(result: unknown): number {
	return new TextEncoder().encode(JSON.stringify({ jsonrpc: "2.0", id: 1, result })).byteLength;
}

/** The 1-based rank of the first expected tool in `ranked`, or null. */
function rankOf(ranked: readonly Tool[], expected: readonly string[]): number | null {
	const at = ranked.findIndex((tool) => expected.includes(tool.name));
	return at < 0 ? null : at + 1;
}

function median(values: number[]): number {
	const sorted = [...values].sort((a, b) => a - b);
	return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

/** Every figure; `quick` repeats the timings less. Throws if a label names a tool the catalog lacks. */
export async function measureToolSearch({ quick }: { quick: boolean }): Promise<ToolSearchFigures> {
	const catalog = await aggregateCatalog();
	const { tools } = catalog;
	const queries = labelledQueries();
	const names = new Set(tools.map((tool) => tool.name));
	const unknown = queries.flatMap(({ expected }) => expected.filter((name) => !names.has(name)));
	if (unknown.length > 0) throw new Error(`labelled queries name tools the catalog lacks: ${unknown.join(", ")}`);

	const index = buildToolIndex(tools);
	const ranks = queries.map(({ query, expected }) => {
		const ranked = searchTools(index, query, tools.length);
		return { query, expected, rank: rankOf(ranked, expected), found: ranked.slice(0, 3).map((tool) => tool.name) };
	});
	const share = (hit: (rank: number | null) => boolean) => ranks.filter(({ rank }) => hit(rank)).length / ranks.length;

	const answerBytes = ANSWER_LIMITS.map((limit) => {
		const bytes = queries.map(({ query }) => replyBytes(searchResult(searchTools(index, query, limit))));
		return { limit, mean: bytes.reduce((sum, b) => sum + b, 0) / bytes.length, max: Math.max(...bytes) };
	});

	const builds = quick ? 5 : 50;
	const buildTimes = Array.from({ length: builds }, () => {
		const start = performance.now();
		buildToolIndex(tools);
		return performance.now() - start;
	});
	const searchRounds = quick ? 2 : 20;
	const searchStart = performance.now();
	for (let round = 0; round < searchRounds; round++) {
		for (const { query } of queries) searchTools(index, query, 10);
	}
	const searchMicros = ((performance.now() - searchStart) * 1000) / (searchRounds * queries.length);

	return {
		members: catalog.members.map(({ server, tools: listed }) => ({ server, tools: listed.length })),
		tools: tools.length,
		listBytes: { full: replyBytes({ tools }), search: replyBytes({ tools: [SEARCH_TOOLS_TOOL, CALL_TOOL_TOOL] }) },
		answerBytes,
		queries: queries.length,
		recallAt1: share((rank) => rank === 1),
		recallAt5: share((rank) => rank !== null && rank <= 5),
		mrr: ranks.reduce((sum, { rank }) => sum + (rank === null ? 0 : 1 / rank), 0) / ranks.length,
		misses: ranks.filter(({ rank }) => rank === null || rank > 5),
		buildMs: median(buildTimes),
		searchMicros,
	};
}
