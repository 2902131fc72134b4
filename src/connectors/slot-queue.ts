import type { Timers } from "../primitives/clock.ts";

/** How long a request waits for a busy connector's slot before it is refused. */
export const SLOT_WAIT_MS = 5_000;

/** How a wait for a slot ended: `ready` holds a reserved slot the waiter must `take`. */
export type SlotWait = "ready" | "timeout" | "gone" | "aborted";

interface Waiter {
	settle: (outcome: SlotWait) => void;
}

/**
 * Backpressure at a connector's in-flight cap: a request that finds every
 * slot taken waits here, in arrival order, for up to SLOT_WAIT_MS. A slot
 * that frees is reserved for the first waiter at once, so a request arriving
 * meanwhile sees the connector still full and queues behind it instead of
 * overtaking. A waiter whose caller went away leaves the queue; one whose
 * connector went away is told so (nothing was sent: it may try elsewhere).
 * The waits live in memory: the object cannot hibernate while a request is
 * open anyway.
 */
export class SlotQueue {
	private readonly waiting = new Map<string, Waiter[]>();
	private readonly reserved = new Map<string, number>();

	constructor(
		/** Read at each wait, so a test that swaps the object's timers swaps these. */
		private readonly timers: () => Timers,
	) {}

	/** Slots of `connectorId` handed to waiters that have not yet sent their request. */
	reservedFor(connectorId: string): number {
		return this.reserved.get(connectorId) ?? 0;
	}

	/** Requests waiting for a slot of `connectorId`. */
	waitersOf(connectorId: string): number {
		return this.waiting.get(connectorId)?.length ?? 0;
	}

	/** Waits for a slot of `connectorId`, at most SLOT_WAIT_MS, or until `signal` aborts. */
	wait(connectorId: string, signal: AbortSignal): Promise<SlotWait> {
		if (signal.aborted) return Promise.resolve("aborted");
		return new Promise<SlotWait>((resolve) => {
			const queue = this.waiting.get(connectorId) ?? [];
			this.waiting.set(connectorId, queue);
			const leave = () => {
				const at = queue.indexOf(waiter);
				if (at >= 0) queue.splice(at, 1);
				if (queue.length === 0 && this.waiting.get(connectorId) === queue) this.waiting.delete(connectorId);
			};
			const onAbort = () => waiter.settle("aborted");
			const cancelTimer = this.timers().set(SLOT_WAIT_MS, () => waiter.settle("timeout"));
			const waiter: Waiter = {
				settle: (outcome) => {
					cancelTimer();
					signal.removeEventListener("abort", onAbort);
					leave();
					resolve(outcome);
				},
			};
			signal.addEventListener("abort", onAbort, { once: true });
			queue.push(waiter);
		});
	}

	/** A waiter that was `ready` now holds its slot as a request in flight. */
	take(connectorId: string): void {
		const count = this.reservedFor(connectorId);
		if (count <= 1) this.reserved.delete(connectorId);
		else this.reserved.set(connectorId, count - 1);
	}

	/** A slot of `connectorId` freed: reserved for the first waiter, if any. */
	freed(connectorId: string): void {
		const first = this.waiting.get(connectorId)?.[0];
		if (!first) return;
		this.reserved.set(connectorId, this.reservedFor(connectorId) + 1);
		first.settle("ready");
	}

	/** `connectorId` went away: its waiters are told, and its reservations forgotten. */
	gone(connectorId: string): void {
		for (const waiter of [...(this.waiting.get(connectorId) ?? [])]) waiter.settle("gone");
		this.waiting.delete(connectorId);
		this.reserved.delete(connectorId);
	}
}
