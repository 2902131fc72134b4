/**
 * The report of `npm run bench`: percentiles, the markdown of
 * docs/benchmarks.md and the hand-made SVG of latency distributions.
 */

import { SECTION_LABELS, type StageResult, type StageSection } from "./stage.ts";
import { formatUs, perCallTotalUs, workerdEstimateUs } from "./stages.ts";

export type TargetId = "direct" | "floor" | "server" | "aggregate";
export const TARGET_IDS: readonly TargetId[] = ["direct", "floor", "server", "aggregate"];
export const TARGET_LABELS: Record<TargetId, string> = {
	direct: "direct",
	floor: "floor",
	server: "gateway /mcp/:server",
	aggregate: "gateway /mcp",
};
const COLORS: Record<TargetId, string> = {
	direct: "#6b7280",
	floor: "#16a34a",
	server: "#2563eb",
	aggregate: "#dc2626",
};

export type GatewayEndpoint = "server" | "aggregate";

/** The targets of the 2026-07-28 measurements (scripts/bench/modern.ts), all against the SDK v2 upstream. */
export type ModernTargetId = "modernDirect" | "statelessFloor" | "stateless" | "legacyGateway" | "legacyDirect";
export const MODERN_TARGET_IDS: readonly ModernTargetId[] = [
	"modernDirect",
	"statelessFloor",
	"stateless",
	"legacyGateway",
	"legacyDirect",
];
export const MODERN_TARGET_LABELS: Record<ModernTargetId, string> = {
	modernDirect: "2026-07-28 direct",
	statelessFloor: "2026-07-28 via the Worker-only floor",
	stateless: "2026-07-28 via the gateway (stateless)",
	legacyGateway: "2025-11-25 via the gateway (SessionDO)",
	legacyDirect: "2025-11-25 direct",
};

/** tools/call at concurrency 1 in both eras, against the same SDK v2 upstream and tool. */
export interface ModernResults {
	/** How the gateway knew the upstream speaks 2026-07-28: pinned on the server, or discovered. */
	protocol: string;
	latency: Record<ModernTargetId, number[]>;
	/** The gateway's Durable Object requests during each target's windows, by `Class.method`. */
	durableObjectRequests: Record<ModernTargetId, Record<string, number>>;
	/** What the upstream received during each target's windows, by `<era> <method>`. */
	upstreamRequests: Record<ModernTargetId, Record<string, number>>;
}

export interface Throughput {
	calls: number;
	ms: number;
	/** Calls per second of each round. */
	perRound: number[];
}

export interface ThroughputCell {
	sessions: number;
	concurrency: number;
	results: Record<TargetId, Throughput>;
}

/** What the gateway's own counters say one session cost over a window. */
export interface CostWindow {
	calls: number;
	elapsedMs: number;
	storageReads: number;
	storageWrites: number;
	/** Stream events kept for resumption, and their pruning (session-stats eventBufferWrites). */
	eventBufferWrites: number;
	/** The session's registry rechecks (session-stats registryReads). */
	sessionRegistryReads: number;
	/** The Workers KV reads of those rechecks (session-stats kvReads). */
	kvReads: number;
	/** Requests the registry Durable Object served in the window, from any source (registry-stats). */
	registryReadsAll: number | null;
	upstreamRequests: number;
}

/** A client that opened its session's GET stream and only listened (session-stats activeMs). */
export interface IdleWindow {
	/** From opening the GET stream to closing it. */
	listenedMs: number;
	/** Listening windows the gateway gave (the client resumed after each). */
	windows: number;
	/** The session's Durable Object active time over that window. */
	activeMs: number;
	/** The object was still active a moment after the client had closed the stream. */
	activeAfterClose: boolean;
}

/** CPU time of the server side of a target over its throughput calls (from /proc). */
export interface CpuUse {
	calls: number;
	/** The upstream's Node process. */
	upstreamMs: number;
	/** The runtime in between: the wrangler dev process group (wrangler, workerd); 0 for direct. */
	runtimeMs: number;
	/** The benchmark's own process (SDK clients). */
	clientMs: number;
}

/** What the upstream received for a number of sessions (setup and DELETE), from its own log. */
export interface UpstreamLog {
	sessions: number;
	requests: number;
	byKind: Record<string, number>;
}

export type BundleResult =
	| { files: string[]; rawBytes: number; gzipBytes: number; wranglerSummary: string | null }
	| { error: string };

export interface BenchResults {
	quick: boolean;
	meta: {
		date: string;
		cores: number;
		cpuModel: string;
		node: string;
		platform: string;
		wrangler: string;
		sdk: string;
		loadAverage: number[];
		wallSeconds: number;
		rounds: number;
		poolSize: number;
		concurrencies: number[];
		blobKib: number;
		progressSteps: number;
		progressDelayMs: number;
		touchIntervalS: number;
		recheckIntervalS: number;
		keyCacheTtlS: number;
		/** The edge's per-isolate cache of endpoint records (ENDPOINT_CACHE_TTL_SECONDS); null where the gateway has none. */
		endpointCacheTtlS: number | null;
	};
	latency: Record<TargetId, number[]>;
	setup: Record<TargetId, number[]>;
	blob: Record<TargetId, number[]>;
	progressFirst: Record<TargetId, number[]>;
	progressTotal: Record<TargetId, number[]>;
	throughput: ThroughputCell[];
	modern: ModernResults;
	costs: { busy: Record<GatewayEndpoint, CostWindow>; longRun: Record<GatewayEndpoint, CostWindow> };
	idle: Record<GatewayEndpoint, IdleWindow>;
	cpu: Record<TargetId, CpuUse> | null;
	setupUpstream: Record<TargetId, UpstreamLog>;
	bundle: BundleResult;
	/** The per-stage microbenchmark (scripts/bench/stages.ts), or why it failed. */
	stages: StageResult[] | { error: string };
	warnings: string[];
}

/** Every cost window of the run, by window and gateway endpoint. */
function* costWindows(results: BenchResults): Generator<{ name: string; endpoint: GatewayEndpoint; w: CostWindow }> {
	for (const [name, windows] of [
		["busy session", results.costs.busy],
		["long-lived session", results.costs.longRun],
	] as const) {
		for (const endpoint of ["server", "aggregate"] as const) yield { name, endpoint, w: windows[endpoint] };
	}
}

