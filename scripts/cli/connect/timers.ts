/**
 * The connector's time, as a small interface: the process uses the real one;
 * a test that wants to step through heartbeats or backoff injects its own.
 */
export interface Timers {
	now(): number;
	setTimeout(run: () => void, ms: number): NodeJS.Timeout;
	clearTimeout(handle: NodeJS.Timeout): void;
	setInterval(run: () => void, ms: number): NodeJS.Timeout;
	clearInterval(handle: NodeJS.Timeout): void;
}

export const systemTimers: Timers = {
	now: () => Date.now(),
	setTimeout: (run, ms) => setTimeout(run, ms),
	clearTimeout: (handle) => clearTimeout(handle),
	setInterval: (run, ms) => setInterval(run, ms),
	clearInterval: (handle) => clearInterval(handle),
};
