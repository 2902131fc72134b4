/**
 * Waits until `check` holds: returns a value other than false, null or
 * undefined without throwing. Polls every few milliseconds and resolves with
 * that value. After `timeoutMs` it fails with the check's last error (so an
 * assertion inside the check shows its own diff) or, when the check simply
 * did not hold, with `what`. The one way tests wait for something that
 * happens in the background: never a fixed sleep.
 */
export async function eventually<T>(
	check: () => T | Promise<T>,
	what = "condition",
	timeoutMs = 5_000,
): Promise<Exclude<T, false | null | undefined>> {
	const started = Date.now();
	let lastError: unknown;
	for (;;) {
		try {
			const value = await check();
			if (value !== false && value !== null && value !== undefined)
				return value as Exclude<T, false | null | undefined>;
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