/** Nearest-rank percentile of unsorted samples; NaN for none. */
export function percentile(samples: readonly number[], p: number): number {
	if (samples.length === 0) return Number.NaN;
	const sorted = [...samples].sort((a, b) => a - b);
	const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
	return sorted[rank - 1] ?? Number.NaN;
}

function mean(samples: readonly number[]): number {
	return samples.length === 0 ? Number.NaN : samples.reduce((sum, x) => sum + x, 0) / samples.length;
}

export function rate(result: Throughput): number {
	return result.ms > 0 ? (result.calls * 1000) / result.ms : Number.NaN;
}

function ms(value: number): string {
	if (!Number.isFinite(value)) return "n/a";
	return value < 10 ? value.toFixed(2) : value.toFixed(1);
}

function signedMs(value: number): string {
	if (!Number.isFinite(value)) return "n/a";
	return `${value >= 0 ? "+" : "−"}${ms(Math.abs(value))}`;
}

function ratio(value: number): string {
	return Number.isFinite(value) ? `${value.toFixed(2)}×` : "n/a";
}

function perSecond(value: number): string {
	return Number.isFinite(value) ? Math.round(value).toLocaleString("en-US") : "n/a";
}

function kib(bytes: number): string {
	return `${(bytes / 1024).toFixed(1)} KiB`;
}

function per1000(count: number, calls: number): string {
	return calls > 0 ? ((count * 1000) / calls).toFixed(2) : "n/a";
}

function seconds(msValue: number, digits = 1): string {
	return `${(msValue / 1000).toFixed(digits)} s`;
}

/** Allowed count for "at most one per interval elapsed": ceil(elapsed / interval), at least 1. */
export function allowance(elapsedMs: number, intervalS: number): number {
	return Math.max(1, Math.ceil(elapsedMs / (intervalS * 1000)));
}

function cellLabel(cell: ThroughputCell): string {
	return `c=${cell.concurrency}, ${cell.sessions === 1 ? "1 session" : `${cell.sessions} sessions`}`;
}

interface LatencyRow {
	label: string;
	samples: Record<TargetId, number[]>;
	p: number;
}

