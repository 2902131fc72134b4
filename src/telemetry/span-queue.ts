import { TraceFlags } from "@opentelemetry/api";
import type { ReadableSpan, Span, SpanProcessor } from "@opentelemetry/sdk-trace";

/**
 * Finished, sampled spans waiting for the isolate's next export. Bounded: when the
 * collector is slow or gone, what does not fit is dropped and counted, so a dead
 * collector costs memory up to `capacity` spans and nothing more. The SDK's
 * BatchSpanProcessor is not used: it exports on its own timer, and a Worker may only
 * do I/O inside a request (here: in its `waitUntil`, at `flush`).
 */
export class SpanQueue implements SpanProcessor {
	#spans: ReadableSpan[] = [];
	/** When each queued span was queued (ms, the isolate's clock), oldest first. */
	#queuedAt: number[] = [];
	#dropped = 0;

	constructor(
		readonly capacity: number,
		readonly now: () => number = Date.now,
	) {}

	onStart(_span: Span): void {}

	onEnd(span: ReadableSpan): void {
		if ((span.spanContext().traceFlags & TraceFlags.SAMPLED) === 0) return;
		if (this.#spans.length >= this.capacity) {
			this.#dropped++;
			return;
		}
		this.#spans.push(span);
		this.#queuedAt.push(this.now());
	}

	/** The oldest `max` spans queued (all of them without `max`), leaving the rest queued. */
	take(max = Number.POSITIVE_INFINITY): ReadableSpan[] {
		if (this.#spans.length <= max) {
			const spans = this.#spans;
			this.#spans = [];
			this.#queuedAt = [];
			return spans;
		}
		this.#queuedAt.splice(0, max);
		return this.#spans.splice(0, max);
	}

	/** How long ago (ms) the oldest queued span was queued; 0 when nothing is queued. */
	oldestAge(): number {
		const oldest = this.#queuedAt[0];
		return oldest === undefined ? 0 : this.now() - oldest;
	}

	get size(): number {
		return this.#spans.length;
	}

	/** Spans dropped because the queue was full, since the last call. */
	takeDropped(): number {
		const dropped = this.#dropped;
		this.#dropped = 0;
		return dropped;
	}

	forceFlush(): Promise<void> {
		return Promise.resolve();
	}

	shutdown(): Promise<void> {
		return Promise.resolve();
	}
}
