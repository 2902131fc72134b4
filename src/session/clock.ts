/** Where the session layer reads time. Tests swap in a controllable clock. */
export interface Clock {
	now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/**
 * Where the session layer sets timers that must follow the clock (the recheck
 * of a busy session). Tests swap in timers they fire by hand.
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
