/**
 * `npm run profile`: where a `tools/call` spends the runtime's CPU. Builds the
 * gateway, serves it under `wrangler dev` beside the benchmark's upstream (its
 * own process), opens one 2025 session on `/mcp/<server>` with nothing
 * configured, warms it up, then records a CPU profile of the gateway's isolate
 * (the Worker and its Durable Objects share it under `wrangler dev`) through
 * workerd's inspector over the Chrome DevTools protocol while it sends the
 * measured calls one after another. Prints the functions with the most time of
 * their own and the most time under them, and writes the `.cpuprofile` (open it
 * in Chrome DevTools' Performance panel) to a temporary directory.
 *
 *   npm run profile                         2,000 calls
 *   npm run profile -- --calls 500 --top 30
 *   npm run profile -- --endpoint /mcp      the merged endpoint instead
 *   npm run profile -- --latency            no profile: the calls' latency only (p50, mean), for A/B runs
 */

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { groupCpuMs, HOST, installShutdown, Processes } from "../processes.ts";
import { buildAt, latencyOf, openOneSession, SERVER, startBenchUpstream } from "./one-session.ts";

const USAGE = "Usage: npm run profile [-- --calls N] [--top N] [--endpoint /mcp/<server>|/mcp] [--latency]";
const args = process.argv.slice(2);
function option(name: string, fallback: string): string {
	const at = args.indexOf(name);
	return at >= 0 ? (args[at + 1] ?? fallback) : fallback;
}
if (args.includes("--help")) {
	console.log(USAGE);
	process.exit(0);
}
const CALLS = Number(option("--calls", "2000"));
const TOP = Number(option("--top", "25"));
const ENDPOINT = option("--endpoint", `/mcp/${SERVER}`);
const WARMUP = 200;
/** Microseconds between samples: fine enough for a call of a few milliseconds. */
const SAMPLING_US = 100;

const procs = new Processes();
const { shutdown } = installShutdown(procs, "profile");

interface ProfileNode {
	id: number;
	callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
	hitCount?: number;
	children?: number[];
}
interface Profile {
	nodes: ProfileNode[];
	startTime: number;
	endTime: number;
	samples?: number[];
	timeDeltas?: number[];
}

/** One Chrome DevTools protocol session over a WebSocket: numbered commands and their results. */
async function devtools(url: string) {
	// The inspector takes connections from DevTools' own origins and localhost only; Node's WebSocket (undici)
	// sends an Origin only when told to.
	const socket = new WebSocket(url, { headers: { origin: `http://${HOST}` } } as unknown as string[]);
	await new Promise<void>((resolve, reject) => {
		socket.addEventListener("open", () => resolve(), { once: true });
		socket.addEventListener("error", () => reject(new Error(`cannot reach the inspector at ${url}`)), { once: true });
	});
	let next = 0;
	const waiting = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
	socket.addEventListener("message", (event) => {
		const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown; error?: { message: string } };
		if (message.id === undefined) return;
		const pending = waiting.get(message.id);
		waiting.delete(message.id);
		if (message.error) pending?.reject(new Error(message.error.message));
		else pending?.resolve(message.result);
	});
	return {
		send<T>(method: string, params: object = {}): Promise<T> {
			const id = ++next;
			socket.send(JSON.stringify({ id, method, params }));
			return new Promise<T>((resolve, reject) => {
				waiting.set(id, { resolve: resolve as (value: unknown) => void, reject });
			});
		},
		close: () => socket.close(),
	};
}

/** Self and total time per function (name, file, line), in ms, from a sampled profile. */
function summarize(profile: Profile): Array<{ where: string; selfMs: number; totalMs: number }> {
	const byId = new Map(profile.nodes.map((node) => [node.id, node]));
	const parent = new Map<number, number>();
	for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
	const self = new Map<number, number>();
	const samples = profile.samples ?? [];
	const deltas = profile.timeDeltas ?? [];
	for (let i = 0; i < samples.length; i++) {
		const id = samples[i] ?? 0;
		self.set(id, (self.get(id) ?? 0) + (deltas[i + 1] ?? deltas[i] ?? 0));
	}
	const key = (node: ProfileNode) => {
		const { functionName, url, lineNumber } = node.callFrame;
		const file = url.replace(/^.*\//, "");
		return `${functionName || "(anonymous)"} ${file}:${lineNumber + 1}`;
	};
	const rows = new Map<string, { selfMs: number; totalMs: number }>();
	for (const [id, us] of self) {
		const node = byId.get(id);
		if (!node) continue;
		const row = rows.get(key(node)) ?? { selfMs: 0, totalMs: 0 };
		row.selfMs += us / 1000;
		rows.set(key(node), row);
		// Each function on the sample's stack once, however often it recurs there.
		const seen = new Set<string>();
		for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
			const frame = byId.get(at);
			if (!frame) break;
			const name = key(frame);
			if (seen.has(name)) continue;
			seen.add(name);
			const total = rows.get(name) ?? { selfMs: 0, totalMs: 0 };
			total.totalMs += us / 1000;
			rows.set(name, total);
		}
	}
	return [...rows.entries()].map(([where, row]) => ({ where, ...row }));
}

