/** The report's 2026-07-28 section: the stateless path against its floor, the upstream and the 2025 path. */

import { mean, ms, percentile, ratio, signedMs } from "./report-format.ts";
import {
	type BenchResults,
	MODERN_TARGET_IDS,
	MODERN_TARGET_LABELS,
	type ModernResults,
	type ModernTargetId,
} from "./results.ts";

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

/**
 * The dashboard's call counts: each edge isolate sends what it added up to the one
 * CallCountsDO after an answer, at most every CALL_COUNTS_FLUSH_SECONDS, whatever the
 * number of calls. Batched accounting, as telemetry export is, not a request of any call:
 * listed in the figure, not counted against the path.
 */
const BATCHED_ACCOUNTING = new Set(["CallCountsDO.add"]);

function sumOf(counts: Record<string, number>, which: (name: string) => boolean): number {
	return Object.entries(counts).reduce((sum, [name, count]) => (which(name) ? sum + count : sum), 0);
}

/** Durable Object requests of a window that neither the benchmark's reads nor other sessions account for. */
export function pathObjectRequests(counts: Record<string, number>): number {
	return sumOf(
		counts,
		(name) => !COUNTER_READS.has(name) && !isOtherSessionsOwn(name) && !BATCHED_ACCOUNTING.has(name),
	);
}

export function countList(counts: Record<string, number>, perCall?: number): string {
	const entries = Object.entries(counts).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
	if (entries.length === 0) return "–";
	return entries.map(([name, count]) => `${name} ${perCall ? (count / perCall).toFixed(2) : count}`).join(", ");
}

/** The 2026-07-28 stateless path against its floor, the upstream and the 2025 path through a SessionDO. */
export function modernSection(modern: ModernResults, m: BenchResults["meta"]): string[] {
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
		"The gateway's Durable Object requests during each target's calls: every RPC call made on a Durable Object stub",
		"by the edge Worker or an object, every `fetch` an object receives, and every alarm, counted by a wrapper around the built",
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
