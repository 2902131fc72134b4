import type { Settings } from "../config.ts";
import type { Env } from "../env.ts";
import { describeError, GatewayError } from "../mcp/gateway-error.ts";
import { EventSizeLimit, lastRetry, readSseEvents } from "../mcp/sse.ts";
import type { SessionScope } from "../session/binding.ts";
import { SSE_HEADERS } from "../session/listening.ts";
import type { ListenEvent, ListenFrames, ListenPlan, SessionDO, WindowEnd } from "../session/session-do.ts";
import { once, passThrough } from "../session/session-responses.ts";
import { UpstreamPool } from "../session/upstream-pool.ts";
import { listenTime } from "./listen-time.ts";
import type { WaitUntil } from "./rate-limits.ts";

const encoder = new TextEncoder();

/** Member events a listening stream holds while the object handles earlier ones. */
const MAX_QUEUED_EVENTS = 1024;

type SessionStub = DurableObjectStub<SessionDO>;
type UpstreamPlan = Extract<ListenPlan, { kind: "upstream" }>;
type MembersPlan = Extract<ListenPlan, { kind: "members" }>;

/** No window yet: the upstream's stream ended early lately, and is not listened to for `waitMs`. */
export interface ListenLater {
	waitMs: number;
}

/**
 * A client's GET. The session's Durable Object plans it and this Worker
 * carries it: Workers are billed for CPU, not for the wall time a quiet
 * stream stays open, so a client that only listens costs the object a few
 * milliseconds per window instead of the whole time. Each window ends by the
 * session's next recheck; the client resumes (Last-Event-ID) and the object
 * rechecks it then. While the upstream's stream is paced (it ended early),
 * the answer is an empty stream whose `retry` says when to come back.
 */
export async function serveListen(
	env: Env,
	settings: Settings,
	stub: SessionStub,
	scope: SessionScope,
	lastEventId: string | null,
	waitUntil: WaitUntil,
): Promise<Response> {
	const window = await listenWindow(env, settings, stub, scope, lastEventId, waitUntil);
	return window instanceof Response ? window : retryLater(window.waitMs);
}

/** One listening window as the session plans it: the client's stream for it, or how long until there is one. */
export async function listenWindow(
	env: Env,
	settings: Settings,
	stub: SessionStub,
	scope: SessionScope,
	lastEventId: string | null,
	waitUntil: WaitUntil,
): Promise<Response | ListenLater> {
	const plan = (await stub.listen(scope, lastEventId)) as ListenPlan | Response;
	if (plan instanceof Response) return plan;
	if (plan.kind === "wait") return { waitMs: plan.retryMs };
	if (plan.kind === "upstream") return listenUpstream(env, settings, stub, scope, plan, waitUntil);
	return listenMembers(env, settings, stub, scope, plan, waitUntil);
}

/** A stream with no events: the client comes back after `retry`, when the upstream may be listened to again. */
function retryLater(waitMs: number): Response {
	return new Response(`: the upstream ended its stream early; listen again after retry\nretry: ${waitMs}\n\n`, {
		headers: SSE_HEADERS,
	});
}

/** Tells the session how a window (or a member's stream in it) ended; null when it could not be told (logged). */
function reportEnd(
	stub: SessionStub,
	scope: SessionScope,
	window: string,
	end: WindowEnd,
): Promise<ListenFrames | null> {
	return stub.listenEnded(scope, window, end).catch((error: unknown) => {
		console.warn(`listening window: the session was not told that it ended (${end.by}): ${describeError(error)}`);
		return null;
	});
}

