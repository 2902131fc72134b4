/**
 * `npm run bench`: the gateway's cost against talking to the upstream
 * directly and against the thinnest Worker → Durable Object passthrough on the
 * same runtime (the floor, scripts/bench/floor/), in one run on one machine; and its
 * 2026-07-28 stateless path against a Worker-only passthrough
 * (scripts/bench/floor-stateless/), the same upstream directly, and the 2025 path
 * through a SessionDO, all against one SDK v2 upstream that speaks both eras.
 *
 * Builds the gateway and both floors (`wrangler deploy --dry-run`), starts the
 * SDK upstreams (scripts/bench/upstream.ts, scripts/bench/modern-upstream.ts)
 * and the bundles under `wrangler dev --no-bundle` (workerd) on free loopback
 * ports with temporary state and secrets (the gateway behind a module that
 * counts its Durable Object requests, scripts/bench/counting-entry.ts), then
 * measures interleaved rounds of: tools/call latency at concurrency 1 (2025
 * sessions through the SDK client, then both eras with raw `fetch`,
 * scripts/bench/modern.ts), throughput at several concurrencies over one
 * session and over many, session setup, a 64 KiB result and progress
 * streaming, then how long a client that only listens keeps its session's
 * Durable Object active. Reads the gateway's own counters (admin
 * session-stats, registry-stats), its Durable Object requests and the bundle
 * size, and writes docs/benchmarks.md and docs/benchmarks-latency.svg. Before
 * any server starts, it runs the per-stage microbenchmark of one request's
 * plain code (scripts/bench/stages.ts).
 *
 *   npm run bench              full run (a few minutes), writes docs/
 *   npm run bench -- --quick   smoke run (under a minute), report in a temp dir, docs/ untouched
 */