/** The whole of docs/benchmarks.md. */
export function renderMarkdown(results: BenchResults, svgName: string): string {
	const m = results.meta;
	const lines: string[] = [];
	const push = (...more: string[]) => lines.push(...more);
	const progressLabel = `progress {steps: ${m.progressSteps}, delayMs: ${m.progressDelayMs}}`;

	push(
		"# Benchmarks",
		"",
		"<!-- Generated by `npm run bench` (scripts/bench/bench.ts). Do not edit by hand: rerun it. -->",
		"",
		`Run ${m.date} on ${m.cores} cores (${m.cpuModel}), ${m.platform}, Node ${m.node}, wrangler ${m.wrangler} (workerd),` +
			` MCP SDK ${m.sdk}. ${m.rounds} interleaved rounds; wall time ${m.wallSeconds.toFixed(0)} s; load average at` +
			` start ${m.loadAverage.map((x) => x.toFixed(2)).join(", ")}.${results.quick ? " **Quick mode: small counts, figures are only a smoke check.**" : ""}`,
		"",
		"What is compared, all on this machine, with the same SDK client and the same upstream (an SDK `McpServer` on loopback):",
		"",
		"- **direct**: SDK client → upstream.",
		"- **floor**: SDK client → the thinnest Worker → Durable Object → upstream passthrough (`scripts/bench/floor/`),",
		"  on the same local runtime (`wrangler dev`, workerd): what the runtime itself costs.",
		"- **gateway /mcp/:server**: SDK client → the gateway's transparent endpoint (API key, SessionDO).",
		"- **gateway /mcp**: SDK client → the gateway's aggregate endpoint (tools named `bench__echo`).",
		"",
		"The 2026-07-28 stateless path (no session, no Durable Object) has its own section, against a Worker-only floor",
		"and an SDK v2 upstream that speaks both eras: [2026-07-28: the stateless path](#2026-07-28-the-stateless-path).",
		"",
		`On this machine the floor itself adds ${ms(percentile(results.latency.floor, 50) - percentile(results.latency.direct, 50))} ms to a call's p50 over direct: \`wrangler dev\` passes`,
		"each request through a proxy Worker and then the Worker itself (two workerd processes) and logs it through",
		"wrangler's Node process. The gateway's own cost is its difference to the floor.",
		"",
		"Ratios first (latency and CPU per call: lower is better; throughput: higher is better), absolute figures after.",
		"Timings on a shared machine are noisy: compare within one run, not across runs; CPU time per call is the steadiest.",
		"",
		"Run it with `npm run bench` (about five minutes; rewrites this file and the chart) or `npm run bench -- --quick`",
		"(under a minute: the CI smoke check, small counts, report in a temporary directory, this file untouched).",
		"What the figures showed and what was fixed, before and after: [benchmarks-history.md](benchmarks-history.md).",
		"",
		`![Latency distributions, direct vs floor vs gateway](${svgName})`,
		"",
		"## Ratios",
		"",
		"| Metric | /mcp/:server ÷ direct | /mcp/:server ÷ floor | /mcp ÷ direct | /mcp ÷ floor |",
		"| --- | ---: | ---: | ---: | ---: |",
	);
	const latencyRows: LatencyRow[] = [
		{ label: "tools/call latency p50 (c=1)", samples: results.latency, p: 50 },
		{ label: "tools/call latency p95 (c=1)", samples: results.latency, p: 95 },
		{ label: "tools/call latency p99 (c=1)", samples: results.latency, p: 99 },
	];
	for (const row of latencyRows) push(ratioRow(row.label, (t) => percentile(row.samples[t], row.p)));
	for (const cell of results.throughput) {
		push(ratioRow(`throughput ${cellLabel(cell)}`, (t) => rate(cell.results[t])));
	}
	const cpu = results.cpu;
	if (cpu) {
		push(
			ratioRow("server-side CPU per call (upstream + runtime)", (t) => serverCpuPerCall(cpu[t])),
			ratioRow("runtime CPU per call (wrangler dev + workerd)", (t) =>
				t === "direct" ? Number.NaN : cpu[t].runtimeMs / cpu[t].calls,
			),
		);
	}
	push(
		ratioRow("session setup p50", (t) => percentile(results.setup[t], 50)),
		ratioRow("session setup p95", (t) => percentile(results.setup[t], 95)),
		ratioRow(`${m.blobKib} KiB result p50`, (t) => percentile(results.blob[t], 50)),
		ratioRow(`${m.blobKib} KiB result p95`, (t) => percentile(results.blob[t], 95)),
		ratioRow("progress: first event p50", (t) => percentile(results.progressFirst[t], 50)),
		ratioRow("progress: complete p50", (t) => percentile(results.progressTotal[t], 50)),
		"",
		"## Absolute figures",
		"",
		"### tools/call latency (`echo`, concurrency 1, one session), ms",
		"",
		"| Target | calls | p50 | p95 | p99 | mean | p50 − floor | p99 − floor |",
		"| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
	);
	for (const t of TARGET_IDS) push(latencyLine(t, results.latency[t], results.latency.floor, true));
	push(
		"",
		"### Throughput (`echo`, calls/s)",
		"",
		`One session: one client sends up to *c* calls at once. ${m.poolSize} sessions: ${m.poolSize} clients, *c* calls in flight spread over them round-robin.`,
		"",
		"| Sessions | Concurrency | direct | floor | /mcp/:server | /mcp | /mcp/:server ÷ floor |",
		"| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
	);
	for (const cell of results.throughput) {
		const r = (t: TargetId) => rate(cell.results[t]);
		push(
			`| ${cell.sessions} | ${cell.concurrency} | ${TARGET_IDS.map((t) => perSecond(r(t))).join(" | ")} | ${ratio(r("server") / r("floor"))} |`,
		);
	}
	if (cpu) {
		push(
			"",
			"### CPU time per call, ms (all throughput measurements)",
			"",
			"CPU time (user + system, from /proc) of the processes behind each target while its throughput was measured,",
			"divided by the calls: less noisy than wall-clock figures on a busy machine.",
			"",
			"| Target | calls | upstream | runtime (wrangler dev: node + workerd) | server side total | benchmark client |",
			"| --- | ---: | ---: | ---: | ---: | ---: |",
		);
		for (const t of TARGET_IDS) {
			const c = cpu[t];
			push(
				`| ${TARGET_LABELS[t]} | ${c.calls.toLocaleString("en-US")} | ${ms(c.upstreamMs / c.calls)} | ${t === "direct" ? "–" : ms(c.runtimeMs / c.calls)} | ${ms(serverCpuPerCall(c))} | ${ms(c.clientMs / c.calls)} |`,
			);
		}
	}
	push(
		"",
		"### Session setup (initialize + notifications/initialized + first tools/list), ms",
		"",
		"| Target | sessions | p50 | p95 | p99 | mean | p50 − floor | p99 − floor |",
		"| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
	);
	for (const t of TARGET_IDS) push(latencyLine(t, results.setup[t], results.setup.floor, true));
	push(
		"",
		"Requests the upstream received per session (setup, the SDK client's GET stream, and the DELETE that ends it),",
		"from the upstream's own log:",
		"",
		"| Target | sessions | upstream requests per session | of which |",
		"| --- | ---: | ---: | --- |",
	);
	for (const t of TARGET_IDS) {
		const u = results.setupUpstream[t];
		const kinds = Object.entries(u.byKind)
			.sort((a, b) => b[1] - a[1])
			.map(([kind, count]) => `${kind} ${(count / Math.max(1, u.sessions)).toFixed(2)}`)
			.join(", ");
		push(
			`| ${TARGET_LABELS[t]} | ${u.sessions} | ${(u.requests / Math.max(1, u.sessions)).toFixed(2)} | ${kinds || "–"} |`,
		);
	}
	const undeleted = TARGET_IDS.filter(
		(t) => (results.setupUpstream[t].byKind.DELETE ?? 0) < results.setupUpstream[t].sessions,
	);
	if (undeleted.length > 0) {
		push(
			"",
			`Fewer upstream DELETEs than sessions (${undeleted.map((t) => TARGET_LABELS[t]).join(", ")}): 200 ms after the client's`,
			"DELETE and close, those upstream sessions were still open.",
		);
	}
	push(
		"",
		`### ${m.blobKib} KiB result (\`blob {kib: ${m.blobKib}}\`), ms`,
		"",
		"| Target | calls | p50 | p95 | p99 | mean | p50 − floor | p99 − floor |",
		"| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
	);
	for (const t of TARGET_IDS) push(latencyLine(t, results.blob[t], results.blob.floor, true));
	push(
		"",
		`### Progress streaming (\`${progressLabel}\`), ms`,
		"",
		"Time to the first `notifications/progress` event, and to the result. A relay that buffered the reply would",
		"deliver the first event only at the end.",
		"",
		"| Target | calls | first event p50 | first event p95 | complete p50 | complete p95 |",
		"| --- | ---: | ---: | ---: | ---: | ---: |",
	);
	for (const t of TARGET_IDS) {
		const first = results.progressFirst[t];
		const total = results.progressTotal[t];
		push(
			`| ${TARGET_LABELS[t]} | ${first.length} | ${ms(percentile(first, 50))} | ${ms(percentile(first, 95))} | ${ms(percentile(total, 50))} | ${ms(percentile(total, 95))} |`,
		);
	}

	push(...modernSection(results.modern, m));
	push(
		"## Gateway costs (its own counters)",
		"",
		"From `GET /admin/session-stats` (one session's storage operations, registry rechecks, their Workers KV reads and",
		"upstream requests) and `GET /admin/registry-stats` (requests the registry Durable Object served, from any source:",
		"keys, endpoints and rechecks come from KV, so in steady state none). Per 1,000 calls, and per session-hour.",
		"",
		"- **busy session**: a fresh session, counters read after its setup and again after the given number of `echo` calls",
		"  at concurrency 16 (in a full run, for at least 12 s, so that the window crosses an expiry of the edge's key cache).",
		"- **long-lived session**: the session used for the c=1 latency, one-session throughput, blob and progress",
		"  measurements, over the whole run (counters read after its setup and at the end, and every 3 s between, which",
		"  keeps its Durable Object from being evicted while other targets are measured: an evicted object's counters",
		"  start again from 0); its registry requests are those of the whole run, every session and setup included.",
		"",
		`Settings: touch interval ${m.touchIntervalS} s, recheck interval ${m.recheckIntervalS} s, edge key cache ${m.keyCacheTtlS} s (defaults of wrangler.toml).`,
		"",
		"| Window | Endpoint | calls | elapsed | storage writes | event-buffer writes | storage reads | registry rechecks | KV reads | RegistryDO requests, all sources | upstream requests |",
		"| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
	);
	for (const { name: windowName, endpoint, w } of costWindows(results)) {
		const all = w.registryReadsAll === null ? "n/a" : `${w.registryReadsAll} (${per1000(w.registryReadsAll, w.calls)})`;
		push(
			`| ${windowName} | ${TARGET_LABELS[endpoint]} | ${w.calls.toLocaleString("en-US")} | ${seconds(w.elapsedMs)} | ${w.storageWrites} (${per1000(w.storageWrites, w.calls)}) | ${w.eventBufferWrites} (${per1000(w.eventBufferWrites, w.calls)}) | ${w.storageReads} (${per1000(w.storageReads, w.calls)}) | ${w.sessionRegistryReads} (${per1000(w.sessionRegistryReads, w.calls)}) | ${w.kvReads} (${per1000(w.kvReads, w.calls)}) | ${all} | ${w.upstreamRequests} (${per1000(w.upstreamRequests, w.calls)}) |`,
		);
	}
	push(
		"",
		"Cells show the count in the window, then (in parentheses) per 1,000 calls. Storage writes are the binding's",
		"and the alarm's; event-buffer writes are the events of aggregate replies kept for resumption (each forwarded",
		"call's stream, and the pruning of old events), which transparent replies do not need (the upstream keeps its own).",
		"",
	);
	push(
		"Per session-hour, long-lived session (the window's counts scaled to one hour):",
		"",
		"| Endpoint | registry rechecks / h | KV reads / h | RegistryDO requests / h (whole run) |",
		"| --- | ---: | ---: | ---: |",
	);
	for (const endpoint of ["server", "aggregate"] as const) {
		const w = results.costs.longRun[endpoint];
		const hours = w.elapsedMs / 3_600_000;
		const perHour = (count: number | null) => (count === null || hours <= 0 ? "n/a" : (count / hours).toFixed(1));
		push(
			`| ${TARGET_LABELS[endpoint]} | ${perHour(w.sessionRegistryReads)} | ${perHour(w.kvReads)} | ${perHour(w.registryReadsAll)} |`,
		);
	}
	push("");

	push(...idleSection(results));
	push(...stagesSection(results));

	push("## Bundle", "");
	const bundle = results.bundle;
	if ("error" in bundle) {
		push(`\`wrangler deploy --dry-run\` failed: ${bundle.error}`, "");
	} else {
		push(
			"`wrangler deploy --dry-run --outdir <tmp>`, the output modules gzipped (level 9), against Workers' limits on the",
			"compressed size (3 MB on the free plan, 10 MB on paid).",
			"",
			"| Modules | Size | Gzip | of 3 MB (free) | of 10 MB (paid) |",
			"| --- | ---: | ---: | ---: | ---: |",
			`| ${bundle.files.join(", ")} | ${kib(bundle.rawBytes)} | ${kib(bundle.gzipBytes)} | ${((bundle.gzipBytes / 3_000_000) * 100).toFixed(1)} % | ${((bundle.gzipBytes / 10_000_000) * 100).toFixed(1)} % |`,
			"",
		);
		if (bundle.wranglerSummary) push(`Wrangler's own summary: \`${bundle.wranglerSummary}\`.`, "");
	}

	push("## Targets", "", "Reported against, not asserted.", "", "| Target | Figure | Status |", "| --- | --- | --- |");
	for (const target of evaluateTargets(results)) push(`| ${target.target} | ${target.figure} | ${target.status} |`);
	push("");

	if (results.warnings.length > 0) {
		push("## Warnings", "");
		for (const warning of results.warnings) push(`- ${warning}`);
		push("");
	}

	push(
		"## Method",
		"",
		"- One run, one machine: the upstream (`scripts/bench/upstream.ts`, the `startUpstream` fixture) in its own Node",
		"  process; the gateway and the floor each built with `wrangler deploy --dry-run` and run from that bundle under",
		"  their own `wrangler dev --no-bundle` (workerd) on free loopback ports, so sources edited during a run change",
		"  nothing; temporary `--persist-to` state; generated `ADMIN_TOKEN`/`SESSION_SECRET` passed by `--env-file`; the",
		"  SDK clients in the benchmark process. The gateway gets the upstream registered as `bench` and a fresh API key",
		"  for it alone (so `/mcp` aggregates that one server), and the SDK v2 upstream as `bench-modern` with a key of its own.",
		"- Every measurement is interleaved: each round runs every scenario against every target, in an order rotated",
		"  each round, so all targets see the same machine noise. Warm-up calls and sessions come first and are not counted.",
		`- Latency: \`performance.now()\` around each SDK call. Percentiles are nearest-rank over all rounds' samples.`,
		`- Throughput: for a fixed time per round and target, workers loop on \`echo\`; calls/s = calls ÷ elapsed over all rounds.`,
		"- Session setup: a new SDK client per sample, `connect()` (initialize + notifications/initialized) then",
		"  `listTools()`; the session is deleted (DELETE) afterwards, outside the timing. The SDK client also opens its",
		"  GET stream after `initialized`, as it does for users.",
		"- The floor keys its Durable Object by the `Mcp-Session-Id` header (a fixed one for initialize) and forwards",
		"  method, headers and body unchanged; the upstream's session id passes through.",
		"- The 2026-07-28 measurements: the Worker-only floor (`scripts/bench/floor-stateless/`) built and run as the floor is;",
		"  the SDK v2 upstream in its own Node process; raw `fetch` clients in the benchmark process. The gateway runs",
		"  behind a generated entry module that counts its Durable Object requests (`scripts/bench/durable-object-counter.ts`):",
		"  a proxy on each namespace binding of its `env`, a property lookup and a closure per object call, for every target.",
		"- Request logging of `wrangler dev` is on for the floors and the gateway, as users run it.",
		"",
	);
	return lines.join("\n");
}

