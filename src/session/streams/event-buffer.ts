import { z } from "zod";
import type { Clock } from "../../primitives/clock.ts";

/** How much of a session's stream history is kept for resumption. */
export interface BufferLimits {
	maxEvents: number;
	maxBytes: number;
	maxAgeMs: number;
}

/** One buffered event: its stream, its place in that stream, and the JSON-RPC message it carried (null: too large to keep). */
export interface BufferedEvent {
	stream: string;
	seq: number;
	at: number;
	data: string | null;
	/** Its place among all the session's events: the buffer's order, and its storage slot. */
	n: number;
}

const PREFIX = "ev:";
/** SQLite-backed Durable Object storage takes values up to 2 MB; an event near that is not kept. */
const MAX_STORED_EVENT_BYTES = 1_900_000;

const StoredEvent = z.object({
	stream: z.string(),
	seq: z.number().int(),
	at: z.number(),
	data: z.string().nullable(),
	n: z.number().int(),
});

/**
 * The session's recent SSE events, in Durable Object storage, so a client
 * that lost a stream can resume it with Last-Event-ID, even from another
 * instance after eviction. Bounded by count, bytes and age; the oldest go
 * first, so within one stream what remains is always a contiguous tail.
 * An event too large to keep is remembered as a gap: a resumption that
 * would need it starts fresh instead of skipping it.
 *
 * Storage is a ring of `maxEvents` slots: each new event overwrites the
 * slot of the one it pushes out, so keeping an event costs one write and
 * dropping one costs none (events past their age are skipped, and their
 * slots overwritten in turn). Events are served from memory while the
 * object lives and written in batches by `flush`: when a call's stream ends
 * and when the edge has taken a listening window's events, so whatever a
 * client may come back for is durable before the object can fall idle (and
 * be evicted), at one storage operation per call rather than per event. A
 * timer would do it with fewer operations, but a pending timer measurably
 * slowed every call of the session under workerd.
 */
export class EventBuffer {
	writes = 0;
	reads = 0;
	/** Oldest first; null until loaded in this instance. */
	private events: BufferedEvent[] | null = null;
	private loading: Promise<BufferedEvent[]> | null = null;
	private bytes = 0;
	/** The last event's `n`. */
	private last = 0;
	/** Events not yet written, by storage slot (a later event in the same slot replaces an earlier one). */
	private unwritten = new Map<string, BufferedEvent>();

	constructor(
		private readonly storage: DurableObjectStorage,
		private readonly limits: BufferLimits,
		private readonly clock: () => Clock,
	) {}

	/** A new session's object holds no events: no read is needed to know it. */
	startEmpty(): void {
		this.events ??= [];
	}

	/** Loads what an earlier instance kept (once per instance); `append` and `after` need it. */
	async ready(): Promise<void> {
		await this.load();
	}

	/**
	 * Keeps one event (after `ready`); `flush` writes it. The write never
	 * holds the event back (`allowUnconfirmed`): the event itself goes to the
	 * client at once, and a write lost in a crash costs only the resumption of
	 * an event the client has most likely already received.
	 */
	append(stream: string, seq: number, data: string): void {
		const events = this.events;
		if (!events) throw new Error("EventBuffer.append before ready()");
		const kept = data.length <= Math.min(MAX_STORED_EVENT_BYTES, this.limits.maxBytes) ? data : null;
		const event: BufferedEvent = { stream, seq, at: this.clock().now(), data: kept, n: ++this.last };
		events.push(event);
		this.bytes += kept?.length ?? 0;
		this.unwritten.set(this.slot(event.n), event);
		this.prune(events);
	}

	/** Writes the events not yet written, in one storage operation. */
	flush(): void {
		if (this.unwritten.size === 0) return;
		const batch = Object.fromEntries(this.unwritten);
		this.writes += this.unwritten.size;
		this.unwritten = new Map();
		this.storage.put(batch, { allowUnconfirmed: true }).catch(storageFailed);
	}

	/** The session ended and its storage is being cleared: nothing more is written. */
	discard(): void {
		this.unwritten.clear();
		this.events = [];
		this.bytes = 0;
	}

	/**
	 * The events of `stream` after `seq`, oldest first; null when they cannot
	 * all be given (the stream is unknown here, or some were dropped or too large).
	 * `lastSeq` is the stream's latest seq if it is still live in memory.
	 */
	after(stream: string, seq: number, lastSeq: number | undefined): BufferedEvent[] | null {
		const events = this.events;
		if (!events) throw new Error("EventBuffer.after before ready()");
		this.prune(events);
		const own = events.filter((event) => event.stream === stream);
		const first = own[0];
		if (first === undefined) {
			// Nothing kept: fine only if the live stream has sent nothing since.
			return lastSeq !== undefined && lastSeq <= seq ? [] : null;
		}
		if (first.seq > seq + 1) return null;
		const missed = own.filter((event) => event.seq > seq);
		return missed.some((event) => event.data === null) ? null : missed;
	}

	private slot(n: number): string {
		return `${PREFIX}${String(n % this.limits.maxEvents).padStart(6, "0")}`;
	}

	/**
	 * Drops the oldest events until the limits hold. Past the count, the new
	 * event's write already overwrote the oldest's slot; past the bytes, the
	 * oldest slots are deleted (large events only); past the age, events are
	 * only forgotten here.
	 */
	private prune(events: BufferedEvent[]): void {
		const oldest = this.clock().now() - this.limits.maxAgeMs;
		const deleted: string[] = [];
		for (;;) {
			const first = events[0];
			if (!first) break;
			const overCount = events.length > this.limits.maxEvents;
			const overBytes = this.bytes > this.limits.maxBytes;
			if (!overCount && !overBytes && first.at >= oldest) break;
			events.shift();
			this.bytes -= first.data?.length ?? 0;
			if (overBytes && !overCount) {
				const slot = this.slot(first.n);
				if (this.unwritten.get(slot) === first) this.unwritten.delete(slot);
				else deleted.push(slot);
			}
		}
		for (let i = 0; i < deleted.length; i += 128) {
			this.writes++;
			this.storage.delete(deleted.slice(i, i + 128), { allowUnconfirmed: true }).catch(storageFailed);
		}
	}

	private load(): Promise<BufferedEvent[]> {
		if (this.events) return Promise.resolve(this.events);
		this.loading ??= (async () => {
			this.reads++;
			const stored = await this.storage.list({ prefix: PREFIX });
			const events: BufferedEvent[] = [];
			for (const value of stored.values()) {
				const parsed = StoredEvent.safeParse(value);
				if (parsed.success) events.push(parsed.data);
			}
			events.sort((a, b) => a.n - b.n);
			if (this.events === null) {
				this.events = events.slice(-this.limits.maxEvents);
				this.last = events.at(-1)?.n ?? 0;
				this.bytes = this.events.reduce((sum, event) => sum + (event.data?.length ?? 0), 0);
				this.prune(this.events);
			}
			return this.events;
		})();
		return this.loading;
	}
}

function storageFailed(error: unknown): void {
	// The event was already sent; only a later resumption of it is lost.
	console.warn(`event buffer: storage write failed: ${error instanceof Error ? error.message : String(error)}`);
}
