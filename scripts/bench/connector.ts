/**
 * The connector stage of `npm run bench` (issue 35, point 8): what a server
 * reached through a connector costs a `tools/call` against the same server
 * registered by URL, and what a stdio server's first call costs against the
 * calls after it.
 *
 * The bench's 2025 upstream is registered twice more: as `bench-by-url` (its
 * URL) and as `bench-connector` (`"connector": {}`), served by a real
 * `mcpgw connect --upstream <the upstream's URL>` that the bench starts and
 * stops with its other processes. One 2025-11-25 session through
 * `/mcp/<server>` on each, with the same raw client; each round alternates
 * the latency calls between them one by one (their order rotated each call),
 * then measures throughput on each at concurrency 1 and 16 with the gateway's
 * Durable Object requests counted around each window.
 *
 * A third connector server, `bench-stdio`, is served by `mcpgw connect --
 * node <server-everything>`: the connector starts a child per upstream
 * session. Each round opens a few sessions one after another and times the
 * initialize, the first `tools/call echo` and the calls after it, then ends
 * the session (DELETE), which ends its child.
 */

import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { z } from "zod";
import { type Child, type Processes, waitForLine } from "../processes.ts";
import { ROOT } from "../wrangler-dev.ts";
import { admin, type Gateway } from "./gateway-admin.ts";
import {
	addDifference,
	alternatingEchoes,
	durableObjectRequests,
	LEGACY_VERSION,
	RawClient,
	type RawTarget,
} from "./modern.ts";
import { CALL_TIMEOUT_MS, CONNECTOR_CONCURRENCIES, PLAN } from "./plan.ts";
import { rate } from "./report-format.ts";
import {
	CONNECTOR_TARGET_IDS,
	type ConnectorResults,
	type ConnectorTargetId,
	type ConnectorThroughput,
	type StdioSession,
} from "./results.ts";
import { log } from "./run-log.ts";
import { loopCalls, rotated } from "./sessions.ts";

/** The bench's upstream by its URL: the baseline. */
export const BY_URL_SERVER = "bench-by-url";
/** The same upstream as a connector server, served by `mcpgw connect --upstream`. */
export const CONNECTOR_SERVER = "bench-connector";
/** A stdio server as a connector server, served by `mcpgw connect -- node <server-everything>`. */
export const STDIO_SERVER = "bench-stdio";