import { randomBytes } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { cpus, loadavg, platform, release, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { gzipSync } from "node:zlib";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import {
	type Child,
	delay,
	groupCpuMs,
	HOST,
	installShutdown,
	Processes,
	waitForLine,
	withTimeout,
} from "../processes.ts";
import { buildWorker, ROOT, startWranglerDev, wranglerEnv } from "../wrangler-dev.ts";
import { installCountingEntry } from "./counting-entry.ts";
import {
	addDifference,
	durableObjectRequests,
	LEGACY_VERSION,
	MODERN_VERSION,
	modernUpstreamCounts,
	RawClient,
	type RawTarget,
	resetModernUpstreamCounts,
} from "./modern.ts";
import {
	type BenchResults,
	type BundleResult,
	type CostWindow,
	type CpuUse,
	type GatewayEndpoint,
	type IdleWindow,
	MODERN_TARGET_IDS,
	type ModernResults,
	type ModernTargetId,
	percentile,
	rate,
	renderMarkdown,
	renderSvg,
	TARGET_IDS,
	TARGET_LABELS,
	type TargetId,
	type Throughput,
	type ThroughputCell,
	type UpstreamLog,
} from "./report.ts";
import { measureStages } from "./stages.ts";

/** Wrangler's environment, set once the run's temporary directory exists. */
let childEnv: NodeJS.ProcessEnv = process.env;
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
const QUICK = args.includes("--quick");

// The SDK client passes one long-lived AbortSignal to every fetch of a session, and undici
// releases each request's abort listener only when the request is garbage-collected: past
// 1,500 pending listeners Node prints a MaxListenersExceededWarning per call. Harmless (the
// same for every target) but it would bury the output, so it is counted instead.
let suppressedListenerWarnings = 0;
process.removeAllListeners("warning");
process.on("warning", (warning) => {
	if (warning.name === "MaxListenersExceededWarning") suppressedListenerWarnings++;
	else console.warn(`${warning.name}: ${warning.message}`);
});

/** Counts per round and target; durations in ms. */
const PLAN = QUICK
	? {
			rounds: 2,
			warmupCalls: 30,
			latencyCalls: 30,
			throughputMs: 100,
			setupSessions: 2,
			blobCalls: 4,
			progressCalls: 2,
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
			poolSize: 64,
			busyCalls: 1_000,
			// Long enough to cross at least one expiry of the edge's API-key cache (10 s).
			busyMinMs: 12_000,
			idleListenMs: 30_000,
			watchdogMs: 15 * 60_000,
		};
const CONCURRENCIES = [1, 16, 64];
/** Upper bound on the calls of one throughput measurement, whatever the machine's speed. */
const MAX_CALLS_PER_CELL = 200_000;
const BLOB_KIB = 64;
const PROGRESS_STEPS = 10;
const PROGRESS_DELAY_MS = 5;
const BUSY_CONCURRENCY = 16;
/** Any single MCP request of the benchmark. */
const CALL_TIMEOUT_MS = 30_000;
/** Sessions opened at once when filling the pools. */
const OPEN_PARALLELISM = 8;
/** How often the long-lived sessions' counters are read during the run (see `keepCounting`). */
const COUNTER_POLL_MS = 3_000;

/** How long after an idle listener's close its session's active time is looked at again. */
const AFTER_CLOSE_PROBE_MS = 300;

/** Quick runs never touch docs/: their report goes to a temporary directory. */
const OUT_DIR = QUICK ? join(tmpdir(), "mcp-edge-gateway-bench-quick") : join(ROOT, "docs");
/** The raw samples of the last run, for a closer look (never committed). */
const RAW_PATH = join(tmpdir(), `mcp-edge-gateway-bench-${QUICK ? "quick" : "full"}.json`);
const MD_NAME = "benchmarks.md";
const SVG_NAME = "benchmarks-latency.svg";

// ---------------------------------------------------------------------------------------------
// Processes, cleanup and signals

const procs = new Processes();
const openSessions = new Set<Session>();
/** Closes the benchmark's clients, then stops the gateway, the floor and the upstream (see installShutdown). */
const { shutdown, stopping } = installShutdown(procs, "bench", () => {
	for (const session of openSessions) {
		session.closing = true;
		void session.client.close().catch(() => undefined);
	}
	return undefined;
});

function describe(error: unknown): string {
	return error instanceof Error ? error.message : String(error);
}

function log(message: string): void {
	console.log(`bench: ${message}`);
}

// ---------------------------------------------------------------------------------------------
// Targets and sessions

interface Target {
	id: TargetId;
	url: string;
	headers?: Record<string, string>;
	/** The tool's name at this endpoint (the aggregate namespaces it). */
	tool(name: string): string;
}

interface Session {
	target: Target;
	client: Client;
	transport: StreamableHTTPClientTransport;
	/** Calls sent through this session since the last reset. */
	calls: number;
	closing: boolean;
}

/** Client-side errors outside a call (e.g. the GET stream breaking), by target and message. */
const clientErrors = new Map<string, { count: number; first: number; last: number }>();

const startedAt = performance.now();
function elapsedS(): string {
	return ((performance.now() - startedAt) / 1000).toFixed(0);
}

async function openSession(target: Target): Promise<Session> {
	const transport = new StreamableHTTPClientTransport(
		new URL(target.url),
		target.headers ? { requestInit: { headers: target.headers } } : undefined,
	);
	const client = new Client({ name: "mcp-edge-bench", version: "1.0.0" });
	const session: Session = { target, client, transport, calls: 0, closing: false };
	client.onerror = (error) => {
		if (session.closing || stopping()) return;
		const key = `${TARGET_LABELS[target.id]}: ${describe(error).slice(0, 160)}`;
		const now = Number(elapsedS());
		const seen = clientErrors.get(key) ?? { count: 0, first: now, last: now };
		clientErrors.set(key, { count: seen.count + 1, first: seen.first, last: now });
	};
	await client.connect(transport, { timeout: CALL_TIMEOUT_MS });
	openSessions.add(session);
	return session;
}

/** Ends a session: DELETE (when `terminate`), then the client closes its streams. */
async function closeSession(session: Session, terminate: boolean): Promise<void> {
	session.closing = true;
	openSessions.delete(session);
	if (terminate) {
		await withTimeout(session.transport.terminateSession(), CALL_TIMEOUT_MS, "DELETE of a session").catch(
			(error: unknown) => warn(`${TARGET_LABELS[session.target.id]}: ending a session failed: ${describe(error)}`),
		);
	}
	await session.client.close().catch(() => undefined);
}

const warnings: string[] = [];
function warn(message: string): void {
	if (warnings.length < 20 && !warnings.includes(message)) warnings.push(message);
	console.warn(`bench: warning: ${message}`);
}

function textOf(result: unknown): string {
	const content = (result as { content?: Array<{ type?: string; text?: string }> }).content;
	return content?.[0]?.type === "text" ? (content[0].text ?? "") : "";
}

function checkResult(session: Session, tool: string, result: unknown, ok: (text: string) => boolean): void {
	if ((result as { isError?: boolean }).isError || !ok(textOf(result))) {
		throw new Error(
			`${TARGET_LABELS[session.target.id]}: unexpected result of ${tool}: ${JSON.stringify(result).slice(0, 300)}`,
		);
	}
}

async function echo(session: Session): Promise<void> {
	const name = session.target.tool("echo");
	const result = await session.client.callTool({ name, arguments: { text: "bench" } }, undefined, {
		timeout: CALL_TIMEOUT_MS,
	});
	session.calls++;
	checkResult(session, name, result, (text) => text === "bench");
}

async function blob(session: Session): Promise<void> {
	const name = session.target.tool("blob");
	const result = await session.client.callTool({ name, arguments: { kib: BLOB_KIB } }, undefined, {
		timeout: CALL_TIMEOUT_MS,
	});
	session.calls++;
	checkResult(session, name, result, (text) => text.length === BLOB_KIB * 1024);
}

/** One progress call: ms to the first progress event and to the result. */
async function progress(session: Session): Promise<{ first: number; total: number }> {
	const name = session.target.tool("progress");
	let first = Number.NaN;
	let events = 0;
	const start = performance.now();
	const result = await session.client.callTool(
		{ name, arguments: { steps: PROGRESS_STEPS, delayMs: PROGRESS_DELAY_MS } },
		undefined,
		{
			timeout: CALL_TIMEOUT_MS,
			onprogress: () => {
				if (events++ === 0) first = performance.now() - start;
			},
		},
	);
	const total = performance.now() - start;
	session.calls++;
	checkResult(session, name, result, (text) => text.startsWith("done"));
	if (events !== PROGRESS_STEPS) {
		warn(`${TARGET_LABELS[session.target.id]}: ${events} of ${PROGRESS_STEPS} progress events arrived`);
	}
	return { first, total };
}

/** Session setup as a client sees it: initialize + initialized + first tools/list. */
async function setupOnce(target: Target): Promise<number> {
	const start = performance.now();
	const session = await openSession(target);
	const { tools } = await session.client.listTools(undefined, { timeout: CALL_TIMEOUT_MS });
	const elapsed = performance.now() - start;
	if (!tools.some((tool) => tool.name === target.tool("echo"))) {
		throw new Error(`${TARGET_LABELS[target.id]}: tools/list lacks ${target.tool("echo")}`);
	}
	await closeSession(session, true);
	return elapsed;
}

/** Workers loop on echo until the time is up (or the call bound is reached), spreading calls over the sessions. */
async function runThroughput(sessions: Session[], concurrency: number, durationMs: number): Promise<Throughput> {
	let issued = 0;
	let completed = 0;
	const start = performance.now();
	const end = start + durationMs;
	const worker = async () => {
		while (performance.now() < end && issued < MAX_CALLS_PER_CELL) {
			const session = sessions[issued++ % sessions.length];
			if (!session) throw new Error("no session to call");
			await echo(session);
			completed++;
		}
	};
	await Promise.all(Array.from({ length: concurrency }, worker));
	const ms = performance.now() - start;
	return { calls: completed, ms, perRound: [] };
}

async function mapBounded<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
	const results: R[] = new Array(items.length);
	let next = 0;
	const worker = async () => {
		while (next < items.length) {
			const index = next++;
			results[index] = await fn(items[index] as T);
		}
	};
	await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
	return results;
}