/** Durable Object methods the benchmark calls to read counters (admin session-stats and registry-stats). */
const COUNTER_READS = new Set(["SessionDO.stats", "RegistryDO.readCount"]);

/**
 * Durable Object requests no call of the window makes: the edge ending and
 * reopening the listening windows of the other targets' 2025 sessions (their
 * SDK clients hold GET streams), and alarms.
 */
function isOtherSessionsOwn(name: string): boolean {
	return name.startsWith("SessionDO.listen") || name.endsWith(".alarm");
}

function sumOf(counts: Record<string, number>, which: (name: string) => boolean): number {
	return Object.entries(counts).reduce((sum, [name, count]) => (which(name) ? sum + count : sum), 0);
}

/** Durable Object requests of a window that neither the benchmark's reads nor other sessions account for. */
export function pathObjectRequests(counts: Record<string, number>): number {
	return sumOf(counts, (name) => !COUNTER_READS.has(name) && !isOtherSessionsOwn(name));
}

function countList(counts: Record<string, number>, perCall?: number): string {
	const entries = Object.entries(counts).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
	if (entries.length === 0) return "–";
	return entries.map(([name, count]) => `${name} ${perCall ? (count / perCall).toFixed(2) : count}`).join(", ");
}

/** The 2026-07-28 stateless path against its floor, the upstream and the 2025 path through a SessionDO. */
function modernSection(modern: ModernResults, m: BenchResults["meta"]): string[] {
	const p = (t: ModernTargetId, q: number) => percentile(modern.latency[t], q);
	const sameEraDirect = (t: ModernTargetId): ModernTargetId =>
		t === "legacyGateway" || t === "legacyDirect" ? "legacyDirect" : "modernDirect";
	const lines = [
		"",
		"## 2026-07-28: the stateless path",
		"",
		"A 2026-07-28 request to `/mcp/:server` whose upstream speaks 2026-07-28 is forwarded by the edge Worker on its",
		"own: credentials swapped, body untouched, the answer streamed back, no Durable Object. Measured against an SDK",
		'v2 upstream (`McpServer` behind `createMcpHandler` with `legacy: "stateless"`, `scripts/bench/modern-upstream.ts`)',
		"that serves both eras from one definition with the same `echo` tool, so both eras call the same tool on the",
		"same server. Every client is the same raw `fetch` code (`scripts/bench/modern.ts`): a 2026-07-28 call carries",
		"the envelope in `params._meta` and the `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers, with no",
		"initialize and no session id; a 2025-11-25 call goes over a session opened once (initialize, `Mcp-Session-Id`).",
		"",
		"- **2026-07-28 direct**: client → upstream.",
		"- **2026-07-28 via the Worker-only floor**: client → the thinnest Worker that forwards the request with `fetch`",
		"  and streams the answer back (`scripts/bench/floor-stateless/`), no Durable Object: what the runtime costs this path.",
		"- **2026-07-28 via the gateway (stateless)**: client → `/mcp/bench-modern` (API key). The server is registered",
		`  with ${modern.protocol}.`,
		"- **2025-11-25 via the gateway (SessionDO)**: the same call over a 2025 session: edge → SessionDO → upstream,",
		"  in the era the session picks for that server (what the upstream received shows which, below).",
		"- **2025-11-25 direct**: the same 2025 call to the upstream (its stateless 2025 service; it answers 2025 calls",
		"  with SSE, 2026-07-28 calls with JSON).",
		"",
		"Concurrency 1, one call at a time, interleaved with the rest of each round (right after the 2025 latency",
		"measurements above), the five targets in an order rotated each round. Latency in ms. The edge keeps API keys",
		`for ${m.keyCacheTtlS} s and ${m.endpointCacheTtlS === null ? "does not keep endpoint records (a KV read per 2026-07-28 request)" : `endpoint records for ${m.endpointCacheTtlS} s`} in isolate memory (wrangler.toml).`,
		"",
		"| Target | calls | p50 | p90 | p99 | mean | p50 − Worker-only floor | p50 − direct, same era |",
		"| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
	];
	for (const t of MODERN_TARGET_IDS) {
		const samples = modern.latency[t];
		const overFloor = t === "statelessFloor" ? "" : signedMs(p(t, 50) - p("statelessFloor", 50));
		const overDirect = t === sameEraDirect(t) ? "" : signedMs(p(t, 50) - p(sameEraDirect(t), 50));
		lines.push(
			`| ${MODERN_TARGET_LABELS[t]} | ${samples.length} | ${ms(p(t, 50))} | ${ms(p(t, 90))} | ${ms(p(t, 99))} | ${ms(mean(samples))} | ${overFloor} | ${overDirect} |`,
		);
	}
	const delta = (q: number) => p("stateless", q) - p("statelessFloor", q);
	lines.push(
		"",
		`**Stateless path − Worker-only floor: ${signedMs(delta(50))} ms at p50** (${ratio(p("stateless", 50) / p("statelessFloor", 50))}` +
			` the floor's p50; ${signedMs(delta(90))} ms at p90, ${signedMs(delta(99))} ms at p99). Goal: within 1 ms at p50.` +
			` Stateless path − the 2025 path through a SessionDO to the same upstream: ${signedMs(p("stateless", 50) - p("legacyGateway", 50))} ms at p50.`,
		"",
		"What the upstream received during each target's calls (its own counts, by era and method), per call:",
		"",
		"| Target | calls | upstream requests per call | of which, per call |",
		"| --- | ---: | ---: | --- |",
	);
	for (const t of MODERN_TARGET_IDS) {
		const calls = modern.latency[t].length;
		const received = modern.upstreamRequests[t];
		const total = sumOf(received, () => true);
		lines.push(
			`| ${MODERN_TARGET_LABELS[t]} | ${calls} | ${calls > 0 ? (total / calls).toFixed(2) : "n/a"} | ${countList(received, calls)} |`,
		);
	}
	lines.push(
		"",
		"The gateway's Durable Object requests during each target's calls: every call made on a Durable Object stub",
		"(RPC or `fetch`) by the edge Worker or an object, and every alarm, counted by a wrapper around the built",
		"gateway (`scripts/bench/durable-object-counter.ts`; `session-stats` answers for one 2025 session only, and a",
		"2026-07-28 request has none). Some requests in any window are not the calls': the benchmark's own counter",
		"reads (`SessionDO.stats`, `RegistryDO.readCount`) and what the other targets' open 2025 sessions do on their",
		"own (the edge ending and reopening their listening windows, `SessionDO.listen*`; alarms). The windows of the",
		"targets that do not go through the gateway show that background.",
		"",
		"| Target | calls | DO requests of the calls | benchmark's counter reads | other sessions' own | all, by class and method |",
		"| --- | ---: | ---: | ---: | ---: | --- |",
	);
	for (const t of MODERN_TARGET_IDS) {
		const counts = modern.durableObjectRequests[t];
		lines.push(
			`| ${MODERN_TARGET_LABELS[t]} | ${modern.latency[t].length} | ${pathObjectRequests(counts)} | ${sumOf(counts, (name) => COUNTER_READS.has(name))} | ${sumOf(counts, isOtherSessionsOwn)} | ${countList(counts)} |`,
		);
	}
	lines.push("");
	return lines;
}

