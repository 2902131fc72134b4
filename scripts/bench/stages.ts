/**
 * Per-stage cost of one request: a Node microbenchmark of the plain-code work
 * the edge Worker and the SessionDO do for one `tools/call echo` through
 * `/mcp/<server>` with an SSE reply of one event, using the project's own
 * functions from src/ (bundled from the working tree with esbuild, as wrangler
 * bundles them). Each stage runs many times after a warm-up; the table gives
 * per-operation mean, p50 and p99 in microseconds, and the number of timed
 * operations.
 *
 *   node scripts/bench/stages.ts            about 8 s
 *   node scripts/bench/stages.ts --quick    under 2 s
 *   node scripts/bench/stages.ts --json     the results as JSON
 *   node scripts/bench/stages.ts --filter relay
 *
 * `npm run bench` runs it once (`measureStages`) and reports it in docs/benchmarks.md.
 *
 * What it does not cover: the Durable Object RPC (and the reply stream crossing
 * back to the edge), the runtime's own work (HTTP parsing, the hops between
 * workerd processes, wrangler's logging), the upstream fetch, KV reads and the
 * rate-limiter binding; only the end-to-end gateway − floor difference shows
 * those. Node is not workerd: Node runs WebCrypto on libuv's thread pool, where
 * workerd computes it in the calling thread (its source says so), so every
 * WebCrypto stage is measured twice, as Node runs it and with a synchronous
 * WebCrypto (node:crypto underneath); and web streams, Request and Headers are
 * JavaScript here, C++ in workerd.
 *
 * To add a stage, add a `stage({...})` to a section of `builtInStages` (stages-built-in.ts) (or pass
 * `extraStages` to `measureStages`): a name, the code it measures, its section
 * and how many times one transparent tools/call runs it (`perCall`, 0 for
 * other paths, parts and references), an optional untimed `prepare` (a fresh
 * input per operation), the timed `run` (sync or async: a returned promise is
 * awaited) and a `check` of its output, run once first so that a stage never
 * measures an error path.
 */

import { performance } from "node:perf_hooks";
import { SECTION_LABELS, type Stage, type StageOptions, type StageResult, type StageSection } from "./stage.ts";
import { credentials, ENV, secret } from "./stage-inputs.ts";
import { builtInStages } from "./stages-built-in.ts";
import { loadGateway } from "./stages-gateway.ts";
import { installTimingSafeEqual, withSyncWebCrypto } from "./sync-webcrypto.ts";

// ---------------------------------------------------------------------------------------------
// Measuring

interface Budget {
	warmupMs: number;
	measureMs: number;
	maxIterations: number;
}

const FULL: Budget = { warmupMs: 40, measureMs: 140, maxIterations: 2_000_000 };
const QUICK: Budget = { warmupMs: 6, measureMs: 18, maxIterations: 200_000 };
/** A timed sample lasts at least this long (ns): cheap operations are timed in batches. */
const MIN_SAMPLE_NS = 10_000;
const MAX_BATCH = 1_000;
/** At least this many samples per stage, however slow. */
const MIN_SAMPLES = 10;

function isPromise(value: unknown): value is Promise<unknown> {
	return typeof (value as { then?: unknown } | null)?.then === "function";
}

/** Runs `count` operations on fresh inputs; returns the ns they took (inputs are made before the clock starts). */
async function runBatch(s: Stage, count: number, async: boolean): Promise<number> {
	const inputs: unknown[] = new Array(count);
	for (let i = 0; i < count; i++) inputs[i] = s.prepare();
	let sink: unknown;
	const start = process.hrtime.bigint();
	if (async) {
		for (let i = 0; i < count; i++) sink = await s.run(inputs[i]);
	} else {
		for (let i = 0; i < count; i++) sink = s.run(inputs[i]);
	}
	const elapsed = Number(process.hrtime.bigint() - start);
	// Keeps the last result observable, so that no operation can be optimized away.
	if (sink === inputs) throw new Error("bench-stages: unreachable");
	return elapsed;
}

function nearestRank(sorted: readonly number[], p: number): number {
	if (sorted.length === 0) return Number.NaN;
	return sorted[Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length))) - 1] ?? Number.NaN;
}

async function measureOne(s: Stage, budget: Budget): Promise<StageResult> {
	// Once, checked: the stage must measure the path it names, not an error.
	let output = s.run(s.prepare());
	const async = isPromise(output);
	if (async) output = await output;
	await s.check(output);

	const maxIterations = Math.min(budget.maxIterations, s.maxIterations ?? Number.POSITIVE_INFINITY);
	// Warm-up, in growing batches, which also sizes the timed batches.
	let warmOps = 0;
	let warmNs = 0;
	const warmEnd = performance.now() + budget.warmupMs * s.warmupScale;
	while (performance.now() < warmEnd && warmOps < maxIterations / 4) {
		const count = Math.min(64, Math.max(1, Math.ceil(warmOps / 4)));
		warmNs += await runBatch(s, count, async);
		warmOps += count;
	}
	const perOpNs = warmNs / Math.max(1, warmOps);
	const batch = Math.max(1, Math.min(MAX_BATCH, Math.ceil(MIN_SAMPLE_NS / Math.max(1, perOpNs))));

	const samples: number[] = [];
	let iterations = 0;
	let totalNs = 0;
	const end = performance.now() + budget.measureMs;
	while ((performance.now() < end || samples.length < MIN_SAMPLES) && iterations + batch <= maxIterations) {
		const ns = await runBatch(s, batch, async);
		samples.push(ns / batch);
		totalNs += ns;
		iterations += batch;
	}
	samples.sort((a, b) => a - b);
	return {
		name: s.name,
		code: s.code,
		section: s.section,
		perCall: s.perCall,
		webCrypto: s.webCrypto,
		iterations,
		batch,
		meanUs: totalNs / Math.max(1, iterations) / 1000,
		p50Us: nearestRank(samples, 50) / 1000,
		p99Us: nearestRank(samples, 99) / 1000,
	};
}