function byTarget<T>(make: () => T): Record<TargetId, T> {
	return { direct: make(), floor: make(), server: make(), aggregate: make() };
}

function byModernTarget<T>(make: () => T): Record<ModernTargetId, T> {
	return {
		modernDirect: make(),
		statelessFloor: make(),
		stateless: make(),
		legacyGateway: make(),
		legacyDirect: make(),
	};
}

/** The targets in an order rotated by round, so none is always measured first. */
function rotated<T>(ids: readonly T[], round: number): T[] {
	return ids.map((_, i) => ids[(i + round) % ids.length] as T);
}

// ---------------------------------------------------------------------------------------------
// Gateway admin API

interface SessionStats {
	storageReads: number;
	storageWrites: number;
	registryReads: number;
	kvReads: number;
	upstreamRequests: number;
	inFlight: number;
	eventBufferWrites: number;
	activeMs: number;
}

interface Gateway {
	url: string;
	adminToken: string;
}

async function admin<T>(
	gateway: Gateway,
	method: string,
	path: string,
	body?: unknown,
	extra?: Record<string, string>,
) {
	const response = await fetch(`${gateway.url}/admin${path}`, {
		method,
		headers: {
			authorization: `Bearer ${gateway.adminToken}`,
			...(body === undefined ? {} : { "content-type": "application/json" }),
			...extra,
		},
		body: body === undefined ? undefined : JSON.stringify(body),
		signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
	});
	const text = await response.text();
	if (!response.ok) throw new Error(`${method} /admin${path} answered ${response.status}: ${text.slice(0, 300)}`);
	return JSON.parse(text) as T;
}

function sessionStats(gateway: Gateway, session: Session): Promise<SessionStats> {
	const id = session.transport.sessionId;
	if (!id) throw new Error(`${TARGET_LABELS[session.target.id]}: the session has no id`);
	return sessionStatsOf(gateway, id);
}

function sessionStatsOf(gateway: Gateway, sessionId: string): Promise<SessionStats> {
	return admin<SessionStats>(gateway, "GET", "/session-stats", undefined, { "mcp-session-id": sessionId });
}

/** The gateway's name for the SDK v2 upstream: its endpoint is `/mcp/bench-modern`. */
const MODERN_SERVER = "bench-modern";

/**
 * Registers the SDK v2 upstream as a server. Its protocol is pinned where the
 * gateway knows the field; a gateway without it (400 naming the field) finds
 * the era itself with a `server/discover` probe. Says which, for the report.
 */
async function registerModernServer(gateway: Gateway, url: string): Promise<string> {
	try {
		await admin(gateway, "PUT", `/servers/${MODERN_SERVER}`, { url, protocol: MODERN_VERSION });
		return `\`protocol: "${MODERN_VERSION}"\` (pinned: the gateway asks the upstream nothing to know its era)`;
	} catch (error) {
		if (!/answered 400: .*protocol/.test(describe(error))) throw error;
	}
	await admin(gateway, "PUT", `/servers/${MODERN_SERVER}`, { url });
	return "no `protocol` field, which this gateway does not have: the edge finds the upstream's era with a `server/discover` probe";
}

async function registryReads(gateway: Gateway): Promise<number> {
	return (await admin<{ reads: number }>(gateway, "GET", "/registry-stats")).reads;
}

/** The upstream fixture's request log: one entry per request it received. */
async function upstreamLog(upstreamUrl: string): Promise<Array<{ method: string; body?: { method?: string } }>> {
	const response = await fetch(new URL("/_log", upstreamUrl), { signal: AbortSignal.timeout(CALL_TIMEOUT_MS) });
	if (!response.ok) throw new Error(`the upstream's /_log answered ${response.status}`);
	return (await response.json()) as Array<{ method: string; body?: { method?: string } }>;
}

async function resetUpstreamLog(upstreamUrl: string): Promise<void> {
	const response = await fetch(new URL("/_reset", upstreamUrl), {
		method: "POST",
		signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
	});
	await response.body?.cancel();
}

interface CostMark {
	at: number;
	calls: number;
	stats: SessionStats;
}

async function costMark(gateway: Gateway, session: Session): Promise<CostMark> {
	return { at: performance.now(), calls: session.calls, stats: await sessionStats(gateway, session) };
}

/**
 * Counts the requests the registry Durable Object serves from now on (its reads: in steady state
 * there are none, since keys, endpoints and rechecks come from Workers KV). The counter lives in memory and restarts at 0
 * when the local runtime evicts an idle registry instance, so it is polled and increments are
 * summed (a drop means a restart: everything since counts).
 */
function countRegistryReads(gateway: Gateway): { stop(): Promise<number> } {
	let stopped = false;
	let total = 0;
	const running = (async () => {
		let previous = await registryReads(gateway);
		for (let polls = 0; polls < 10_000; polls++) {
			await delay(500);
			const current = await registryReads(gateway);
			total += current >= previous ? current - previous : current;
			previous = current;
			if (stopped) return;
		}
	})();
	return {
		stop: async () => {
			stopped = true;
			await withTimeout(running, CALL_TIMEOUT_MS, "counting registry reads");
			return total;
		},
	};
}