/** How long a client that only listens keeps its session's Durable Object active. */
function idleSection(results: BenchResults): string[] {
	const lines = [
		"## Idle listener",
		"",
		"Cloudflare bills a Durable Object's wall time while it is active: while a request to it is being handled,",
		"including while a streamed body it returned is still open, and while it waits on its own outgoing requests.",
		`Here a client opens a session (raw HTTP), opens its GET stream, only listens for ${seconds(results.idle.server.listenedMs)}`,
		"(resuming with its last event id whenever the gateway ends a listening window) and closes it; nothing else is sent in the session. From `activeMs` of `GET /admin/session-stats`, read before the",
		"GET and right after the close, scaled to one idle session-minute; both endpoints at once, alongside the busy sessions.",
		"",
		`Goal: < ${seconds(IDLE_GOAL_MS_PER_MINUTE, 0)} of Durable Object active time per idle session-minute.`,
		"Before the edge Worker carried listening streams, the object held them: the same measurement gave 59.9 to",
		"60.0 s per idle minute on both endpoints (see benchmarks-history.md). Now the object plans each listening",
		"window (at most the time to the next recheck) and is called only when a member has something to say.",
		"",
		"| Endpoint | listened | windows | DO active | DO active per idle session-minute | goal | active after the close |",
		"| --- | ---: | ---: | ---: | ---: | --- | --- |",
	];
	for (const endpoint of ["server", "aggregate"] as const) {
		const w = results.idle[endpoint];
		lines.push(
			`| ${TARGET_LABELS[endpoint]} | ${seconds(w.listenedMs)} | ${w.windows} | ${seconds(w.activeMs, 2)} | ${seconds(activeMsPerIdleMinute(w), 2)} | ${idleStatus(w)} | ${w.activeAfterClose ? "**yes**" : "no"} |`,
		);
	}
	if (Object.values(results.idle).some((w) => w.activeAfterClose)) {
		lines.push(
			"",
			"*Active after the close*: a moment after its client had closed the stream the object was still active: the",
			"close had not reached it (under `wrangler dev` a client's close is not always passed on, and a transparent",
			"relay learns of it only when the upstream next writes on the stream). The session's DELETE ended it.",
		);
	}
	lines.push("");
	return lines;
}

