/**
 * Workers allow only six simultaneous outgoing connections per invocation, so
 * fan-out to members runs at most this many at a time.
 */
export const MAX_PARALLEL_UPSTREAMS = 6;

/** Runs `task` for every item with at most `limit` running at once. */
export async function forEachBounded<T>(
	items: readonly T[],
	task: (item: T) => Promise<void>,
	limit = MAX_PARALLEL_UPSTREAMS,
): Promise<void> {
	let next = 0;
	const worker = async () => {
		while (next < items.length) {
			const item = items[next++] as T;
			await task(item);
		}
	};
	await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
