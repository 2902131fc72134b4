/** Where a Durable Object reads time (a session, a connector server). Tests swap in a controllable clock. */
export interface Clock {
	now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/**
 * Where a Durable Object sets timers that must follow the clock (the recheck
 * of a busy session, a request waiting for a connector's slot). Tests swap in timers they fire by hand.
 */
export interface Timers {
	/** Runs `task` after `ms`; the returned function cancels it. */
	set(ms: number, task: () => void): () => void;
}

export const systemTimers: Timers = {
	set(ms, task) {
		const timer = setTimeout(task, ms);
		return () => clearTimeout(timer);
	},
};
