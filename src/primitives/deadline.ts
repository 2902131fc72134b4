/**
 * An abort signal that fires after `ms`, with a way to disarm it. Unlike
 * `AbortSignal.timeout`, a disarmed deadline leaves no timer behind, so a
 * finished call does not keep its Durable Object busy until the timeout
 * (docs/decisions/0008-disarmable-deadlines-instead-of-abortsignal-timeout.md):
 * upstream calls and telemetry exports use it.
 */
export interface Deadline {
	signal: AbortSignal;
	/** Disarms the timer; safe to call more than once. */
	clear(): void;
}

/** Starts a deadline; it also aborts when `parent` does (e.g. a stream its owner closes). */
export function startDeadline(ms: number, parent?: AbortSignal): Deadline {
	const controller = new AbortController();
	const timer = setTimeout(() => controller.abort(new DOMException("deadline passed", "TimeoutError")), ms);
	const onParentAbort = () => controller.abort(parent?.reason);
	parent?.addEventListener("abort", onParentAbort, { once: true });
	return {
		signal: controller.signal,
		clear: () => {
			clearTimeout(timer);
		},
	};
}
