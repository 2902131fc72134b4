import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionDO } from "../src/session/session-do.ts";
import { type BufferLimits, EventBuffer } from "../src/session/streams/event-buffer.ts";
import { ManualClock } from "./support/session-object.ts";

const LIMITS: BufferLimits = { maxEvents: 5, maxBytes: 10_000, maxAgeMs: 60_000 };

/** Runs `body` with a buffer on the real storage of a Durable Object of its own. */
function withBuffer<T>(
	body: (make: () => EventBuffer, clock: ManualClock, storage: DurableObjectStorage) => Promise<T>,
	limits: BufferLimits = LIMITS,
): Promise<T> {
	const stub = env.SESSIONS.get(env.SESSIONS.newUniqueId());
	return runInDurableObject(stub, async (_instance: SessionDO, state) => {
		const clock = new ManualClock(1_000_000);
		return body(() => new EventBuffer(state.storage, limits, () => clock), clock, state.storage);
	});
}

const seqs = (events: Array<{ seq: number }> | null) => events?.map((event) => event.seq) ?? null;

describe("the session's event buffer", () => {
	it("keeps at most EVENT_BUFFER_EVENTS: a resumption from before what it holds is refused, one within gets exactly the rest of its stream", async () => {
		const outcome = await withBuffer(async (make) => {
			const buffer = make();
			buffer.startEmpty();
			for (let seq = 1; seq <= 8; seq++) buffer.append("pA", seq, `{"n":${seq}}`);
			buffer.append("gB", 1, '{"other":1}');
			return {
				tooOld: seqs(buffer.after("pA", 2, 8)),
				within: seqs(buffer.after("pA", 5, 8)),
				other: seqs(buffer.after("gB", 0, 1)),
			};
		});
		// The session holds 5 events: pA 5..8 and gB 1.
		expect(outcome).toEqual({ tooOld: null, within: [6, 7, 8], other: [1] });
	});

	it("keeps at most EVENT_BUFFER_BYTES, dropping the oldest first", async () => {
		const outcome = await withBuffer(
			async (make) => {
				const buffer = make();
				buffer.startEmpty();
				for (let seq = 1; seq <= 4; seq++) buffer.append("pA", seq, "x".repeat(400));
				return { fromStart: seqs(buffer.after("pA", 0, 4)), fromTwo: seqs(buffer.after("pA", 2, 4)) };
			},
			{ ...LIMITS, maxBytes: 1_000 },
		);
		expect(outcome).toEqual({ fromStart: null, fromTwo: [3, 4] });
	});

	it("drops events older than EVENT_BUFFER_SECONDS: resuming past them is refused", async () => {
		const outcome = await withBuffer(async (make, clock) => {
			const buffer = make();
			buffer.startEmpty();
			buffer.append("pA", 1, "{}");
			clock.advance(30_000);
			buffer.append("pA", 2, "{}");
			const fresh = seqs(buffer.after("pA", 0, 2));
			clock.advance(40_000);
			return { fresh, aged: seqs(buffer.after("pA", 0, 2)), recent: seqs(buffer.after("pA", 1, 2)) };
		});
		expect(outcome).toEqual({ fresh: [1, 2], aged: null, recent: [2] });
	});

	it("an event too large to keep is a gap: resuming from before it starts fresh, from after it works", async () => {
		const outcome = await withBuffer(async (make) => {
			const buffer = make();
			buffer.startEmpty();
			buffer.append("pA", 1, "{}");
			buffer.append("pA", 2, "y".repeat(20_000));
			buffer.append("pA", 3, "{}");
			return { before: seqs(buffer.after("pA", 1, 3)), after: seqs(buffer.after("pA", 2, 3)) };
		});
		expect(outcome).toEqual({ before: null, after: [3] });
	});

	it("a new instance (after an eviction) reads what an earlier one kept from storage, and resumes from it", async () => {
		const outcome = await withBuffer(async (make) => {
			const first = make();
			first.startEmpty();
			for (let seq = 1; seq <= 3; seq++) first.append("gA", seq, `{"n":${seq}}`);
			first.flush();
			const second = make();
			await second.ready();
			const missed = second.after("gA", 1, undefined);
			return { seqs: seqs(missed), data: missed?.map((event) => event.data), reads: second.reads };
		});
		expect(outcome).toEqual({ seqs: [2, 3], data: ['{"n":2}', '{"n":3}'], reads: 1 });
	});

	it("events are written in one batch, a slot overwritten before the batch is written once, and nothing is written after the session ended", async () => {
		const outcome = await withBuffer(
			async (make, _clock, storage) => {
				const buffer = make();
				buffer.startEmpty();
				for (let seq = 1; seq <= 5; seq++) buffer.append("pA", seq, "{}");
				const beforeFlush = (await storage.list({ prefix: "ev:" })).size;
				buffer.flush();
				const afterFlush = (await storage.list({ prefix: "ev:" })).size;
				const rows = buffer.writes;
				buffer.append("pA", 6, "{}");
				buffer.discard();
				buffer.flush();
				return { beforeFlush, afterFlush, rows, afterDiscard: buffer.writes };
			},
			{ ...LIMITS, maxEvents: 3 },
		);
		// Five events in a ring of three slots: the batch writes three rows.
		expect(outcome).toEqual({ beforeFlush: 0, afterFlush: 3, rows: 3, afterDiscard: 3 });
	});

	it("a stream it never saw is not resumable", async () => {
		const outcome = await withBuffer(async (make) => {
			const buffer = make();
			buffer.startEmpty();
			buffer.append("pA", 1, "{}");
			return seqs(buffer.after("pZ", 0, undefined));
		});
		expect(outcome).toBeNull();
	});
});