function costWindow(before: CostMark, after: CostMark, registryReadsAll: number | null): CostWindow {
	if (after.stats.upstreamRequests < before.stats.upstreamRequests) {
		warn("a session's Durable Object restarted during a cost window: its counters started again from 0");
	}
	return {
		calls: after.calls - before.calls,
		elapsedMs: after.at - before.at,
		storageReads: after.stats.storageReads - before.stats.storageReads,
		storageWrites: after.stats.storageWrites - before.stats.storageWrites,
		eventBufferWrites: after.stats.eventBufferWrites - before.stats.eventBufferWrites,
		sessionRegistryReads: after.stats.registryReads - before.stats.registryReads,
		kvReads: after.stats.kvReads - before.stats.kvReads,
		registryReadsAll,
		upstreamRequests: after.stats.upstreamRequests - before.stats.upstreamRequests,
	};
}

// ---------------------------------------------------------------------------------------------
// Idle listener

/**
 * A client that opens a session, opens its GET stream and then only listens
 * for `windowMs` before closing it: how long the session's Durable Object was
 * active meanwhile (session-stats activeMs, read before the GET and right
 * after the close), and whether it still was a moment after the close. Raw
 * HTTP, not the SDK client, which opens (and reopens) its own GET stream.
 */
async function idleListener(gateway: Gateway, target: Target, windowMs: number): Promise<IdleWindow> {
	const label = TARGET_LABELS[target.id];
	const send = async (init: RequestInit & { headers: Record<string, string> }, expected: number) => {
		const response = await fetch(target.url, {
			...init,
			headers: { ...target.headers, ...init.headers },
			signal: init.signal ?? AbortSignal.timeout(CALL_TIMEOUT_MS),
		});
		if (response.status !== expected) {
			throw new Error(
				`${label}: idle listener's ${init.method ?? "GET"} answered ${response.status}: ${(await response.text()).slice(0, 300)}`,
			);
		}
		return response;
	};
	const posting = { accept: "application/json, text/event-stream", "content-type": "application/json" };
	const initialize = await send(
		{
			method: "POST",
			headers: posting,
			body: JSON.stringify({
				jsonrpc: "2.0",
				id: 1,
				method: "initialize",
				params: {
					protocolVersion: LATEST_PROTOCOL_VERSION,
					capabilities: {},
					clientInfo: { name: "mcp-edge-bench-listener", version: "1.0.0" },
				},
			}),
		},
		200,
	);
	await initialize.text();
	const sessionId = initialize.headers.get("mcp-session-id");
	if (!sessionId) throw new Error(`${label}: initialize gave no session id`);
	const inSession = { "mcp-session-id": sessionId, "mcp-protocol-version": LATEST_PROTOCOL_VERSION };
	const initialized = await send(
		{
			method: "POST",
			headers: { ...posting, ...inSession },
			body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
		},
		202,
	);
	await initialized.body?.cancel();

	const before = await sessionStatsOf(gateway, sessionId);
	// Reading the counters now and then keeps them whole: an object with no request for a while may
	// be evicted, and its counters start again from 0 (reading them is not activity the meter counts).
	const keepCounting = setInterval(() => sessionStatsOf(gateway, sessionId).catch(() => undefined), COUNTER_POLL_MS);
	const opened = performance.now();
	// The gateway ends each listening window (at most LISTEN_WINDOW_SECONDS); a client resumes at
	// once with the last event id it saw, as the SDK's client does after `retry`.
	let lastEventId: string | null = null;
	let windows = 0;
	while (performance.now() - opened < windowMs) {
		const left = Math.ceil(windowMs - (performance.now() - opened));
		const listening = AbortSignal.timeout(left);
		let stream: Response;
		try {
			stream = await send(
				{
					headers: {
						...inSession,
						accept: "text/event-stream",
						...(lastEventId ? { "last-event-id": lastEventId } : {}),
					},
					signal: AbortSignal.any([listening, AbortSignal.timeout(left + CALL_TIMEOUT_MS)]),
				},
				200,
			);
		} catch (error) {
			// A window the gateway ended just before the listening time was up: the resumed GET had
			// only the few milliseconds left to be answered in, and the listening is over.
			if (listening.aborted) break;
			throw error;
		}
		windows++;
		const text = await stream.text().catch(() => "");
		lastEventId = [...text.matchAll(/^id: (.+)$/gm)].at(-1)?.[1] ?? lastEventId;
	}
	const listenedMs = performance.now() - opened;
	const atClose = await sessionStatsOf(gateway, sessionId);
	await delay(AFTER_CLOSE_PROBE_MS);
	const later = await sessionStatsOf(gateway, sessionId);
	clearInterval(keepCounting);

	const ended = await send({ method: "DELETE", headers: inSession }, 204);
	await ended.body?.cancel();
	return {
		listenedMs,
		windows,
		activeMs: atClose.activeMs - before.activeMs,
		activeAfterClose: later.activeMs - atClose.activeMs > AFTER_CLOSE_PROBE_MS / 2,
	};
}

/** An idle listener on each of the gateway's endpoints, at once. */
async function idleListeners(
	gateway: Gateway,
	targets: Record<TargetId, Target>,
	windowMs: number,
): Promise<Record<GatewayEndpoint, IdleWindow>> {
	const idle = {} as Record<GatewayEndpoint, IdleWindow>;
	await Promise.all(
		(["server", "aggregate"] as const).map(async (endpoint) => {
			idle[endpoint] = await idleListener(gateway, targets[endpoint], windowMs);
		}),
	);
	return idle;
}

// ---------------------------------------------------------------------------------------------
// Startup

async function startUpstream(): Promise<{ child: Child; url: string }> {
	return startUpstreamProcess("upstream", "upstream.ts");
}

/** The SDK v2 upstream of the 2026-07-28 measurements (both eras, one definition). */
function startModernUpstream(): Promise<{ child: Child; url: string }> {
	return startUpstreamProcess("SDK v2 upstream", "modern-upstream.ts");
}

