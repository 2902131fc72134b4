import { describeError } from "../mcp/gateway-error.ts";
import { once } from "../primitives/once.ts";
import type { ListenFrames, ListenPlan, SessionDO, SessionScope, WindowEnd } from "../session/session-do.ts";
import { type Clock, systemClock, systemTimers, type Timers } from "../session/session-do.ts";
import { readMembers } from "./listen-members.ts";
import { readUpstream } from "./listen-upstream.ts";
import type { McpContext } from "./request-context.ts";

export type SessionStub = DurableObjectStub<SessionDO>;

/**
 * Where the edge's listening streams read time and set timers (a window's
 * end, the wait before the next window). Tests swap in a clock and timers
 * they move by hand; the edge runs in one isolate with them, so one holder
 * serves every request.
 */
export const listenTime: { clock: Clock; timers: Timers } = { clock: systemClock, timers: systemTimers };

/** No window yet: the upstream's stream ended early lately, and is not listened to for `retryMs`. */
export type ListenLater = Extract<ListenPlan, { kind: "wait" }>;

const encoder = new TextEncoder();

/**
 * The pump behind every listening path (a 2025 client's GET, `2025-11-25/listen.ts`; a
 * 2026-07-28 `subscriptions/listen`, `2026-07-28/listen.ts`): one window as the
 * session plans it, its stream of 2025 SSE events read from the upstream's own
 * GET stream (transparent, `listen-upstream.ts`) or the members' (aggregate,
 * `listen-members.ts`); else the session's own answer (a refusal, a call's
 * stream it resumes), or how long until there is a window. `c`: the request
 * that listens (a window may outlive its handler: a 2026-07-28 listen opens many).
 */
export async function openWindow(
	c: McpContext,
	stub: SessionStub,
	lastEventId: string | null,
): Promise<Response | ListenLater> {
	const plan = await planOf(stub, c.get("scope"), lastEventId);
	if (plan instanceof Response || plan.kind === "wait") return plan;
	const window = new ListeningWindow(c, stub, plan.window);
	return plan.kind === "upstream" ? readUpstream(window, plan) : readMembers(window, plan);
}

async function planOf(stub: SessionStub, scope: SessionScope, lastEventId: string | null) {
	return (await stub.listen(scope, lastEventId)) as ListenPlan | Response;
}

/**
 * What a window is, whatever it reads (docs/decisions/0022): its stream to
 * the client, its time, the session told how it (or a source in it) ended and
 * what that answers written, and its client's leaving. The edge carries it
 * because Workers bill CPU, not the wall time a quiet stream stays open, so a
 * client that only listens costs the session's object a few milliseconds a
 * window. Calls to the object go one at a time, in order, so the client sees
 * events in the order they came. A window ends by the session's next recheck,
 * which the session makes when told the window's time was up.
 */
export class ListeningWindow {
	/** The client's stream: whole SSE events only, so a window's end never cuts one. */
	readonly body: ReadableStream<Uint8Array>;
	private readonly writer: WritableStreamDefaultWriter<Uint8Array>;
	/** Aborted once the window is over here (its end written, or its client gone): every read of it stops. */
	private readonly stop = new AbortController();
	readonly signal = this.stop.signal;
	private chain: Promise<void> = Promise.resolve();
	/** The session knows this window is over (its time was up, or it said so): the client leaving needs no word. */
	private over = false;
	private collecting = false;
	private cancelTimer = () => {};

	constructor(
		readonly c: McpContext,
		readonly stub: SessionStub,
		/** Names the window in the session's calls. */
		public id: string,
		readonly scope: SessionScope = c.get("scope"),
	) {
		const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
		this.body = readable;
		this.writer = writable.getWriter();
		this.writer.closed.catch(this.close);
	}

	/** The session's plan for a window in place of this one (its upstream session expired). */
	replan(): Promise<ListenPlan | Response> {
		return planOf(this.stub, this.scope, null);
	}

	/** Starts the window's time: at its end the window ends `{ by: "time" }`. */
	start(windowMs: number): void {
		this.cancelTimer = listenTime.timers.set(windowMs, () => void this.end({ by: "time" }));
	}

	/** Writes whole events to the client; one that does not go through (the client has gone) closes the window. */
	send(events: string | Uint8Array): Promise<void> {
		return this.writer.write(typeof events === "string" ? encoder.encode(events) : events).catch(this.close);
	}

	/** Runs `step` once the session calls before it are done; a failure ends the stream. */
	inOrder(step: () => Promise<unknown>): Promise<void> {
		this.chain = this.chain.then(step).then(() => undefined, this.fail);
		return this.chain;
	}

	/** Writes what the session answered: its frames, or the window's end (null: over there, or it could not be told). */
	deliver(answer: ListenFrames | null): void {
		if (answer === null || answer.frames === null) {
			this.over = true;
			this.close();
			return;
		}
		if (answer.frames !== "") void this.send(answer.frames);
		// A list refresh is running: its outcome is collected beside the events, which go on meanwhile.
		if (!answer.refreshing || this.collecting) return;
		this.collecting = true;
		this.stub
			.listenCollect(this.scope, this.id)
			.then((collected) => {
				this.collecting = false;
				if (!this.signal.aborted) this.deliver(collected);
			})
			.catch(this.fail);
	}

	/** One source's stream ended before the window did: the session paces it, and says whether the window goes on. */
	sourceEnded(end: WindowEnd): Promise<void> {
		return this.inOrder(async () => this.deliver(await this.report(end)));
	}

	/** The window is over (its time is up, or its one source ended): the session is told, then the stream ends. */
	async end(end: WindowEnd): Promise<void> {
		if (this.over) return;
		this.over = true;
		this.cancelTimer();
		await this.sourceEnded(end).finally(this.close);
	}

	/** Ends the client's stream and the window's reads; the session is told, unless it knows already. */
	readonly close = once(() => {
		this.cancelTimer();
		this.stop.abort();
		// The client may have gone first: its side is closed already.
		this.writer.close().catch(() => undefined);
		// The client went away: the window's place is given back now, not when its time is up.
		if (!this.over) this.c.get("waitUntil")(this.report({ by: "client" }));
	});

	/** Something failed while the window ran: the stream ends (logged), the session told as for a client gone. */
	readonly fail = (error: unknown) => {
		console.warn(`listening stream ended: ${describeError(error)}`);
		this.close();
	};

	/** Tells the session how the window (or a source in it) ended; null when it could not be told (logged). */
	private report(end: WindowEnd): Promise<ListenFrames | null> {
		return this.stub.listenEnded(this.scope, this.id, end).catch((error: unknown) => {
			console.warn(`listening window: the session was not told that it ended (${end.by}): ${describeError(error)}`);
			return null;
		});
	}
}
