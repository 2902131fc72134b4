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
	#dropped = 0;

	constructor(readonly capacity: number) {}

	onStart(_span: Span): void {}

	onEnd(span: ReadableSpan): void {
		if ((span.spanContext().traceFlags & TraceFlags.SAMPLED) === 0) return;
		if (this.#spans.length >= this.capacity) {
			this.#dropped++;
			return;
		}
		this.#spans.push(span);
	}

	/** Everything queued, leaving the queue empty. */
	take(): ReadableSpan[] {
		const spans = this.#spans;
		this.#spans = [];
		return spans;
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