async function main(): Promise<void> {
	const dir = procs.tempDir("mcp-edge-profile-");
	const [upstreamUrl, build] = await Promise.all([startBenchUpstream(procs), buildAt(procs, join(dir, "build"))]);
	const { child, call, inspectorPort } = await openOneSession(procs, build.entry, upstreamUrl, {
		name: "gateway (wrangler dev)",
		dir: join(dir, "gateway"),
		endpoint: ENDPOINT,
	});
	for (let id = 1; id <= WARMUP; id++) await call(id);
	if (args.includes("--latency")) {
		const took: number[] = [];
		const group = child.process.pid ?? -1;
		const cpuBefore = groupCpuMs([group])?.get(group) ?? 0;
		for (let id = WARMUP + 1; id <= WARMUP + CALLS; id++) {
			const started = performance.now();
			await call(id);
			took.push(performance.now() - started);
		}
		const { p50, p90, mean } = latencyOf(took);
		const cpu = ((groupCpuMs([group])?.get(group) ?? 0) - cpuBefore) / CALLS;
		console.log(
			`\n${CALLS} calls to ${ENDPOINT}: p50 ${p50.toFixed(2)} ms, p90 ${p90.toFixed(2)} ms, mean ${mean.toFixed(2)} ms; runtime CPU (wrangler dev + workerd) ${cpu.toFixed(2)} ms per call`,
		);
		return;
	}

	const inspector = inspectorPort;
	const targets = (await (await fetch(`http://${HOST}:${inspector}/json`)).json()) as Array<{
		title?: string;
		webSocketDebuggerUrl?: string;
	}>;
	const target = targets.find((candidate) => candidate.webSocketDebuggerUrl && !/proxy/i.test(candidate.title ?? ""));
	if (!target?.webSocketDebuggerUrl)
		throw new Error(`no inspector target at port ${inspector}: ${JSON.stringify(targets)}`);
	const cdp = await devtools(target.webSocketDebuggerUrl);
	await cdp.send("Profiler.enable");
	await cdp.send("Profiler.setSamplingInterval", { interval: SAMPLING_US });
	await cdp.send("Profiler.start");
	const started = performance.now();
	for (let id = WARMUP + 1; id <= WARMUP + CALLS; id++) await call(id);
	const wallMs = performance.now() - started;
	const { profile } = await cdp.send<{ profile: Profile }>("Profiler.stop");
	cdp.close();

	const file = join(dir, "..", `gateway-${Date.now()}.cpuprofile`);
	writeFileSync(file, JSON.stringify(profile));
	const rows = summarize(profile);
	const busy = rows.filter((row) => !/^\((idle|program|garbage collector)\)/.test(row.where));
	const busyMs = busy.reduce((sum, row) => sum + row.selfMs, 0);
	const gcMs = rows.find((row) => row.where.startsWith("(garbage collector)"))?.selfMs ?? 0;
	const perCall = (ms: number) => `${((ms / CALLS) * 1000).toFixed(0)} µs/call`;
	console.log(
		`\n${CALLS} calls to ${ENDPOINT} in ${(wallMs / 1000).toFixed(1)} s; the isolate's JavaScript: ${perCall(busyMs)}, garbage collection ${perCall(gcMs)}`,
	);
	const table = (title: string, sorted: typeof rows) => {
		console.log(`\n${title}`);
		for (const row of sorted.slice(0, TOP)) {
			console.log(`${perCall(row.selfMs).padStart(14)} self ${perCall(row.totalMs).padStart(14)} total  ${row.where}`);
		}
	};
	table(
		"Most time of their own:",
		[...busy].sort((a, b) => b.selfMs - a.selfMs),
	);
	table(
		"Most time under them:",
		[...busy].sort((a, b) => b.totalMs - a.totalMs),
	);
	console.log(`\nThe profile: ${file} (Chrome DevTools, Performance panel: load profile)`);
}

main().then(
	() => shutdown(0),
	(error: unknown) => shutdown(1, `profile failed: ${error instanceof Error ? error.message : String(error)}`),
);
