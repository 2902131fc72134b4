/**
 * The code-mode bench alone: starts the gateway under `wrangler dev` and its upstreams, runs the
 * three tasks in each disclosure mode and the one-inner-call latency (code-mode-measure.ts), and
 * prints the `## Measured` section of docs/code-mode.md; with `--write`, replaces that section in
 * the file (the rest stays). `npm run bench` runs the same measurement after the tool-search one.
 *
 *   node scripts/bench/code-mode.ts            print the figures
 *   node scripts/bench/code-mode.ts --write    and write them to docs/code-mode.md
 *   node scripts/bench/code-mode.ts --quick    fewer latency calls
 */

import { installShutdown, Processes } from "../processes.ts";
import { measureCodeMode } from "./code-mode-measure.ts";
import { CODE_MODE_DOC, codeModeSection, writeCodeModeSection } from "./report-code-mode.ts";
import { toolSearchRunLine } from "./report-tool-search.ts";

const USAGE = "Usage: node scripts/bench/code-mode.ts [--quick] [--write]";

const args = process.argv.slice(2);
const unknown = args.filter((arg) => arg !== "--quick" && arg !== "--write");
if (unknown.length > 0 || args.includes("--help")) {
	console.error(USAGE);
	process.exit(unknown.length > 0 ? 2 : 0);
}
const procs = new Processes();
const { shutdown } = installShutdown(procs, "code-mode");
try {
	const figures = await measureCodeMode(procs, {
		quick: args.includes("--quick"),
		log: (line) => console.error(line),
	});
	const runLine = toolSearchRunLine();
	console.log(codeModeSection(figures, runLine).join("\n"));
	if (args.includes("--write")) {
		writeCodeModeSection(figures, runLine, CODE_MODE_DOC);
		console.error(`code-mode: wrote the Measured section of ${CODE_MODE_DOC}`);
	}
	await shutdown(0);
} catch (error) {
	await shutdown(1, `code-mode: failed: ${error instanceof Error ? error.message : String(error)}`);
}
