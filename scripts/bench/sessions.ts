/**
 * The 2025 targets as the SDK client sees them: a target (an endpoint and how
 * it names the tools), its sessions, and the calls the measurements make
 * (echo, a 64 KiB blob, progress, session setup, throughput).
 */

import { performance } from "node:perf_hooks";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { withTimeout } from "../processes.ts";
import { BLOB_KIB, CALL_TIMEOUT_MS, MAX_CALLS_PER_CELL, PROGRESS_DELAY_MS, PROGRESS_STEPS } from "./plan.ts";
import { type ModernTargetId, TARGET_LABELS, type TargetId, type Throughput } from "./results.ts";
import { clientErrors, describe, elapsedS, warn } from "./run-log.ts";

export interface Target {
	id: TargetId;
	url: string;
	headers?: Record<string, string>;
	/** The tool's name at this endpoint (the aggregate namespaces it). */
	tool(name: string): string;
}

export interface Session {
	target: Target;
	client: Client;
	transport: StreamableHTTPClientTransport;
	/** Calls sent through this session since the last reset. */
	calls: number;
	closing: boolean;
}

const openSessions = new Set<Session>();
/** Set once the bench stops: errors of sessions breaking from then on are not the gateway's. */
let ending = false;

/** Closes every open client without waiting (the bench is stopping). */
export function closeAllSessions(): void {
	ending = true;
	for (const session of openSessions) {
		session.closing = true;
		void session.client.close().catch(() => undefined);
	}
}

export async function openSession(target: Target): Promise<Session> {
	const transport = new StreamableHTTPClientTransport(
		new URL(target.url),
		target.headers ? { requestInit: { headers: target.headers } } : undefined,
	);
	const client = new Client({ name: "mcp-edge-bench", version: "1.0.0" });
	const session: Session = { target, client, transport, calls: 0, closing: false };
	client.onerror = (error) => {
		if (session.closing || ending) return;
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
export async function closeSession(session: Session, terminate: boolean): Promise<void> {
	session.closing = true;
	openSessions.delete(session);
	if (terminate) {
		await withTimeout(session.transport.terminateSession(), CALL_TIMEOUT_MS, "DELETE of a session").catch(
			(error: unknown) => warn(`${TARGET_LABELS[session.target.id]}: ending a session failed: ${describe(error)}`),
		);
	}
	await session.client.close().catch(() => undefined);
}

/** A session that has listed its tools, as every long-lived one does before it is measured. */
export async function openListedSession(target: Target): Promise<Session> {
	const session = await openSession(target);
	await session.client.listTools(undefined, { timeout: CALL_TIMEOUT_MS });
	return session;
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

export async function echo(session: Session): Promise<void> {
	const name = session.target.tool("echo");
	const result = await session.client.callTool({ name, arguments: { text: "bench" } }, undefined, {
		timeout: CALL_TIMEOUT_MS,
	});
	session.calls++;
	checkResult(session, name, result, (text) => text === "bench");
}

export async function blob(session: Session): Promise<void> {
	const name = session.target.tool("blob");
	const result = await session.client.callTool({ name, arguments: { kib: BLOB_KIB } }, undefined, {
		timeout: CALL_TIMEOUT_MS,
	});
	session.calls++;
	checkResult(session, name, result, (text) => text.length === BLOB_KIB * 1024);
}

/** One progress call: ms to the first progress event and to the result. */
export async function progress(session: Session): Promise<{ first: number; total: number }> {
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
export async function setupOnce(target: Target): Promise<number> {
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
export function runThroughput(sessions: Session[], concurrency: number, durationMs: number): Promise<Throughput> {
	return loopCalls(
		async (index) => {
			const session = sessions[index % sessions.length];
			if (!session) throw new Error("no session to call");
			await echo(session);
		},
		concurrency,
		durationMs,
	);
}

/** `concurrency` workers loop on `call` (given each call's index) until the time is up or the call bound is reached. */
export async function loopCalls(
	call: (index: number) => Promise<void>,
	concurrency: number,
	durationMs: number,
): Promise<Throughput> {
	let issued = 0;
	let completed = 0;
	const start = performance.now();
	const end = start + durationMs;
	const worker = async () => {
		while (performance.now() < end && issued < MAX_CALLS_PER_CELL) {
			await call(issued++);
			completed++;
		}
	};
	await Promise.all(Array.from({ length: concurrency }, worker));
	const ms = performance.now() - start;
	return { calls: completed, ms, perRound: [] };
}

export async function mapBounded<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
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

export function byTarget<T>(make: () => T): Record<TargetId, T> {
	return { direct: make(), floor: make(), server: make(), aggregate: make() };
}

export function byModernTarget<T>(make: () => T): Record<ModernTargetId, T> {
	return {
		modernDirect: make(),
		statelessFloor: make(),
		stateless: make(),
		legacyGateway: make(),
		legacyDirect: make(),
	};
}

/** The targets in an order rotated by round, so none is always measured first. */
export function rotated<T>(ids: readonly T[], round: number): T[] {
	return ids.map((_, i) => ids[(i + round) % ids.length] as T);
}
