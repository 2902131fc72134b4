/**
 * One piece of background work at a time (an export, a batched write), held until it ends or
 * until its deadline, whichever comes first. Work handed to a request's `waitUntil` may never
 * settle once that request's context has ended: the runtime drops its pending I/O and timers, so
 * a flag cleared only when the work ends can stay set for the isolate's life, and nothing after it
 * starts again. Past its deadline a hold counts as lost and the slot can be taken again; the lost
 * holder, should it ever wake, finds it holds nothing (`current` is false) and leaves alone what
 * its successor does.
 *
 * @example
 * const slot = new LapsingSlot();
 * const hold = slot.take(5_000); // null while another hold is within its deadline
 * if (hold) waitUntil(work().finally(() => hold.release()));
 */
export class LapsingSlot {
	#hold: { until: number } | null = null;

	constructor(private readonly now: () => number = Date.now) {}

	/** A hold for `ms` from now; null while another hold is within its deadline (a lapsed one is taken over). */
	take(ms: number): SlotHold | null {
		if (this.#hold !== null && this.now() < this.#hold.until) return null;
		const mine = { until: this.now() + ms };
		this.#hold = mine;
		const slot = this;
		return {
			get current() {
				return slot.#hold === mine;
			},
			renew(more: number): boolean {
				if (slot.#hold !== mine) return false;
				mine.until = slot.now() + more;
				return true;
			},
			release(): void {
				if (slot.#hold === mine) slot.#hold = null;
			},
		};
	}
}

/** What `LapsingSlot.take` gives its holder. */
export interface SlotHold {
	/** Still the slot's hold: neither released nor, once lapsed, taken over by another. */
	readonly current: boolean;
	/** Moves the deadline to `ms` from now; false, and nothing moved, when this is no longer the hold. */
	renew(ms: number): boolean;
	/** Frees the slot, if this is still its hold. */
	release(): void;
}