/** The goal for an idle listener: less Durable Object active time than this per idle session-minute. */
const IDLE_GOAL_MS_PER_MINUTE = 1_000;

/** Active time of the session's Durable Object per minute its client only listened. */
function activeMsPerIdleMinute(w: IdleWindow): number {
	return w.listenedMs > 0 ? (w.activeMs * 60_000) / w.listenedMs : Number.NaN;
}

function idleStatus(w: IdleWindow): string {
	return activeMsPerIdleMinute(w) < IDLE_GOAL_MS_PER_MINUTE ? MET : NOT_MET;
}

/** The per-stage microbenchmark of one request's plain code (scripts/bench/stages.ts). */
function stagesSection(results: BenchResults): string[] {
	const stages = results.stages;
	const lines = [
		"## Per-stage cost of one request (Node microbenchmark)",
		"",
		"`scripts/bench/stages.ts` (on its own: `node scripts/bench/stages.ts`) times the plain code the edge Worker and the",
		"SessionDO run for one `tools/call echo` through `/mcp/:server` with a one-event SSE reply: the gateway's own",
		"functions, bundled from src/ with esbuild, each run many times in Node after a warm-up, before the servers start.",
		"Per operation, in µs; *per call*: how many times one such call runs it (– : not on that path).",
		"",
		"It does not cover the Durable Object RPC (with the reply stream crossing back to the edge) or the runtime's own",
		"work (HTTP parsing, the hops between workerd processes, wrangler's logging): only the end-to-end gateway − floor",
		"difference above shows those; nor the rate-limiter binding, which under `wrangler dev` is a simulated service.",
		"Node is not workerd: Node runs WebCrypto on its thread pool where workerd computes it in the calling thread, so",
		"the WebCrypto stages are measured again with a synchronous WebCrypto; web streams, `Request` and `Headers` are",
		"JavaScript in Node, C++ in workerd.",
		"",
	];
	if ("error" in stages) return [...lines, `The microbenchmark failed: ${stages.error}`, ""];
	const delta = percentile(results.latency.server, 50) - percentile(results.latency.floor, 50);
	lines.push(
		`Plain code of one call (Σ mean × per call): **${formatUs(perCallTotalUs(stages))} µs** (edge ${formatUs(perCallTotalUs(stages, "edge"))},` +
			` SessionDO ${formatUs(perCallTotalUs(stages, "session"))}); with WebCrypto computed synchronously, as workerd does:` +
			` **${formatUs(workerdEstimateUs(stages))} µs**. The gateway's p50 difference to the floor in this run: ${signedMs(delta)} ms.`,
		"",
		"| Stage | Code | per call | iterations | mean | p50 | p99 |",
		"| --- | --- | ---: | ---: | ---: | ---: | ---: |",
	);
	let section: StageSection | undefined;
	for (const r of stages) {
		if (r.section !== section) {
			section = r.section;
			lines.push(`| *${SECTION_LABELS[section]}* | | | | | | |`);
		}
		lines.push(
			`| ${r.name} | ${r.code} | ${r.perCall > 0 ? `${r.perCall}×` : "–"} | ${r.iterations.toLocaleString("en-US")} | ${formatUs(r.meanUs)} | ${formatUs(r.p50Us)} | ${formatUs(r.p99Us)} |`,
		);
	}
	lines.push(
		"",
		"Cheap operations are timed in batches (at least 10 µs per sample): their p50 and p99 are over batches.",
		"",
	);
	return lines;
}

function serverCpuPerCall(use: CpuUse): number {
	return use.calls > 0 ? (use.upstreamMs + use.runtimeMs) / use.calls : Number.NaN;
}

function endpointName(endpoint: GatewayEndpoint): string {
	return endpoint === "server" ? "/mcp/:server" : "/mcp";
}

function ratioRow(label: string, value: (t: TargetId) => number): string {
	return `| ${label} | ${ratio(value("server") / value("direct"))} | ${ratio(value("server") / value("floor"))} | ${ratio(value("aggregate") / value("direct"))} | ${ratio(value("aggregate") / value("floor"))} |`;
}

