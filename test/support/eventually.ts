/**
 * Waits until `check` holds (returns true, or a value other than false/undefined
 * without throwing), polling every few milliseconds; fails with the last
 * error or `what` after `timeoutMs`. The one way tests wait for something
 * that happens in the background: never a fixed sleep.
 */
export async function eventually<T>(
	check: () => T | Promise<T>,
	what = "condition",
	timeoutMs = 5_000,
): Promise<Exclude<T, false | undefined>> {
	const started = Date.now();
	let lastError: unknown;
	for (;;) {
		try {
			const value = await check();
			if (value !== false && value !== undefined) return value as Exclude<T, false | undefined>;
			lastError = undefined;
		} catch (error) {
			lastError = error;
		}
		if (Date.now() - started > timeoutMs) {
			throw lastError instanceof Error ? lastError : new Error(`${what} not reached within ${timeoutMs} ms`);
		}
		await new Promise((resolve) => setTimeout(resolve, 5));
	}
}