/** Transparent: the upstream's own GET stream, passed through byte for byte (its ids too) for one window. */
async function listenUpstream(
	env: Env,
	settings: Settings,
	stub: SessionStub,
	scope: SessionScope,
	plan: UpstreamPlan,
	waitUntil: WaitUntil,
): Promise<Response | ListenLater> {
	const connection = new UpstreamPool(env, settings).connection(plan.member);
	const abort = new AbortController();
	const server = plan.member.name;
	let window = plan.window;
	// The upstream's stream ended, or failed, before the window did: the session paces the next
	// one, and knows it before the client does (a client reconnecting at once finds it paced).
	const endedEarly = async (retryMs: number | null) => {
		await reportEnd(stub, scope, window, { by: "upstream", server, retryMs });
	};
	const open = async (session: UpstreamPlan["session"], lastEventId: string | null) => {
		try {
			return await connection.openStream(session, lastEventId, abort.signal);
		} catch (error) {
			await endedEarly(null);
			throw error;
		}
	};
	let upstream = await open(plan.session, plan.lastEventId);
	if (upstream.status === 404 && plan.session.sessionId !== null) {
		// The upstream session expired: the object retires it, and the client listens on a fresh one.
		await upstream.body?.cancel();
		await stub.listenExpired(scope, window, server, plan.session.sessionId);
		const again = (await stub.listen(scope, null)) as ListenPlan | Response;
		if (again instanceof Response) return again;
		if (again.kind === "wait") return { waitMs: again.retryMs };
		if (again.kind !== "upstream") throw new GatewayError("internal", "The session changed while it was listened to.");
		window = again.window;
		upstream = await open(again.session, null);
	}
	if (upstream.status === 405) {
		await upstream.body?.cancel();
		await endedEarly(null);
		return new Response(null, { status: 405, headers: { allow: "POST, DELETE" } });
	}
	if (!upstream.ok || !upstream.body) {
		await upstream.body?.cancel();
		await endedEarly(null);
		throw connection.statusError(upstream.status, "its event stream");
	}
	return passThrough(
		upstream,
		forWindow(upstream.body, plan.windowMs, settings.maxReplyBytes, abort, {
			// At the window's end the object rechecks the session (it was due): a revoked one ends then.
			timeUp: () => waitUntil(reportEnd(stub, scope, window, { by: "time" })),
			upstreamEnded: endedEarly,
			clientLeft: () => waitUntil(reportEnd(stub, scope, window, { by: "client" })),
		}),
	);
}

/** How a transparent window ends, as `forWindow` tells it. */
interface WindowHooks {
	timeUp(): void;
	/** The upstream ended its stream first (or sent an event over the cap); the client's stream ends once this resolves. */
	upstreamEnded(retryMs: number | null): Promise<void>;
	clientLeft(): void;
}

/**
 * Passes whole events through until the window ends (or the upstream ends
 * its stream), then closes cleanly: an event cut off by the window's end is
 * never half-sent; the client gets it again when it resumes. The last
 * `retry` the upstream gave goes with an early end, to pace the next window.
 */
function forWindow(
	body: ReadableStream<Uint8Array>,
	windowMs: number,
	maxEventBytes: number,
	abort: AbortController,
	hooks: WindowHooks,
): ReadableStream<Uint8Array> {
	const reader = body.getReader();
	const limit = new EventSizeLimit(maxEventBytes);
	const decoder = new TextDecoder();
	let retryMs: number | null = null;
	let held: Uint8Array[] = [];
	let over = false;
	let cancelTimer = () => {};
	const stop = () => {
		over = true;
		cancelTimer();
		abort.abort();
		// Cancelling an upstream stream that already ended or broke can reject: nothing is left to release.
		reader.cancel().catch(() => undefined);
	};
	const upstreamEnded = async (controller: ReadableStreamDefaultController<Uint8Array>) => {
		if (!over) {
			stop();
			await hooks.upstreamEnded(retryMs);
		}
		controller.close();
	};
	const pass = (controller: ReadableStreamDefaultController<Uint8Array>, part: Uint8Array) => {
		retryMs = lastRetry(decoder.decode(part, { stream: true })) ?? retryMs;
		controller.enqueue(part);
	};
	return new ReadableStream<Uint8Array>({
		start() {
			cancelTimer = listenTime.timers.set(windowMs, () => {
				if (over) return;
				stop();
				hooks.timeUp();
			});
		},
		async pull(controller) {
			for (;;) {
				const chunk = await reader.read().catch(() => ({ done: true as const, value: undefined }));
				if (chunk.done) return upstreamEnded(controller);
				const cut = limit.add(chunk.value);
				if (cut < 0) return upstreamEnded(controller);
				if (cut === 0) {
					held.push(chunk.value);
					continue;
				}
				for (const part of held) pass(controller, part);
				pass(controller, chunk.value.subarray(0, cut));
				held = cut < chunk.value.length ? [chunk.value.subarray(cut)] : [];
				return;
			}
		},
		cancel() {
			if (over) return;
			stop();
			hooks.clientLeft();
		},
	});
}

/**
 * Aggregate: listens on the members' GET streams for one window and hands
 * each event to the session's object, which decides what the client gets
 * (and gives it an id, keeping it for resumption). Calls to the object are
 * made one at a time, so the client sees events in order.
 */
