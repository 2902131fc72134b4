/** Where the session layer reads time. Tests swap in a controllable clock. */
export interface Clock {
	now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };
