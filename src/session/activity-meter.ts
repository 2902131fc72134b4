import type { Clock } from "../primitives/clock.ts";
import { once } from "../primitives/once.ts";

/**
 * Measures how long a Durable Object is kept active: Cloudflare bills its wall
 * time while a request to it is being handled, including while a streamed body
 * it returned is still open. Each such piece of work is one activity, from
 * `enter` until its `leave`; time counts while at least one is open, so
 * overlapping activities count once.
 *
 * @example
 * const leave = meter.enter();
 * try {
 *   await work();
 * } finally {
 *   leave();
 * }
 */
export class ActivityMeter {
	private opened = 0;
	/** When the current active interval began (meaningful while `opened` > 0). */
	private since = 0;
	/** Active time of the intervals already over. */
	private closedMs = 0;

	constructor(private readonly clock: () => Clock) {}

	/** Starts an activity; the returned `leave` ends it, however often it is called. */
	enter(): () => void {
		this.open();
		return once(() => this.close());
	}

	/** Starts an activity its caller ends with exactly one `close` (a running call, which ends once by itself). */
	open(): void {
		if (this.opened++ === 0) this.since = this.clock().now();
	}

	/** Ends an activity started with `open`. */
	close(): void {
		if (--this.opened === 0) this.closedMs += this.clock().now() - this.since;
	}

	/** Active time so far, the interval still open included. */
	get activeMs(): number {
		return this.opened > 0 ? this.closedMs + this.clock().now() - this.since : this.closedMs;
	}
}
