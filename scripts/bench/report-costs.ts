/**
 * The report's sections on what sessions cost the gateway, from its own
 * counters: the busy and long-lived sessions' windows, and the idle listener.
 */

import { MET, NOT_MET, per1000, seconds } from "./report-format.ts";
import { type BenchResults, costWindows, type IdleWindow, TARGET_LABELS } from "./results.ts";

/** Storage, registry, KV and upstream requests per window, per 1,000 calls and per session-hour. */
export function costsSection(results: BenchResults): string[] {
	const m = results.meta;
	const lines = [
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
	];
	for (const { name: windowName, endpoint, w } of costWindows(results)) {
		const all = w.registryReadsAll === null ? "n/a" : `${w.registryReadsAll} (${per1000(w.registryReadsAll, w.calls)})`;
		lines.push(
			`| ${windowName} | ${TARGET_LABELS[endpoint]} | ${w.calls.toLocaleString("en-US")} | ${seconds(w.elapsedMs)} | ${w.storageWrites} (${per1000(w.storageWrites, w.calls)}) | ${w.eventBufferWrites} (${per1000(w.eventBufferWrites, w.calls)}) | ${w.storageReads} (${per1000(w.storageReads, w.calls)}) | ${w.sessionRegistryReads} (${per1000(w.sessionRegistryReads, w.calls)}) | ${w.kvReads} (${per1000(w.kvReads, w.calls)}) | ${all} | ${w.upstreamRequests} (${per1000(w.upstreamRequests, w.calls)}) |`,
		);
	}
	lines.push(
		"",
		"Cells show the count in the window, then (in parentheses) per 1,000 calls. Storage writes are the binding's",
		"and the alarm's; event-buffer writes are the events of aggregate replies kept for resumption (each forwarded",
		"call's stream, and the pruning of old events), which transparent replies do not need (the upstream keeps its own).",
		"",
		"Per session-hour, long-lived session (the window's counts scaled to one hour):",
		"",
		"| Endpoint | registry rechecks / h | KV reads / h | RegistryDO requests / h (whole run) |",
		"| --- | ---: | ---: | ---: |",
	);
	for (const endpoint of ["server", "aggregate"] as const) {
		const w = results.costs.longRun[endpoint];
		const hours = w.elapsedMs / 3_600_000;
		const perHour = (count: number | null) => (count === null || hours <= 0 ? "n/a" : (count / hours).toFixed(1));
		lines.push(
			`| ${TARGET_LABELS[endpoint]} | ${perHour(w.sessionRegistryReads)} | ${perHour(w.kvReads)} | ${perHour(w.registryReadsAll)} |`,
		);
	}
	lines.push("");
	return lines;
}

/** How long a client that only listens keeps its session's Durable Object active. */
export function idleSection(results: BenchResults): string[] {
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
export const IDLE_GOAL_MS_PER_MINUTE = 1_000;

/** Active time of the session's Durable Object per minute its client only listened. */
export function activeMsPerIdleMinute(w: IdleWindow): number {
	return w.listenedMs > 0 ? (w.activeMs * 60_000) / w.listenedMs : Number.NaN;
}

export function idleStatus(w: IdleWindow): string {
	return activeMsPerIdleMinute(w) < IDLE_GOAL_MS_PER_MINUTE ? MET : NOT_MET;
}
