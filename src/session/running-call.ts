import type { ActivityMeter } from "./activity-meter.ts";
import type { SessionLifecycle } from "./session-lifecycle.ts";
import { withCompletion } from "./streams/stream-completion.ts";

/**
 * A client's request running in the session, from the moment it is let in
 * until its reply is over, ended exactly once: while it runs the lifecycle
 * counts it in flight (expiry waits for it, invariant "Alarm-driven expiry")
 * and the object counts as active (what Cloudflare bills).
 *
 * The call ends itself. Its reply leaves the session through `leave`, once,
 * and whatever that reply is, the call's end is provided for there: a reply
 * without a body ends it at once; a body the session already passes through a
 * stream of its own (a relay, a member's reply read onto a session stream, a
 * task's result stream) was marked with `endsWith` where that stream was
 * made, and ends it from inside; any other body is wrapped once, so that its
 * end, failure or cancellation ends the call. Nothing else has to remember to
 * end it; a reply answered in full on the spot may end it early (`answered`),
 * which saves the wrapper. A request that fails before it has a reply is
 * ended where it began.
 */
export class RunningCall {
	private ended = false;
	/** The body whose end is hooked to this call where it was made; null while none is. */
	private carrier: ReadableStream<Uint8Array> | null = null;
	/** What goes with the call: its place in the maps keyed by request id (one or two per call). */
	private releases: Array<() => void> | null = null;

	private constructor(
		private readonly lifecycle: SessionLifecycle | null,
		private readonly activity: ActivityMeter | null,
	) {}

	/** A client's request starts: counted in flight and active until it ends. */
	static begin(lifecycle: SessionLifecycle, activity: ActivityMeter): RunningCall {
		lifecycle.begin();
		activity.open();
		return new RunningCall(lifecycle, activity);
	}

	/**
	 * A request the session sends within another one's time (a member's page of
	 * tasks for a client's `tasks/list`): that one counts; this one only lets
	 * go of its places when it ends.
	 */
	static within(): RunningCall {
		return new RunningCall(null, null);
	}

	/** Ends the call: what goes with it goes, then it is no longer counted. Later calls do nothing. */
	end(): void {
		if (this.ended) return;
		this.ended = true;
		if (this.releases) for (const release of this.releases) release();
		this.lifecycle?.finish();
		this.activity?.close();
	}

	/** Runs `release` when the call ends (at once if it has). */
	onEnd(release: () => void): void {
		if (this.ended) {
			release();
			return;
		}
		if (this.releases) this.releases.push(release);
		else this.releases = [release];
	}

	/** A reply answered in full here, with nothing left to read from upstream: the call ends now. */
	answered(reply: Response): Response {
		this.end();
		return reply;
	}

	/**
	 * `body` is the reply's, and the call's end is already hooked to it where
	 * it was made: to its end, failure or cancellation (a relay), or to work
	 * the session carries on past the client (a member's reply being read).
	 */
	endsWith<B extends ReadableStream<Uint8Array> | null>(body: B): B {
		this.carrier = body;
		return body;
	}

	/**
	 * `outer` reads `inner`'s body through to its end or cancels it (a tee
	 * whose copy is read beside the client): when `inner`'s body ended the
	 * call, `outer`'s does. Returns `outer`.
	 */
	carriedOn(inner: Response, outer: Response): Response {
		if (this.carrier !== null && inner.body === this.carrier) this.carrier = outer.body;
		return outer;
	}

	/**
	 * The reply as it leaves the session: the one place every reply passes,
	 * so none leaves without its end provided for (see the class comment).
	 */
	leave(reply: Response): Response {
		const body = reply.body;
		if (body === null) return this.answered(reply);
		if (this.ended || body === this.carrier) return reply;
		return new Response(
			withCompletion(body, () => this.end()),
			reply,
		);
	}
}
