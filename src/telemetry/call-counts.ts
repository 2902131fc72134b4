import { DurableObject } from "cloudflare:workers";
import { z } from "zod";
import { settingsFrom } from "../config.ts";
import type { Env } from "../env.ts";
import { LapsingSlot, type SlotHold } from "../primitives/lapsing-slot.ts";
import type { WaitUntil } from "../primitives/wait-until.ts";
import type { ToolCallEvent } from "./tool-call.ts";

/**
 * Calls and errors per server over the last hour, for the operators'
 * dashboard: the one figure the gateway did not keep anywhere it can read
 * back (the `tool_call` log lines and the Analytics Engine dataset are
 * write-only from a Worker). The smallest honest counter:
 *
 * - each isolate adds its tool calls up in memory, per minute and server, and
 *   sends them after the response (`waitUntil`) to the one `CallCountsDO`, at
 *   most once every CALL_COUNTS_FLUSH_SECONDS (10): at most 6 DO requests a
 *   minute per busy isolate, whatever the call rate, and never on the answer's path;
 * - the object keeps one SQLite row per (minute, server), added to per batch,
 *   and drops rows older than KEEP_MINUTES as it writes: rows written per batch
 *   are the servers it names, plus the few the pruning deletes.
 *
 * What it may miss, and says so on the page: counts of an isolate evicted
 * before its batch left, and batches the object refused (logged). Errors
 * are every outcome but `ok` (tool errors, refusals, upstream failures).
 */

const MINUTE_MS = 60_000;
/** The window shown, and how long rows are kept (a little more, for the minute under way). */
export const WINDOW_MINUTES = 60;
const KEEP_MINUTES = WINDOW_MINUTES + 2;
/** Distinct (minute, server) pairs one isolate holds before it folds the rest under OTHER. */
const MAX_PENDING = 256;
/** Calls whose server the gateway could not tell (a tool name naming no server) or over the cap. */
const OTHER = "(other)";
/** The object's one instance. */
const COUNTER_NAME = "call-counts";

const MinuteCountSchema = z.object({
	minute: z.number().int().nonnegative(),
	server: z.string().min(1).max(64),
	calls: z.number().int().nonnegative(),
	errors: z.number().int().nonnegative(),
});
export type MinuteCount = z.output<typeof MinuteCountSchema>;
const BatchSchema = z.array(MinuteCountSchema).max(MAX_PENDING + 1);

/** One server's figures over the window. */
export interface ServerCalls {
	server: string;
	calls: number;
	errors: number;
}

/**
 * A flush due longer ago than this never ran (its request's `waitUntil` was cut short): the next call
 * schedules another, so one lost timer cannot stop an isolate's counting.
 */
const FLUSH_LOST_AFTER_MS = 30_000;

const pending = new Map<string, MinuteCount>();
/** Held by the scheduled flush from when it is scheduled until it starts; lost FLUSH_LOST_AFTER_MS after it was due. */
const scheduled = new LapsingSlot();
let lastFlushAt = 0;

/** Adds one accounted call to this isolate's batch, and makes sure a flush is on its way. */
export function tallyCall(env: Env, event: ToolCallEvent, waitUntil: WaitUntil): void {
	const namespace = env.CALL_COUNTS;
	if (!namespace) return;
	const minute = Math.floor(Date.parse(event.time) / MINUTE_MS);
	const named = event.outcome !== "unknown_tool" && event.server !== null ? event.server : OTHER;
	let key = `${minute} ${named}`;
	if (!pending.has(key) && pending.size >= MAX_PENDING) key = `${minute} ${OTHER}`;
	const count = pending.get(key) ?? { minute, server: key.slice(key.indexOf(" ") + 1), calls: 0, errors: 0 };
	count.calls++;
	if (event.outcome !== "ok") count.errors++;
	pending.set(key, count);
	const wait = Math.max(0, lastFlushAt + settingsFrom(env).callCountsFlushMs - Date.now());
	const hold = scheduled.take(wait + FLUSH_LOST_AFTER_MS);
	if (hold === null) return;
	waitUntil(new Promise((resolve) => setTimeout(resolve, wait)).then(() => flush(namespace, hold)));
}

async function flush(namespace: DurableObjectNamespace<CallCountsDO>, hold: SlotHold): Promise<void> {
	hold.release();
	lastFlushAt = Date.now();
	const batch = [...pending.values()];
	pending.clear();
	if (batch.length === 0) return;
	try {
		await counter(namespace).add(batch);
	} catch (error) {
		// Figures for a page, not an answer: lost, and said so in the log.
		console.warn(`call counts: a batch of ${batch.length} was not written: ${String(error)}`);
	}
}

function counter(namespace: DurableObjectNamespace<CallCountsDO>): DurableObjectStub<CallCountsDO> {
	return namespace.get(namespace.idFromName(COUNTER_NAME));
}

/** Calls and errors per server over the last WINDOW_MINUTES, busiest first; null when no counter is bound. */
export async function lastHourCalls(env: Env): Promise<ServerCalls[] | null> {
	if (!env.CALL_COUNTS) return null;
	return counter(env.CALL_COUNTS).lastHour();
}

/** The gateway's call counts, one row per (minute, server). */
export class CallCountsDO extends DurableObject<Env> {
	private readonly sql: SqlStorage;

	constructor(ctx: DurableObjectState, env: Env) {
		super(ctx, env);
		this.sql = ctx.storage.sql;
		this.sql.exec(`CREATE TABLE IF NOT EXISTS call_counts (
			minute INTEGER NOT NULL,
			server TEXT NOT NULL,
			calls INTEGER NOT NULL,
			errors INTEGER NOT NULL,
			PRIMARY KEY (minute, server)
		)`);
	}

	/** Adds an isolate's batch, and drops what has left the window. */
	add(input: MinuteCount[]): void {
		const batch = BatchSchema.parse(input);
		for (const count of batch) {
			this.sql.exec(
				"INSERT INTO call_counts (minute, server, calls, errors) VALUES (?, ?, ?, ?) ON CONFLICT (minute, server) DO UPDATE SET calls = calls + excluded.calls, errors = errors + excluded.errors",
				count.minute,
				count.server,
				count.calls,
				count.errors,
			);
		}
		this.sql.exec("DELETE FROM call_counts WHERE minute < ?", Math.floor(Date.now() / MINUTE_MS) - KEEP_MINUTES);
	}

	lastHour(): ServerCalls[] {
		const since = Math.floor(Date.now() / MINUTE_MS) - WINDOW_MINUTES;
		return this.sql
			.exec<{ server: string; calls: number; errors: number }>(
				"SELECT server, SUM(calls) AS calls, SUM(errors) AS errors FROM call_counts WHERE minute > ? GROUP BY server ORDER BY calls DESC, server",
				since,
			)
			.toArray()
			.map((row) => ({ server: row.server, calls: row.calls, errors: row.errors }));
	}
}
