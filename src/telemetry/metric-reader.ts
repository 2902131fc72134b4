import { AggregationTemporality, MetricReader } from "@opentelemetry/sdk-metrics";

/**
 * A metric reader that is read only when the gateway asks (at a flush whose export
 * interval has passed): no timer of its own, since a Worker does I/O only inside a request.
 *
 * DELTA temporality: an isolate lives for minutes or hours and is then gone without a
 * goodbye, and many run at once. Cumulative sums from each would restart at zero with every
 * new isolate and need a distinct series per isolate; deltas from all of them simply add up
 * in the backend.
 */
export class OnDemandMetricReader extends MetricReader {
	constructor() {
		super({ aggregationTemporalitySelector: () => AggregationTemporality.DELTA });
	}

	protected override onForceFlush(): Promise<void> {
		return Promise.resolve();
	}

	protected override onShutdown(): Promise<void> {
		return Promise.resolve();
	}
}