/** Measures every stage (or those matching `filter`), one after another. */
export async function measureStages(options: StageOptions = {}): Promise<StageResult[]> {
	const budget = options.quick ? QUICK : FULL;
	installTimingSafeEqual();
	const g = await loadGateway();
	const c = await credentials(g, ENV.KEY_SECRET, ENV.SESSION_SECRET);
	// Other secrets: src/primitives/crypto.ts caches each secret's key, and these are the synchronous WebCrypto's.
	const cSync = await withSyncWebCrypto(() => credentials(g, secret("key, sync"), secret("session, sync")));
	const all = [...builtInStages(g, c, cSync), ...(options.extraStages ?? [])];
	const filter = options.filter?.toLowerCase();
	const chosen = filter
		? all.filter((s) => s.name.toLowerCase().includes(filter) || s.code.toLowerCase().includes(filter))
		: all;
	const results: StageResult[] = [];
	for (const s of chosen) {
		const result = s.syncWebCrypto ? await withSyncWebCrypto(() => measureOne(s, budget)) : await measureOne(s, budget);
		results.push(result);
		options.onStage?.(result);
	}
	return results;
}

/** µs of plain code on one transparent tools/call: Σ mean × perCall over the edge and session stages. */
export function perCallTotalUs(results: readonly StageResult[], section?: "edge" | "session"): number {
	return results
		.filter((r) => (section ? r.section === section : r.section === "edge" || r.section === "session"))
		.reduce((sum, r) => sum + r.meanUs * r.perCall, 0);
}

/**
 * The same sum with each WebCrypto stage taken from the `workerd` section (the
 * synchronous WebCrypto): closer to what workerd spends. NaN when that section
 * was not measured (a filtered run).
 */
export function workerdEstimateUs(results: readonly StageResult[]): number {
	const path = results.filter((r) => r.section === "edge" || r.section === "session");
	const synchronous = results.filter((r) => r.section === "workerd");
	if (path.length === 0 || synchronous.length < path.filter((r) => r.webCrypto).length) return Number.NaN;
	return (
		path.filter((r) => !r.webCrypto).reduce((sum, r) => sum + r.meanUs * r.perCall, 0) +
		synchronous.reduce((sum, r) => sum + r.meanUs * r.perCall, 0)
	);
}

/** A µs figure with a precision that suits its size. */
export function formatUs(value: number): string {
	if (!Number.isFinite(value)) return "n/a";
	if (value < 1) return value.toFixed(3);
	if (value < 10) return value.toFixed(2);
	if (value < 100) return value.toFixed(1);
	return value.toFixed(0);
}

// ---------------------------------------------------------------------------------------------
// Run on its own

function table(results: readonly StageResult[]): string {
	const rows = [["stage", "per call", "iterations", "mean µs", "p50 µs", "p99 µs", "code"]];
	let section: StageSection | undefined;
	for (const r of results) {
		if (r.section !== section) {
			section = r.section;
			rows.push([`-- ${SECTION_LABELS[section]}`, "", "", "", "", "", ""]);
		}
		rows.push([
			r.name,
			r.perCall > 0 ? `${r.perCall}×` : "–",
			r.iterations.toLocaleString("en-US"),
			formatUs(r.meanUs),
			formatUs(r.p50Us),
			formatUs(r.p99Us),
			r.code,
		]);
	}
	const measured = rows.filter((row) => !row[0]?.startsWith("-- "));
	const widths = rows[0]?.map((_, column) => Math.max(...measured.map((row) => (row[column] ?? "").length))) ?? [];
	return rows
		.map((row) =>
			row
				.map((cell, column) => {
					if (cell.startsWith("-- ")) return cell;
					const width = widths[column] ?? 0;
					return column >= 1 && column <= 5 ? cell.padStart(width) : cell.padEnd(width);
				})
				.join("  ")
				.trimEnd(),
		)
		.join("\n");
}

if (import.meta.main) {
	const args = process.argv.slice(2);
	const filterAt = args.indexOf("--filter");
	const filter = filterAt === -1 ? undefined : args[filterAt + 1];
	const unknown = args.filter(
		(arg, i) => !["--quick", "--json", "--filter"].includes(arg) && (filterAt === -1 || i !== filterAt + 1),
	);
	if (unknown.length > 0 || (filterAt !== -1 && filter === undefined)) {
		console.error("Usage: node scripts/bench/stages.ts [--quick] [--json] [--filter <text>]");
		process.exit(2);
	}
	const started = performance.now();
	const results = await measureStages({ quick: args.includes("--quick"), filter });
	if (args.includes("--json")) {
		console.log(JSON.stringify(results, null, 2));
	} else {
		console.log(table(results));
		if (!results.some((r) => r.perCall > 0)) {
			console.log(`\nNode ${process.version}; ${((performance.now() - started) / 1000).toFixed(1)} s.`);
			process.exit(0);
		}
		console.log(
			`\nPlain code on one transparent tools/call (Σ mean × per call): ${formatUs(perCallTotalUs(results))} µs` +
				` (edge ${formatUs(perCallTotalUs(results, "edge"))} µs, session ${formatUs(perCallTotalUs(results, "session"))} µs);` +
				` with WebCrypto computed synchronously, as workerd does: ${formatUs(workerdEstimateUs(results))} µs.` +
				`\nNode ${process.version}; ${((performance.now() - started) / 1000).toFixed(1)} s.`,
		);
	}
}
