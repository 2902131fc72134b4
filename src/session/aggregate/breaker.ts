import type { Clock } from "../../primitives/clock.ts";

/** First reconnect delay after a transport failure; it doubles with each further failure. */
const FIRST_BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 60_000;
/** After this many consecutive transport failures, all requests to the member fail fast until the cool-down ends. */
const OPEN_AFTER_FAILURES = 3;

interface MemberHealth {
	failures: number;
	retryAt: number;
}

/**
 * Per-member reconnect backoff and circuit breaker, kept in the SessionDO as
 * plain timestamps compared with its clock: no timer outlives a request.
 */
export class Breaker {
	private readonly members = new Map<string, MemberHealth>();

	constructor(private readonly clock: () => Clock) {}

	/** Milliseconds until a new upstream session may be attempted; 0 when it may be now. */
	reconnectWait(member: string): number {
		const health = this.members.get(member);
		if (!health || health.failures === 0) return 0;
		return Math.max(0, health.retryAt - this.clock().now());
	}

	/** Milliseconds until any request may be sent; 0 unless the breaker is open. */
	openFor(member: string): number {
		const health = this.members.get(member);
		if (!health || health.failures < OPEN_AFTER_FAILURES) return 0;
		return Math.max(0, health.retryAt - this.clock().now());
	}

	/** A transport failure (unreachable, reset, failed handshake): back off further. */
	failure(member: string): void {
		const failures = (this.members.get(member)?.failures ?? 0) + 1;
		const backoff = Math.min(FIRST_BACKOFF_MS * 2 ** (failures - 1), MAX_BACKOFF_MS);
		this.members.set(member, { failures, retryAt: this.clock().now() + backoff });
	}

	/** The member answered: backoff and breaker reset. */
	success(member: string): void {
		this.members.delete(member);
	}
}