function listenMembers(
	env: Env,
	settings: Settings,
	stub: SessionStub,
	scope: SessionScope,
	plan: MembersPlan,
	waitUntil: WaitUntil,
): Response {
	const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
	const writer = writable.getWriter();
	const abort = new AbortController();
	const pool = new UpstreamPool(env, settings);
	let chain: Promise<void> = Promise.resolve();
	let collecting = false;
	/** The session knows this window is over (its time was up, or it said so): the client leaving needs no word. */
	let over = false;
	const write = (answer: ListenFrames | null) => {
		if (answer === null || answer.frames === null) {
			over = true;
			close();
			return;
		}
		if (answer.frames !== "") writer.write(encoder.encode(answer.frames)).catch(close);
		// A list refresh is running: its outcome is collected beside the events, which go on meanwhile.
		if (answer.refreshing && !collecting) collect();
	};
	const failed = (error: unknown) => {
		console.warn(`listening stream ended: ${describeError(error)}`);
		close();
	};
	const collect = () => {
		collecting = true;
		stub
			.listenCollect(scope, plan.window)
			.then((answer) => {
				collecting = false;
				if (!abort.signal.aborted) write(answer);
			})
			.catch(failed);
	};
	// Events waiting for the object: sent together, one call at a time, so a burst costs one call.
	let queued: ListenEvent[] = [];
	let sending = false;
	const send = () => {
		if (sending || queued.length === 0 || abort.signal.aborted) return;
		sending = true;
		const events = queued;
		queued = [];
		chain = chain
			.then(async () => write(await stub.listenEvents(scope, plan.window, events)))
			.catch(failed)
			.finally(() => {
				sending = false;
				send();
			});
	};
	const ask = (event: ListenEvent) => {
		// A member flooding its stream faster than the object takes events loses the excess, not the session.
		if (queued.length >= MAX_QUEUED_EVENTS) {
			dropped++;
			return;
		}
		queued.push(event);
		send();
	};
	let dropped = 0;
	const close = once(() => {
		if (dropped > 0) console.warn(`listening stream: ${dropped} member events dropped, sent faster than handled`);
		cancelTimer();
		abort.abort();
		// The client may have gone first: its side is closed already.
		writer.close().catch(() => undefined);
		// The client went away: the window's place is given back now, not when its time is up.
		if (!over) waitUntil(reportEnd(stub, scope, plan.window, { by: "client" }));
	});
	// At the window's end, what waits for the client is collected once more, then the stream ends.
	const cancelTimer = listenTime.timers.set(plan.windowMs, () => {
		over = true;
		chain = chain
			.then(async () => write(await reportEnd(stub, scope, plan.window, { by: "time" })))
			.catch(failed)
			.finally(close);
	});
	writer.closed.catch(close);
	writer.write(encoder.encode(plan.first)).catch(close);
	for (const { member, session, lastEventId } of plan.members) {
		const connection = pool.connection(member);
		let retryMs: number | null = null;
		let expired = false;
		(async () => {
			const response = await connection.openStream(session, lastEventId, abort.signal);
			if (response.status === 404 && session.sessionId !== null) {
				await response.body?.cancel();
				expired = true;
				chain = chain
					.then(() => stub.listenExpired(scope, plan.window, member.name, session.sessionId))
					.catch((error: unknown) => {
						console.warn(`member ${member.name}: its expired session was not retired: ${describeError(error)}`);
					});
				return;
			}
			// 405: the member offers no GET stream; its notifications arrive on replies only.
			if (!response.ok || !response.body) {
				await response.body?.cancel();
				return;
			}
			await readSseEvents(
				response.body,
				(event) => {
					ask({ server: member.name, data: event.data, ...(event.id ? { id: event.id } : {}) });
					return abort.signal.aborted;
				},
				settings.maxReplyBytes,
				(ms) => {
					retryMs = ms;
				},
			);
		})()
			.catch((error: unknown) => {
				if (!abort.signal.aborted) console.warn(`member ${member.name}: event stream ended: ${describeError(error)}`);
			})
			.then(() => {
				// The member ended its stream, or gave none, before the window ended (its session may have
				// been deleted with the client's): its next stream is paced, and the object says whether
				// the client's stream is still live.
				if (abort.signal.aborted || expired) return;
				const end: WindowEnd = { by: "upstream", server: member.name, retryMs };
				chain = chain.then(async () => write(await reportEnd(stub, scope, plan.window, end))).catch(failed);
			});
	}
	return new Response(readable, { headers: SSE_HEADERS });
}