const MCPGW = join(ROOT, "scripts", "cli", "mcpgw.mjs");
const EVERYTHING = join(ROOT, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js");
/** How the report names the stdio server. */
const STDIO_NAME = "`@modelcontextprotocol/server-everything` (`node dist/index.js`, stdio)";
/** A connector dials, is welcomed and says so within this; far more than it takes on a loaded machine. */
const CONNECT_TIMEOUT_MS = 30_000;
const STDIO_ECHO = "bench";

/** The stage's sessions and the stdio server's target, or why it could not be set up. */
export type ConnectorStage =
	| { gateway: Gateway; clients: Record<ConnectorTargetId, RawClient>; stdio: RawTarget }
	| { error: string };

const ShownServerSchema = z.object({ connectors: z.array(z.object({ sessions: z.number() })).optional() });

/** The connectors the gateway lists for `server`. */
async function online(gateway: Gateway, server: string): Promise<Array<{ sessions: number }>> {
	return ShownServerSchema.parse(await admin(gateway, "GET", `/servers/${server}`)).connectors ?? [];
}

/** Registers `server` as a connector server, makes its token and starts `mcpgw connect` for it with `serve`. */
async function startConnector(procs: Processes, gateway: Gateway, server: string, serve: string[]): Promise<Child> {
	await admin(gateway, "PUT", `/servers/${server}`, { connector: {} });
	const { token } = await admin<{ token: string }>(gateway, "POST", `/servers/${server}/connector-tokens`);
	const child = procs.spawn(
		`mcpgw connect ${server}`,
		process.execPath,
		[MCPGW, "connect", server, "--url", gateway.url, "--token", token, ...serve],
		{ cwd: ROOT },
	);
	await waitForLine(child, /^mcpgw connect: connected to /, CONNECT_TIMEOUT_MS);
	const listed = await online(gateway, server);
	if (listed.length !== 1) throw new Error(`the gateway lists ${listed.length} connectors for ${server}, not 1`);
	return child;
}

/** Registers the three servers, starts both connectors, opens the two measured sessions. */
export async function setUpConnectorStage(
	procs: Processes,
	gateway: Gateway,
	upstreamUrl: string,
): Promise<ConnectorStage> {
	const started = performance.now();
	await admin(gateway, "PUT", `/servers/${BY_URL_SERVER}`, { url: upstreamUrl });
	await Promise.all([
		startConnector(procs, gateway, CONNECTOR_SERVER, ["--upstream", upstreamUrl]),
		startConnector(procs, gateway, STDIO_SERVER, ["--", process.execPath, EVERYTHING]),
	]);
	const { key } = await admin<{ key: string }>(gateway, "POST", "/keys", {
		name: "bench-connectors",
		servers: [BY_URL_SERVER, CONNECTOR_SERVER, STDIO_SERVER],
	});
	const target = (id: RawTarget["id"], server: string): RawTarget => ({
		id,
		url: `${gateway.url}/mcp/${server}`,
		era: LEGACY_VERSION,
		headers: { authorization: `Bearer ${key}` },
	});
	const clients: Record<ConnectorTargetId, RawClient> = {
		byUrl: await RawClient.open(target("byUrl", BY_URL_SERVER), CALL_TIMEOUT_MS),
		connector: await RawClient.open(target("connector", CONNECTOR_SERVER), CALL_TIMEOUT_MS),
	};
	log(
		`connector stage: ${CONNECTOR_SERVER} (--upstream) and ${STDIO_SERVER} (stdio) online (${(performance.now() - started).toFixed(0)} ms)`,
	);
	return { gateway, clients, stdio: target("stdio", STDIO_SERVER) };
}

export function newConnectorResults(stage: ConnectorStage): ConnectorResults | { error: string } {
	if ("error" in stage) return stage;
	const cell = (): ConnectorThroughput => ({ calls: 0, ms: 0, perRound: [], durableObjectRequests: {} });
	return {
		latency: { byUrl: [], connector: [] },
		throughput: CONNECTOR_CONCURRENCIES.map((concurrency) => ({
			concurrency,
			results: { byUrl: cell(), connector: cell() },
		})),
		stdio: { server: STDIO_NAME, sessions: [], heldAfterRounds: [], durableObjectRequests: {} },
	};
}

/** Warm-up calls on both sessions and one stdio session, none of it counted. */
export async function warmUpConnectorStage(stage: ConnectorStage): Promise<void> {
	if ("error" in stage) return;
	for (let i = 0; i < PLAN.warmupCalls; i++) {
		for (const id of CONNECTOR_TARGET_IDS) await stage.clients[id].echo();
	}
	await stdioSession(stage.stdio);
}

/** One round: latency (calls alternating), throughput per target with its Durable Object requests, stdio sessions. */
export async function measureConnectorRound(
	stage: ConnectorStage,
	results: ConnectorResults | { error: string },
	round: number,
): Promise<void> {
	if ("error" in stage || "error" in results) return;
	const latency = await alternatingEchoes(stage.clients, CONNECTOR_TARGET_IDS, round, PLAN.latencyCalls);
	for (const id of CONNECTOR_TARGET_IDS) results.latency[id].push(...latency[id]);
	for (const cell of results.throughput) {
		for (const id of rotated(CONNECTOR_TARGET_IDS, round)) {
			const client = stage.clients[id];
			const before = await durableObjectRequests(stage.gateway.url, CALL_TIMEOUT_MS);
			const result = await loopCalls(() => client.echo(), cell.concurrency, PLAN.throughputMs);
			addDifference(
				cell.results[id].durableObjectRequests,
				before,
				await durableObjectRequests(stage.gateway.url, CALL_TIMEOUT_MS),
			);
			const total = cell.results[id];
			total.calls += result.calls;
			total.ms += result.ms;
			total.perRound.push(rate(result));
		}
	}
	const before = await durableObjectRequests(stage.gateway.url, CALL_TIMEOUT_MS);
	for (let i = 0; i < PLAN.stdioSessions; i++) results.stdio.sessions.push(await stdioSession(stage.stdio));
	const after = await durableObjectRequests(stage.gateway.url, CALL_TIMEOUT_MS);
	addDifference(results.stdio.durableObjectRequests, before, after);
	results.stdio.heldAfterRounds.push((await online(stage.gateway, STDIO_SERVER))[0]?.sessions ?? 0);
}

/** A new session of the stdio server: initialize, the first call, the calls after it, then DELETE. */
async function stdioSession(target: RawTarget): Promise<StdioSession> {
	const call = async (client: RawClient) => {
		const text = await client.callText("echo", { message: STDIO_ECHO });
		if (text !== `Echo: ${STDIO_ECHO}`) throw new Error(`${target.id}: echo answered ${JSON.stringify(text)}`);
	};
	const start = performance.now();
	const client = await RawClient.open(target, CALL_TIMEOUT_MS);
	const initialized = performance.now();
	await call(client);
	const firstCallMs = performance.now() - initialized;
	const laterMs: number[] = [];
	for (let i = 0; i < PLAN.stdioLaterCalls; i++) {
		const before = performance.now();
		await call(client);
		laterMs.push(performance.now() - before);
	}
	await client.close();
	return { initializeMs: initialized - start, firstCallMs, laterMs };
}

export async function closeConnectorStage(stage: ConnectorStage): Promise<void> {
	if ("error" in stage) return;
	for (const client of Object.values(stage.clients)) await client.close();
}