async function startUpstreamProcess(name: string, script: string): Promise<{ child: Child; url: string }> {
	const child = procs.spawn(name, process.execPath, [join(ROOT, "scripts", "bench", script)], {
		cwd: ROOT,
		keepStdinOpen: true,
	});
	const match = await waitForLine(child, /^ready (\d+)$/, 20_000);
	return { child, url: `http://${HOST}:${match[1]}/mcp` };
}

/** Lines of the Workers' own output that may explain a failure (errors, resets), kept for the end. */
const notableRuntimeLines: string[] = [];
const NOTABLE = /error|exception|uncaught|terminat|reset|exceeded|overloaded/i;

/** `wrangler dev` on a pre-built bundle, its notable output lines kept for the report. */
async function startWrangler(
	name: string,
	config: string,
	entry: string,
	persistTo: string,
	extraArgs: string[],
): Promise<{ child: Child; url: string }> {
	const started = await startWranglerDev(procs, { name, config, entry, persistTo, env: childEnv, extraArgs });
	started.child.onLine((line) => {
		if (NOTABLE.test(line) && !line.includes("[wrangler:info]") && notableRuntimeLines.length < 40) {
			notableRuntimeLines.push(`${name} at +${elapsedS()} s: ${line.slice(0, 300)}`);
		}
	});
	return started;
}

/** The built modules' size, raw and gzipped. */
function bundleSize(built: { child: Child; outDir: string }): BundleResult {
	const files = (readdirSync(built.outDir, { recursive: true }) as string[])
		.filter((file) => /\.(m?js|cjs|wasm)$/.test(file))
		.sort();
	if (files.length === 0) return { error: `no modules in ${built.outDir}` };
	let rawBytes = 0;
	let gzipBytes = 0;
	for (const file of files) {
		const content = readFileSync(join(built.outDir, file));
		rawBytes += statSync(join(built.outDir, file)).size;
		gzipBytes += gzipSync(content, { level: 9 }).length;
	}
	const summary = built.child.output
		.map((line) => /Total Upload:.*/.exec(line)?.[0])
		.find((line) => line !== undefined);
	return { files, rawBytes, gzipBytes, wranglerSummary: summary?.trim() ?? null };
}

/** A numeric var of the gateway's wrangler.toml (what the run used: the bench overrides none). */
function gatewayVar(name: string, fallback: number): number {
	const value = gatewayVarOrNull(name);
	return value !== null && value > 0 ? value : fallback;
}

/** A numeric var of the gateway's wrangler.toml, or null where it has none. */
function gatewayVarOrNull(name: string): number | null {
	const toml = readFileSync(join(ROOT, "wrangler.toml"), "utf8");
	const value = Number(new RegExp(`^${name}\\s*=\\s*"(\\d+)"`, "m").exec(toml)?.[1] ?? Number.NaN);
	return Number.isFinite(value) ? value : null;
}

function packageVersion(name: string): string {
	try {
		const manifest = JSON.parse(readFileSync(join(ROOT, "node_modules", name, "package.json"), "utf8")) as {
			version?: string;
		};
		return manifest.version ?? "unknown";
	} catch {
		return "unknown";
	}
}

// ---------------------------------------------------------------------------------------------
// The run

