/**
 * One gateway build served under `wrangler dev` with one 2025 session open on
 * it, nothing configured but the benchmark's upstream as `bench` and a key of
 * the `high` rate class: what `npm run profile` records and `npm run ab`
 * compares, call by call.
 */

import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildGateway, startGateway } from "../conformance/gateway.ts";
import { type Child, HOST, type Processes, waitForLine } from "../processes.ts";
import { buildWorker, ROOT, startWranglerDev, wranglerEnv } from "../wrangler-dev.ts";

export const SERVER = "bench";
const VERSION = "2025-11-25";

/** The benchmark's upstream (scripts/bench/upstream.ts) in a process of its own; its MCP URL. */
export async function startBenchUpstream(procs: Processes): Promise<string> {
	const upstream = procs.spawn("upstream", process.execPath, [join(ROOT, "scripts", "bench", "upstream.ts")], {
		cwd: ROOT,
		keepStdinOpen: true,
	});
	const [, port] = await waitForLine(upstream, /^ready (\d+)$/, 30_000);
	return `http://${HOST}:${port}/mcp`;
}

export interface OneSession {
	/** The runtime serving it (wrangler dev and its workerd): its process group is the session's CPU. */
	child: Child;
	/** workerd's inspector (Chrome DevTools protocol), for a CPU profile. */
	inspectorPort: number;
	/** One `tools/call` of the upstream's `echo` (its text names `id`), answered in full. */
	call(id: number): Promise<void>;
}

/** Builds the gateway whose wrangler.toml is `config` (this clone's by default) into `dir`. */
export function buildAt(procs: Processes, dir: string, config?: string) {
	return buildGateway(procs, dir, config);
}

/**
 * Serves `entry` with `config` (a clone's wrangler.toml; this one's by default) and its rate limits
 * raised, as `npm run bench` does: the limiter still runs on every request, and a long series of
 * calls on one key is not refused. Registers the upstream and a key, and opens a session on
 * `endpoint` (`/mcp/bench` or `/mcp`).
 */
export async function openOneSession(
	procs: Processes,
	entry: string,
	upstreamUrl: string,
	options: { name: string; dir: string; endpoint: string; config?: string },
): Promise<OneSession> {
	mkdirSync(options.dir, { recursive: true });
	const config = join(options.dir, "wrangler.toml");
	const original = readFileSync(options.config ?? join(ROOT, "wrangler.toml"), "utf8");
	writeFileSync(config, original.replace(/limit = \d+, period/g, "limit = 100000000, period"));
	const gateway = await startGateway(procs, { entry }, { name: options.name, dir: options.dir, config });
	const admin = async (method: string, path: string, body: unknown) => {
		const response = await fetch(`${gateway.url}/admin${path}`, {
			method,
			headers: { authorization: `Bearer ${gateway.adminToken}`, "content-type": "application/json" },
			body: JSON.stringify(body),
		});
		if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
		return (await response.json()) as Record<string, unknown>;
	};
	await admin("PUT", `/servers/${SERVER}?check=false`, { url: upstreamUrl });
	const key = String((await admin("POST", "/keys", { name: "bench", servers: [SERVER] })).key);
	const session = await sessionOn(`${gateway.url}${options.endpoint}`, { authorization: `Bearer ${key}` });
	const tool = options.endpoint === "/mcp" ? `${SERVER}__echo` : "echo";
	return { child: gateway.child, inspectorPort: gateway.inspectorPort, call: (id) => session.call(id, tool) };
}

/**
 * The benchmark's floor (scripts/bench/floor/: Worker → Durable Object → upstream, nothing parsed)
 * built and served under `wrangler dev` in `dir`, with a session open through it to `upstreamUrl`.
 */
export async function openFloorSession(procs: Processes, upstreamUrl: string, dir: string): Promise<OneSession> {
	const config = join(ROOT, "scripts", "bench", "floor", "wrangler.toml");
	const env = wranglerEnv(dir);
	const build = await buildWorker(procs, { name: "floor", config, outDir: join(dir, "floor-build"), env });
	const { child, url, inspectorPort } = await startWranglerDev(procs, {
		name: "floor (wrangler dev)",
		config,
		entry: build.entry,
		persistTo: join(dir, "floor-state"),
		env,
		extraArgs: ["--var", `UPSTREAM_URL:${upstreamUrl}`],
	});
	const session = await sessionOn(`${url}/mcp`, {});
	return { child, inspectorPort, call: (id) => session.call(id, "echo") };
}

/** A 2025 session opened with raw `fetch` at `url` (initialize, initialized), and its calls of `tool`. */
async function sessionOn(url: string, extraHeaders: Record<string, string>) {
	const post = async (message: object, session?: string) => {
		const headers: Record<string, string> = {
			...extraHeaders,
			"content-type": "application/json",
			accept: "application/json, text/event-stream",
			"mcp-protocol-version": VERSION,
		};
		if (session) headers["mcp-session-id"] = session;
		const response = await fetch(url, { method: "POST", headers, body: JSON.stringify(message) });
		const text = await response.text();
		if (!response.ok) throw new Error(`${response.status} ${text}`);
		return { session: response.headers.get("mcp-session-id"), text };
	};
	const opened = await post({
		jsonrpc: "2.0",
		id: 0,
		method: "initialize",
		params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: "bench", version: "1" } },
	});
	const session = opened.session ?? "";
	await post({ jsonrpc: "2.0", method: "notifications/initialized" }, session);
	return {
		call: async (id: number, tool: string) => {
			const text = `call ${id}`;
			const answer = await post(
				{ jsonrpc: "2.0", id, method: "tools/call", params: { name: tool, arguments: { text } } },
				session,
			);
			if (!answer.text.includes(text)) throw new Error(`call ${id} was not answered: ${answer.text.slice(0, 300)}`);
		},
	};
}

/** Latency figures of one series, in ms. */
export function latencyOf(took: number[]): { p50: number; p90: number; mean: number } {
	const sorted = [...took].sort((a, b) => a - b);
	const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
	return { p50: at(0.5), p90: at(0.9), mean: took.reduce((sum, ms) => sum + ms, 0) / Math.max(1, took.length) };
}
