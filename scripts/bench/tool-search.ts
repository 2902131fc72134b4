/**
 * The tool-search bench alone: lists the aggregate catalog from its running servers, measures
 * (tool-search-measure.ts) and prints the `## Measured` section of docs/tool-search.md; with
 * `--write`, replaces that section in the file (everything above it stays). `npm run bench` runs
 * the same measurement as one of its stages.
 *
 *   node scripts/bench/tool-search.ts            print the figures
 *   node scripts/bench/tool-search.ts --write    and write them to docs/tool-search.md
 *   node scripts/bench/tool-search.ts --quick    fewer timing repetitions
 */

import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { toolSearchSection } from "./report-tool-search.ts";
import { measureToolSearch, type ToolSearchFigures } from "./tool-search-measure.ts";

const USAGE = "Usage: node scripts/bench/tool-search.ts [--quick] [--write]";
export const TOOL_SEARCH_DOC = join(import.meta.dirname, "..", "..", "docs", "tool-search.md");
const MEASURED_HEADING = "## Measured";

/** The line that says where and when the figures were taken. */
export function toolSearchRunLine(): string {
	const cpu = cpus()[0]?.model ?? "unknown CPU";
	return `Run ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC, Node ${process.version}, ${cpu}.`;
}

/** Replaces the `## Measured` section (the file's last) of docs/tool-search.md, or starts the file with it. */
export function writeMeasuredSection(figures: ToolSearchFigures, runLine: string): void {
	const section = toolSearchSection(figures, runLine).join("\n");
	const current = existsSync(TOOL_SEARCH_DOC) ? readFileSync(TOOL_SEARCH_DOC, "utf8") : "# Tool search\n\n";
	const at = current.indexOf(`\n${MEASURED_HEADING}\n`);
	const above = at < 0 ? `${current.trimEnd()}\n` : current.slice(0, at + 1);
	writeFileSync(TOOL_SEARCH_DOC, `${above}\n${section}`);
}

async function main(): Promise<void> {
	const args = process.argv.slice(2);
	const unknown = args.filter((arg) => arg !== "--quick" && arg !== "--write");
	if (unknown.length > 0 || args.includes("--help")) {
		console.error(USAGE);
		process.exit(unknown.length > 0 ? 2 : 0);
	}
	const figures = await measureToolSearch({ quick: args.includes("--quick") });
	const runLine = toolSearchRunLine();
	console.log(toolSearchSection(figures, runLine).join("\n"));
	if (args.includes("--write")) {
		writeMeasuredSection(figures, runLine);
		console.error(`tool-search: wrote the Measured section of ${TOOL_SEARCH_DOC}`);
	}
}

if (import.meta.main) await main();