async function main(): Promise<void> {
	const started = performance.now();
	const loadAtStart = loadavg();
	log(`${QUICK ? "quick" : "full"} run; ${cpus().length} cores, Node ${process.version}`);
	const watchdog = setTimeout(
		() =>
			void shutdown(
				1,
				`bench: did not finish within ${PLAN.watchdogMs / 60_000} min; stopping. Is the machine overloaded or a server stuck?`,
			),
		PLAN.watchdogMs,
	);
	watchdog.unref();

	// On a quiet machine, before any server starts. A failure is reported, not fatal: src/ may be mid-edit.
	log("per-stage cost of one request's plain code (scripts/bench/stages.ts)...");
	const stagesStart = performance.now();
	const stages = await measureStages({ quick: QUICK }).catch((error: unknown) => {
		warn(`the per-stage microbenchmark failed: ${describe(error)}`);
		return { error: describe(error) };
	});
	log(`per-stage microbenchmark done in ${((performance.now() - stagesStart) / 1000).toFixed(1)} s`);

	// Temporary state and secrets: the user's .dev.vars and .wrangler/state are never touched.
	const tmp = procs.tempDir("mcp-edge-bench-");
	// A private registry of local dev Workers: a gateway the user runs at the same time (`npm start`,
	// same Worker name) and the benchmark's own never see each other.
	childEnv = wranglerEnv(tmp);
	// wrangler keeps its build output next to the floor's config.
	procs.removeOnExit(join(ROOT, "scripts", "bench", "floor", ".wrangler"));
	procs.removeOnExit(join(ROOT, "scripts", "bench", "floor-stateless", ".wrangler"));
	const adminToken = randomBytes(32).toString("base64url");
	const envFile = join(tmp, "gateway.env");
	// The bench upstream is plain http on loopback, which deployments refuse.
	writeFileSync(
		envFile,
		`ADMIN_TOKEN="${adminToken}"\nSESSION_SECRET="${randomBytes(32).toString("base64url")}"\nKEY_SECRET="${randomBytes(32).toString("base64url")}"\nALLOW_HTTP_UPSTREAMS="true"\n`,
		{ mode: 0o600 },
	);
	// The benchmark drives one key far past the per-key rate limit of a deployment: the same
	// configuration with the limits raised, so the limiter still runs on every request.
	const gatewayConfig = join(tmp, "wrangler.toml");
	writeFileSync(
		gatewayConfig,
		readFileSync(join(ROOT, "wrangler.toml"), "utf8").replace(/limit = \d+, period/g, "limit = 100000000, period"),
	);

	log("building the gateway and the floors (wrangler deploy --dry-run), starting the upstreams...");
	const [upstream, modernUpstream, gatewayBuild, floorBuild, statelessFloorBuild] = await Promise.all([
		startUpstream(),
		startModernUpstream(),
		buildWorker(procs, {
			name: "gateway",
			config: join(ROOT, "wrangler.toml"),
			outDir: join(tmp, "gateway-bundle"),
			env: childEnv,
		}),
		buildWorker(procs, {
			name: "floor",
			config: join(ROOT, "scripts", "bench", "floor", "wrangler.toml"),
			outDir: join(tmp, "floor-bundle"),
			env: childEnv,
		}),
		buildWorker(procs, {
			name: "Worker-only floor",
			config: join(ROOT, "scripts", "bench", "floor-stateless", "wrangler.toml"),
			outDir: join(tmp, "floor-stateless-bundle"),
			env: childEnv,
		}),
	]);
	const bundle = bundleSize(gatewayBuild);
	// After the size is taken: the built gateway behind the module that counts its Durable Object requests.
	const gatewayEntry = installCountingEntry(gatewayBuild.outDir, gatewayConfig);
	log("starting the gateway and the floors (wrangler dev)...");
	const [gatewayDev, floorDev, statelessFloorDev] = await Promise.all([
		startWrangler("gateway (wrangler dev)", gatewayConfig, gatewayEntry, join(tmp, "gateway-state"), [
			"--env-file",
			envFile,
		]),
		startWrangler(
			"floor (wrangler dev)",
			join(ROOT, "scripts", "bench", "floor", "wrangler.toml"),
			floorBuild.entry,
			join(tmp, "floor-state"),
			["--var", `UPSTREAM_URL:${upstream.url}`],
		),
		startWrangler(
			"Worker-only floor (wrangler dev)",
			join(ROOT, "scripts", "bench", "floor-stateless", "wrangler.toml"),
			statelessFloorBuild.entry,
			join(tmp, "floor-stateless-state"),
			["--var", `UPSTREAM_URL:${modernUpstream.url}`],
		),
	]);
	log(
		`ready: upstreams ${upstream.url} (2025) and ${modernUpstream.url} (SDK v2), gateway ${gatewayDev.url}, floor ${floorDev.url}, Worker-only floor ${statelessFloorDev.url}`,
	);

	const gateway: Gateway = { url: gatewayDev.url, adminToken };
	await admin(gateway, "PUT", "/servers/bench", { url: upstream.url });
	const { key } = await admin<{ key: string }>(gateway, "POST", "/keys", {
		name: "bench",
		// Only `bench`: the aggregate endpoint's sessions have that one member, whatever else is registered.
		servers: ["bench"],
		// The benchmark holds hundreds of sessions with one key; a deployment caps them at MAX_SESSIONS_PER_KEY.
		maxSessions: 100_000,
	});
	const auth = { authorization: `Bearer ${key}` };
	const modernProtocol = await registerModernServer(gateway, modernUpstream.url);
	const modernKey = await admin<{ key: string }>(gateway, "POST", "/keys", {
		name: "bench-modern",
		servers: [MODERN_SERVER],
	});
	const modernAuth = { authorization: `Bearer ${modernKey.key}` };
	const modernGatewayUrl = `${gatewayDev.url}/mcp/${MODERN_SERVER}`;
	const modernTargets: Record<ModernTargetId, RawTarget> = {
		modernDirect: { id: "modernDirect", url: modernUpstream.url, era: MODERN_VERSION },
		statelessFloor: { id: "statelessFloor", url: `${statelessFloorDev.url}/mcp`, era: MODERN_VERSION },
		stateless: { id: "stateless", url: modernGatewayUrl, era: MODERN_VERSION, headers: modernAuth },
		legacyGateway: { id: "legacyGateway", url: modernGatewayUrl, era: LEGACY_VERSION, headers: modernAuth },
		legacyDirect: { id: "legacyDirect", url: modernUpstream.url, era: LEGACY_VERSION },
	};
	const same = (name: string) => name;
	const targets: Record<TargetId, Target> = {
		direct: { id: "direct", url: upstream.url, tool: same },
		floor: { id: "floor", url: `${floorDev.url}/mcp`, tool: same },
		server: { id: "server", url: `${gatewayDev.url}/mcp/bench`, headers: auth, tool: same },
		aggregate: { id: "aggregate", url: `${gatewayDev.url}/mcp`, headers: auth, tool: (name) => `bench__${name}` },
	};

	// CPU time of the server side of each target, per throughput call: the upstream's process, and
	// the process group (wrangler, workerd) of the runtime in between.
	const groups = {
		upstream: upstream.child.process.pid ?? -1,
		floor: floorDev.child.process.pid ?? -1,
		gateway: gatewayDev.child.process.pid ?? -1,
	};
	const runtimeGroup: Record<TargetId, number | null> = {
		direct: null,
		floor: groups.floor,
		server: groups.gateway,
		aggregate: groups.gateway,
	};
	const cpuSupported = groupCpuMs([groups.upstream]) !== null;
	const cpu = byTarget<CpuUse>(() => ({ calls: 0, upstreamMs: 0, runtimeMs: 0, clientMs: 0 }));
	const setupLog = byTarget<UpstreamLog>(() => ({ sessions: 0, requests: 0, byKind: {} }));

	// Sessions that live through the run: one per target, and a pool per target.
	log(`opening sessions: 1 + ${PLAN.poolSize} per target...`);
	const mains = byTarget<Session | undefined>(() => undefined);
	const pools = byTarget<Session[]>(() => []);
	for (const t of TARGET_IDS) {
		const session = await openSession(targets[t]);
		await session.client.listTools(undefined, { timeout: CALL_TIMEOUT_MS });
		mains[t] = session;
		pools[t] = await mapBounded(Array.from({ length: PLAN.poolSize }), OPEN_PARALLELISM, async () => {
			const pooled = await openSession(targets[t]);
			await pooled.client.listTools(undefined, { timeout: CALL_TIMEOUT_MS });
			return pooled;
		});
	}
	const mainOf = (t: TargetId): Session => {
		const session = mains[t];
		if (!session) throw new Error(`no long-lived session for ${t}`);
		return session;
	};

	const rawClients = {} as Record<ModernTargetId, RawClient>;
	for (const t of MODERN_TARGET_IDS) rawClients[t] = await RawClient.open(modernTargets[t], CALL_TIMEOUT_MS);

	log("warming up...");
	for (const t of MODERN_TARGET_IDS) {
		for (let i = 0; i < PLAN.warmupCalls; i++) await rawClients[t].echo();
	}
	for (const t of TARGET_IDS) {
		for (let i = 0; i < PLAN.warmupCalls; i++) await echo(mainOf(t));
		await runThroughput(pools[t], 16, QUICK ? 100 : 300);
		await blob(mainOf(t));
		await progress(mainOf(t));
		await setupOnce(targets[t]);
	}

	// The long-lived sessions' cost window starts here; so does the count of registry requests from any source.
	const longRunStart = {
		server: await costMark(gateway, mainOf("server")),
		aggregate: await costMark(gateway, mainOf("aggregate")),
	};
	const longRunRegistry = countRegistryReads(gateway);
	// A session's object that sees no request for a while may be evicted (it holds no listening stream:
	// the edge does), and its counters start again from 0. Reading them now and then keeps the two
	// long-lived sessions' objects, and so their counts, whole while the run measures other targets.
	const keepCounting = setInterval(() => {
		for (const t of ["server", "aggregate"] as const) sessionStats(gateway, mainOf(t)).catch(() => undefined);
	}, COUNTER_POLL_MS);

	const latency = byTarget<number[]>(() => []);
	const modern: ModernResults = {
		protocol: modernProtocol,
		latency: byModernTarget(() => []),
		durableObjectRequests: byModernTarget(() => ({})),
		upstreamRequests: byModernTarget(() => ({})),
	};
	const setup = byTarget<number[]>(() => []);
	const blobs = byTarget<number[]>(() => []);
	const progressFirst = byTarget<number[]>(() => []);
	const progressTotal = byTarget<number[]>(() => []);
	const cells: ThroughputCell[] = [];
	for (const sessions of [1, PLAN.poolSize]) {
		for (const concurrency of CONCURRENCIES) {
			cells.push({ sessions, concurrency, results: byTarget(() => ({ calls: 0, ms: 0, perRound: [] })) });
		}
	}

	for (let round = 0; round < PLAN.rounds; round++) {
		const roundStart = performance.now();
		const order = rotated(TARGET_IDS, round);
		await resetUpstreamLog(upstream.url); // It records every request: keep the upstream's memory flat.
		for (const t of order) {
			const session = mainOf(t);
			for (let i = 0; i < PLAN.latencyCalls; i++) {
				const start = performance.now();
				await echo(session);
				latency[t].push(performance.now() - start);
			}
		}
		// The same call in both eras against the SDK v2 upstream, with the counters read around each window.
		for (const t of rotated(MODERN_TARGET_IDS, round)) {
			await resetModernUpstreamCounts(modernUpstream.url, CALL_TIMEOUT_MS);
			const objectsBefore = await durableObjectRequests(gateway.url, CALL_TIMEOUT_MS);
			for (let i = 0; i < PLAN.latencyCalls; i++) {
				const start = performance.now();
				await rawClients[t].echo();
				modern.latency[t].push(performance.now() - start);
			}
			const objectsAfter = await durableObjectRequests(gateway.url, CALL_TIMEOUT_MS);
			addDifference(modern.durableObjectRequests[t], objectsBefore, objectsAfter);
			addDifference(modern.upstreamRequests[t], {}, await modernUpstreamCounts(modernUpstream.url, CALL_TIMEOUT_MS));
		}
		for (const cell of cells) {
			for (const t of order) {
				const sessions = cell.sessions === 1 ? [mainOf(t)] : pools[t];
				const group = runtimeGroup[t];
				const cpuBefore = groupCpuMs([groups.upstream, group ?? groups.upstream]);
				const clientBefore = process.cpuUsage();
				const result = await runThroughput(sessions, cell.concurrency, PLAN.throughputMs);
				const clientUse = process.cpuUsage(clientBefore);
				const cpuAfter = groupCpuMs([groups.upstream, group ?? groups.upstream]);
				if (cpuBefore && cpuAfter) {
					const used = (g: number) => (cpuAfter.get(g) ?? 0) - (cpuBefore.get(g) ?? 0);
					cpu[t].calls += result.calls;
					cpu[t].upstreamMs += used(groups.upstream);
					cpu[t].runtimeMs += group === null ? 0 : used(group);
					cpu[t].clientMs += (clientUse.user + clientUse.system) / 1000;
				}
				const total = cell.results[t];
				total.calls += result.calls;
				total.ms += result.ms;
				total.perRound.push(rate(result));
			}
		}
		for (const t of order) {
			await resetUpstreamLog(upstream.url);
			for (let i = 0; i < PLAN.setupSessions; i++) setup[t].push(await setupOnce(targets[t]));
			await delay(200); // The gateway closes an upstream session once the client's GET stream has ended.
			const entries = await upstreamLog(upstream.url);
			setupLog[t].sessions += PLAN.setupSessions;
			setupLog[t].requests += entries.length;
			for (const entry of entries) {
				const kind = entry.method === "POST" ? (entry.body?.method ?? "POST (other)") : entry.method;
				setupLog[t].byKind[kind] = (setupLog[t].byKind[kind] ?? 0) + 1;
			}
		}
		for (const t of order) {
			const session = mainOf(t);
			for (let i = 0; i < PLAN.blobCalls; i++) {
				const start = performance.now();
				await blob(session);
				blobs[t].push(performance.now() - start);
			}
		}
		for (const t of order) {
			for (let i = 0; i < PLAN.progressCalls; i++) {
				const { first, total } = await progress(mainOf(t));
				if (Number.isFinite(first)) progressFirst[t].push(first);
				progressTotal[t].push(total);
			}
		}
		const summary = [
			...TARGET_IDS.map((t) => `${t} p50 ${percentile(latency[t], 50).toFixed(2)} ms`),
			...(["statelessFloor", "stateless", "legacyGateway"] as const).map(
				(t) => `${t} p50 ${percentile(modern.latency[t], 50).toFixed(2)} ms`,
			),
		].join(", ");
		log(
			`round ${round + 1}/${PLAN.rounds} done in ${((performance.now() - roundStart) / 1000).toFixed(1)} s (${summary})`,
		);
	}

	// Everything of the run (every target's sessions, setups included) counts towards the registry's requests.
	clearInterval(keepCounting);
	const longRunRegistryRequests = await longRunRegistry.stop();
	const longRun = {
		server: costWindow(longRunStart.server, await costMark(gateway, mainOf("server")), longRunRegistryRequests),
		aggregate: costWindow(
			longRunStart.aggregate,
			await costMark(gateway, mainOf("aggregate")),
			longRunRegistryRequests,
		),
	};

	log(
		`idle listener: a session per endpoint that only listens on its GET stream for ${PLAN.idleListenMs / 1000} s, alongside the busy sessions...`,
	);
	// A listener costs the machine next to nothing and its figure is wall time, so it runs alongside.
	const idleRun = idleListeners(gateway, targets, PLAN.idleListenMs);
	log(
		`cost of a busy session: ${PLAN.busyCalls} calls (and at least ${PLAN.busyMinMs / 1000} s) at concurrency ${BUSY_CONCURRENCY}...`,
	);
	const busy = {} as Record<GatewayEndpoint, CostWindow>;
	for (const endpoint of ["server", "aggregate"] as const) {
		const session = await openSession(targets[endpoint]);
		await session.client.listTools(undefined, { timeout: CALL_TIMEOUT_MS });
		await delay(300); // Let the SDK client's GET stream open: it belongs to setup, not to the calls.
		const registry = countRegistryReads(gateway);
		const before = await costMark(gateway, session);
		const until = performance.now() + PLAN.busyMinMs;
		let issued = 0;
		await Promise.all(
			Array.from({ length: BUSY_CONCURRENCY }, async () => {
				while ((issued < PLAN.busyCalls || performance.now() < until) && issued < MAX_CALLS_PER_CELL) {
					issued++;
					await echo(session);
				}
			}),
		);
		const after = await costMark(gateway, session);
		busy[endpoint] = costWindow(before, after, await registry.stop());
		await closeSession(session, true);
	}

	const idle = await idleRun;
	for (const client of Object.values(rawClients)) await client.close();

	for (const [key, seen] of clientErrors) {
		warn(`client error outside a call (${seen.count}×, at +${seen.first}…+${seen.last} s): ${key}`);
	}
	for (const line of notableRuntimeLines) log(`runtime output: ${line}`);
	if (suppressedListenerWarnings > 0) {
		log(
			`(${suppressedListenerWarnings} MaxListenersExceededWarning from the SDK client's shared AbortSignal were not printed)`,
		);
	}

	const results: BenchResults = {
		quick: QUICK,
		meta: {
			date: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
			cores: cpus().length,
			cpuModel: cpus()[0]?.model.trim() ?? "unknown CPU",
			node: process.version,
			platform: `${platform()} ${release()}`,
			wrangler: packageVersion("wrangler"),
			sdk: packageVersion("@modelcontextprotocol/sdk"),
			loadAverage: loadAtStart,
			wallSeconds: (performance.now() - started) / 1000,
			rounds: PLAN.rounds,
			poolSize: PLAN.poolSize,
			concurrencies: CONCURRENCIES,
			blobKib: BLOB_KIB,
			progressSteps: PROGRESS_STEPS,
			progressDelayMs: PROGRESS_DELAY_MS,
			touchIntervalS: gatewayVar("TOUCH_INTERVAL_SECONDS", 60),
			recheckIntervalS: gatewayVar("RECHECK_INTERVAL_SECONDS", 30),
			keyCacheTtlS: gatewayVar("KEY_CACHE_TTL_SECONDS", 10),
			endpointCacheTtlS: gatewayVarOrNull("ENDPOINT_CACHE_TTL_SECONDS"),
		},
		latency,
		setup,
		blob: blobs,
		progressFirst,
		progressTotal,
		throughput: cells,
		modern,
		costs: { busy, longRun },
		idle,
		cpu: cpuSupported ? cpu : null,
		setupUpstream: setupLog,
		bundle,
		stages,
		warnings,
	};

	const markdown = renderMarkdown(results, SVG_NAME);
	mkdirSync(OUT_DIR, { recursive: true });
	writeFileSync(join(OUT_DIR, MD_NAME), markdown);
	writeFileSync(join(OUT_DIR, SVG_NAME), renderSvg(results));
	writeFileSync(RAW_PATH, JSON.stringify(results));
	console.log(`\n${markdown}`);
	log(`wrote ${join(OUT_DIR, MD_NAME)} and ${SVG_NAME}; raw samples in ${RAW_PATH}`);
	log(`done in ${((performance.now() - started) / 1000).toFixed(0)} s`);
	clearTimeout(watchdog);
}

try {
	await main();
	await shutdown(0);
} catch (error) {
	// A bundle build is the only child meant to exit early; any other one that did is the likely cause.
	const exited = procs.exited().filter((report) => !report.includes("wrangler deploy --dry-run"));
	const cause = exited.length > 0 ? `\nbench: a child process had exited: ${exited.join("\n")}` : "";
	await shutdown(1, `bench: failed: ${describe(error)}${cause}`);
}
