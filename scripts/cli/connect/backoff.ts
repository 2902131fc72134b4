/**
 * How long the connector waits before dialling again: exponential backoff
 * with full jitter (a uniformly random wait up to the exponential bound), so
 * that a gateway deploy that drops every connector at once is not met by all
 * of them dialling back in the same instant.
 */

export interface BackoffSettings {
	/** The bound of the first wait. */
	baseMs: number;
	/** The largest bound, however many attempts failed. */
	capMs: number;
}

/** 0.5 s, doubling up to 30 s. */
export const DEFAULT_BACKOFF: BackoffSettings = { baseMs: 500, capMs: 30_000 };

/** A connection that lasted this long was a success: the next drop starts the backoff again from its base. */
export function lastedLongEnough(settings: BackoffSettings, lastedMs: number): boolean {
	return lastedMs >= settings.capMs;
}

/**
 * The wait before dial number `attempt` (0 for the first retry): a random
 * point in [0, min(cap, base · 2^attempt)). `random` is Math.random unless a
 * test injects its own.
 */
export function backoffDelayMs(attempt: number, settings: BackoffSettings, random: () => number = Math.random): number {
	const bound = Math.min(settings.capMs, settings.baseMs * 2 ** Math.min(attempt, 30));
	return Math.floor(random() * bound);
}