function latencyLine(t: TargetId, samples: number[], floor: number[], withDelta: boolean): string {
	const delta = (p: number) =>
		withDelta && t !== "floor" ? signedMs(percentile(samples, p) - percentile(floor, p)) : "";
	return `| ${TARGET_LABELS[t]} | ${samples.length} | ${ms(percentile(samples, 50))} | ${ms(percentile(samples, 95))} | ${ms(percentile(samples, 99))} | ${ms(mean(samples))} | ${delta(50)} | ${delta(99)} |`;
}

interface TargetStatus {
	target: string;
	figure: string;
	status: string;
}

const MET = "met";
const NOT_MET = "**not met**";

/** Where each target of the benchmark issue stands in this run. */
export function evaluateTargets(results: BenchResults): TargetStatus[] {
	const m = results.meta;
	const out: TargetStatus[] = [];
	const p = <T extends string>(samples: Record<T, number[]>, t: T, q: number) => percentile(samples[t], q);

	const p50Delta = p(results.latency, "server", 50) - p(results.latency, "floor", 50);
	out.push({
		target: "tools/call p50 through /mcp/:server within 1 ms of the floor",
		figure: `${ms(p(results.latency, "server", 50))} ms vs ${ms(p(results.latency, "floor", 50))} ms (${signedMs(p50Delta)} ms)`,
		status: p50Delta <= 1 ? MET : NOT_MET,
	});
	const p99Delta = p(results.latency, "server", 99) - p(results.latency, "floor", 99);
	out.push({
		target: "tools/call p99 through /mcp/:server within 3 ms of the floor",
		figure: `${ms(p(results.latency, "server", 99))} ms vs ${ms(p(results.latency, "floor", 99))} ms (${signedMs(p99Delta)} ms)`,
		status: p99Delta <= 3 ? MET : NOT_MET,
	});
	const modern = results.modern;
	const statelessDelta = p(modern.latency, "stateless", 50) - p(modern.latency, "statelessFloor", 50);
	out.push({
		target: "2026-07-28 tools/call p50 through the stateless path within 1 ms of the Worker-only floor",
		figure: `${ms(p(modern.latency, "stateless", 50))} ms vs ${ms(p(modern.latency, "statelessFloor", 50))} ms (${signedMs(statelessDelta)} ms)`,
		status: statelessDelta <= 1 ? MET : NOT_MET,
	});
	const statelessObjects = pathObjectRequests(modern.durableObjectRequests.stateless);
	out.push({
		target: "Durable Object requests of 2026-07-28 calls on the stateless path: 0",
		figure: `${statelessObjects} in ${modern.latency.stateless.length} calls (all requests in those windows: ${countList(modern.durableObjectRequests.stateless)})`,
		status: statelessObjects === 0 ? MET : NOT_MET,
	});
	for (const cell of results.throughput.filter((c) => c.concurrency >= 16)) {
		for (const endpoint of ["server", "aggregate"] as const) {
			const r = rate(cell.results[endpoint]) / rate(cell.results.floor);
			out.push({
				target: `throughput ${cellLabel(cell)} through ${endpointName(endpoint)} ≥ 0.8× the floor`,
				figure: `${perSecond(rate(cell.results[endpoint]))} vs ${perSecond(rate(cell.results.floor))} calls/s (${ratio(r)})`,
				status: r >= 0.8 ? MET : NOT_MET,
			});
		}
	}
	for (const endpoint of ["server", "aggregate"] as const) {
		const r = p(results.setup, endpoint, 50) / p(results.setup, "floor", 50);
		out.push({
			target: `session setup through ${endpointName(endpoint)} ≤ 1.5× the floor (p50)`,
			figure: `${ms(p(results.setup, endpoint, 50))} ms vs ${ms(p(results.setup, "floor", 50))} ms (${ratio(r)})`,
			status: r <= 1.5 ? MET : NOT_MET,
		});
	}
	for (const { name, endpoint, w } of costWindows(results)) {
		const allowed = allowance(w.elapsedMs, m.touchIntervalS);
		out.push({
			target: `storage writes, ${name} (${endpointName(endpoint)}): ≤ 1 per touch interval (${m.touchIntervalS} s) elapsed`,
			figure: `${w.storageWrites} writes in ${seconds(w.elapsedMs)} and ${w.calls.toLocaleString("en-US")} calls (${per1000(w.storageWrites, w.calls)} per 1,000); allowed ${allowed}`,
			status: w.storageWrites <= allowed ? MET : NOT_MET,
		});
	}
	for (const { name, endpoint, w } of costWindows(results)) {
		const allowed = allowance(w.elapsedMs, m.recheckIntervalS);
		out.push({
			target: `registry reads, ${name} (${endpointName(endpoint)}): its rechecks ≤ 1 per recheck interval (${m.recheckIntervalS} s)`,
			figure: `${w.sessionRegistryReads} rechecks in ${seconds(w.elapsedMs)} and ${w.calls.toLocaleString("en-US")} calls (${per1000(w.sessionRegistryReads, w.calls)} per 1,000); allowed ${allowed}`,
			status: w.sessionRegistryReads <= allowed ? MET : NOT_MET,
		});
	}
	for (const { name, endpoint, w } of costWindows(results)) {
		if (w.registryReadsAll === null) continue;
		out.push({
			target: `RegistryDO requests in steady state, ${name} (${endpointName(endpoint)}): 0 (only admin writes reach it)`,
			figure: `${w.registryReadsAll} requests in ${seconds(w.elapsedMs)} and ${w.calls.toLocaleString("en-US")} calls (${per1000(w.registryReadsAll, w.calls)} per 1,000)`,
			status: w.registryReadsAll === 0 ? MET : NOT_MET,
		});
	}
	for (const endpoint of ["server", "aggregate"] as const) {
		const w = results.costs.longRun[endpoint];
		// Two KV reads per recheck (the key record, the endpoint record or the server list).
		const allowed = 2 * allowance(w.elapsedMs, m.recheckIntervalS);
		out.push({
			target: `KV reads, long-lived session (${endpointName(endpoint)}): ≤ 2 per recheck interval (${m.recheckIntervalS} s)`,
			figure: `${w.kvReads} reads in ${seconds(w.elapsedMs)} (${((w.kvReads / w.elapsedMs) * 3_600_000).toFixed(1)} per session-hour); allowed ${allowed}`,
			status: w.kvReads <= allowed ? MET : NOT_MET,
		});
	}
	for (const endpoint of ["server", "aggregate"] as const) {
		const w = results.idle[endpoint];
		out.push({
			target: `Durable Object active time of an idle listener (${endpointName(endpoint)}): < ${seconds(IDLE_GOAL_MS_PER_MINUTE, 0)} per idle session-minute`,
			figure: `${seconds(activeMsPerIdleMinute(w), 2)} per minute (${seconds(w.activeMs, 2)} active while listening ${seconds(w.listenedMs)})`,
			status: idleStatus(w),
		});
	}
	const bundle = results.bundle;
	if ("error" in bundle) {
		out.push({ target: "bundle well under 3 MB gzip", figure: `not measured: ${bundle.error}`, status: NOT_MET });
	} else {
		const share = bundle.gzipBytes / 3_000_000;
		out.push({
			target: "bundle well under 3 MB gzip",
			figure: `${kib(bundle.gzipBytes)} gzip (${(share * 100).toFixed(1)} % of 3 MB; "well under" taken as at most half)`,
			status: share <= 0.5 ? MET : NOT_MET,
		});
	}
	return out;
}

interface Panel {
	title: string;
	samples: Record<TargetId, number[]>;
}

/** A hand-made SVG: per scenario, the cumulative distribution of latencies of each target. */
export function renderSvg(results: BenchResults): string {
	const panels: Panel[] = [
		{ title: "tools/call echo, concurrency 1", samples: results.latency },
		{ title: `${results.meta.blobKib} KiB result, concurrency 1`, samples: results.blob },
		{ title: "session setup (initialize … first tools/list)", samples: results.setup },
	];
	const panelWidth = 360;
	const margin = { left: 48, right: 20 };
	const y0 = 96;
	const h = 210;
	const width = panels.length * panelWidth;
	const height = y0 + h + 48;
	const parts: string[] = [];
	parts.push(
		`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif" font-size="11">`,
		"<title>Latency distributions of tools/call: direct, floor and gateway</title>",
		`<rect width="${width}" height="${height}" fill="#ffffff"/>`,
		`<text x="12" y="22" font-size="14" font-weight="600" fill="#111827">Latency distributions (cumulative): direct vs floor vs gateway</text>`,
		`<text x="12" y="40" fill="#4b5563">${escapeXml(`${results.meta.date}, ${results.meta.cores} cores, Node ${results.meta.node}, wrangler ${results.meta.wrangler}${results.quick ? " — quick mode, small samples" : ""}. Right edge of each panel: 1.1 × the largest p99 (the slowest 1 % run off it).`)}</text>`,
	);
	let legendX = 12;
	for (const t of TARGET_IDS) {
		parts.push(
			`<line x1="${legendX}" y1="58" x2="${legendX + 20}" y2="58" stroke="${COLORS[t]}" stroke-width="3"/>`,
			`<text x="${legendX + 26}" y="62" fill="#111827">${escapeXml(TARGET_LABELS[t])}</text>`,
		);
		legendX += 46 + TARGET_LABELS[t].length * 6.5;
	}
	panels.forEach((panel, index) => {
		const x0 = index * panelWidth + margin.left;
		const w = panelWidth - margin.left - margin.right;
		const p99 = Math.max(0, ...TARGET_IDS.map((t) => percentile(panel.samples[t], 99)).filter(Number.isFinite));
		const step = niceStep(Math.max(p99 * 1.1, 0.001) / 4);
		const xMax = Math.ceil((p99 * 1.1) / step) * step || step * 4;
		const sx = (value: number) => x0 + (Math.min(value, xMax) / xMax) * w;
		const sy = (fraction: number) => y0 + h - fraction * h;
		parts.push(
			`<text x="${x0}" y="${y0 - 10}" font-size="12" font-weight="600" fill="#111827">${escapeXml(panel.title)}</text>`,
		);
		for (const q of [0, 0.25, 0.5, 0.75, 0.9, 1]) {
			parts.push(
				`<line x1="${x0}" y1="${sy(q).toFixed(1)}" x2="${x0 + w}" y2="${sy(q).toFixed(1)}" stroke="#e5e7eb"/>`,
				`<text x="${x0 - 6}" y="${(sy(q) + 4).toFixed(1)}" text-anchor="end" fill="#6b7280">p${Math.round(q * 100)}</text>`,
			);
		}
		for (let value = 0; value <= xMax + step / 2; value += step) {
			const x = sx(value);
			parts.push(
				`<line x1="${x.toFixed(1)}" y1="${y0}" x2="${x.toFixed(1)}" y2="${y0 + h}" stroke="#f3f4f6"/>`,
				`<text x="${x.toFixed(1)}" y="${y0 + h + 15}" text-anchor="middle" fill="#6b7280">${formatTick(value)}</text>`,
			);
		}
		parts.push(
			`<rect x="${x0}" y="${y0}" width="${w}" height="${h}" fill="none" stroke="#9ca3af"/>`,
			`<text x="${x0 + w / 2}" y="${y0 + h + 32}" text-anchor="middle" fill="#374151">latency, ms</text>`,
		);
		for (const t of TARGET_IDS) {
			const sorted = [...panel.samples[t]].sort((a, b) => a - b);
			if (sorted.length === 0) continue;
			const stride = Math.max(1, Math.floor(sorted.length / 400));
			const points: string[] = [`${sx(sorted[0] ?? 0).toFixed(1)},${sy(0).toFixed(1)}`];
			for (let i = 0; i < sorted.length; i += stride) {
				points.push(`${sx(sorted[i] ?? 0).toFixed(1)},${sy((i + 1) / sorted.length).toFixed(1)}`);
			}
			points.push(`${sx(sorted[sorted.length - 1] ?? 0).toFixed(1)},${sy(1).toFixed(1)}`);
			parts.push(
				`<polyline fill="none" stroke="${COLORS[t]}" stroke-width="2" stroke-linejoin="round" points="${points.join(" ")}"/>`,
			);
		}
	});
	parts.push("</svg>", "");
	return parts.join("\n");
}

/** 1, 2, 2.5 or 5 times a power of ten, at least `value`. */
function niceStep(value: number): number {
	const magnitude = 10 ** Math.floor(Math.log10(value));
	for (const factor of [1, 2, 2.5, 5, 10]) {
		if (factor * magnitude >= value) return factor * magnitude;
	}
	return 10 * magnitude;
}

function formatTick(value: number): string {
	return Number(value.toPrecision(6)).toString();
}

function escapeXml(text: string): string {
	return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}
