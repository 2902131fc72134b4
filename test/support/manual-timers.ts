import type { Timers } from "../../src/primitives/clock.ts";

/** Timers that follow a manual clock: a test moves the clock, then runs what has come due. */
export class ManualTimers implements Timers {
	private pending: Array<{ at: number; task: () => void }> = [];

	constructor(private readonly clock: { now(): number }) {}

	set(ms: number, task: () => void): () => void {
		const entry = { at: this.clock.now() + ms, task };
		this.pending.push(entry);
		return () => {
			this.pending = this.pending.filter((candidate) => candidate !== entry);
		};
	}

	/** Timers set and not yet run or cancelled. */
	get count(): number {
		return this.pending.length;
	}

	/** Runs every timer due by the clock's time; returns how many ran. */
	runDue(): number {
		const due = this.pending.filter((entry) => entry.at <= this.clock.now());
		this.pending = this.pending.filter((entry) => !due.includes(entry));
		for (const entry of due) entry.task();
		return due.length;
	}
}
