/**
 * What one run of `npm run bench` does: its command line (full or `--quick`),
 * the counts per round and target, and where the report goes. Read once, when
 * the bench starts.
 */

import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT } from "../wrangler-dev.ts";

const USAGE = `Usage: npm run bench [-- --quick]

  (no option)  full run, a few minutes; writes docs/benchmarks.md and docs/benchmarks-latency.svg
  --quick      smoke run with small counts, a minute or less; writes its report to a temporary
               directory (printed at the end), never to docs/
  --help       this text`;

const args = process.argv.slice(2);
if (args.includes("--help") || args.includes("-h")) {
	console.log(USAGE);
	process.exit(0);
}
const unknown = args.filter((arg) => arg !== "--quick");
if (unknown.length > 0) {
	console.error(`bench: unknown option ${unknown.join(" ")}\n\n${USAGE}`);
	process.exit(2);
}
export const QUICK = args.includes("--quick");

/** Counts per round and target; durations in ms. */
export const PLAN = QUICK
	? {
			rounds: 2,
			warmupCalls: 30,
			latencyCalls: 30,
			throughputMs: 100,
			setupSessions: 2,
			blobCalls: 4,
			progressCalls: 2,
			stdioSessions: 2,
			stdioLaterCalls: 5,
			poolSize: 16,
			busyCalls: 200,
			busyMinMs: 0,
			idleListenMs: 5_000,
			watchdogMs: 4 * 60_000,
		}
	: {
			rounds: 5,
			warmupCalls: 150,
			latencyCalls: 200,
			throughputMs: 700,
			setupSessions: 25,
			blobCalls: 40,
			progressCalls: 15,
			stdioSessions: 5,
			stdioLaterCalls: 20,
			poolSize: 64,
			busyCalls: 1_000,
			// Long enough to cross at least one expiry of the edge's API-key cache (10 s).
			busyMinMs: 12_000,
			idleListenMs: 30_000,
			watchdogMs: 15 * 60_000,
		};
export const CONCURRENCIES = [1, 16, 64];
/** The connector stage's throughput: one session each, one call at a time and 16 at once. */
export const CONNECTOR_CONCURRENCIES = [1, 16];
/** Upper bound on the calls of one throughput measurement, whatever the machine's speed. */
export const MAX_CALLS_PER_CELL = 200_000;
export const BLOB_KIB = 64;
export const PROGRESS_STEPS = 10;
export const PROGRESS_DELAY_MS = 5;
export const BUSY_CONCURRENCY = 16;
/** Any single MCP request of the benchmark. */
export const CALL_TIMEOUT_MS = 30_000;
/** Sessions opened at once when filling the pools. */
export const OPEN_PARALLELISM = 8;
/** How often the long-lived sessions' counters are read during the run (see `keepCounting`). */
export const COUNTER_POLL_MS = 3_000;

/** How long after an idle listener's close its session's active time is looked at again. */
export const AFTER_CLOSE_PROBE_MS = 300;

/** Quick runs never touch docs/: their report goes to a temporary directory. */
export const OUT_DIR = QUICK ? join(tmpdir(), "mcp-edge-gateway-bench-quick") : join(ROOT, "docs");
/** The raw samples of the last run, for a closer look (never committed). */
export const RAW_PATH = join(tmpdir(), `mcp-edge-gateway-bench-${QUICK ? "quick" : "full"}.json`);
export const MD_NAME = "benchmarks.md";
export const SVG_NAME = "benchmarks-latency.svg";
