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

import { TOOL_SEARCH_DOC, toolSearchRunLine, toolSearchSection, writeMeasuredSection } from "./report-tool-search.ts";
import { measureToolSearch } from "./tool-search-measure.ts";

const USAGE = "Usage: node scripts/bench/tool-search.ts [--quick] [--write]";

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
	writeMeasuredSection(figures, runLine, TOOL_SEARCH_DOC);
	console.error(`tool-search: wrote the Measured section of ${TOOL_SEARCH_DOC}`);
}
// server-everything's stdio child and the fixtures' listeners are closed; nothing else keeps Node up.
