import type { Settings } from "../config.ts";
import type { Env } from "../env.ts";
import { describeError, GatewayError } from "../mcp/gateway-error.ts";
import { EventSizeLimit, readSseEvents } from "../mcp/sse.ts";
import type { SessionScope } from "../session/binding.ts";
import { SSE_HEADERS } from "../session/listening.ts";
import type { ListenEvent, ListenFrames, ListenPlan, SessionDO } from "../session/session-do.ts";
import { once, passThrough } from "../session/session-responses.ts";
import { UpstreamPool } from "../session/upstream-pool.ts";
import type { WaitUntil } from "./rate-limits.ts";

const encoder = new TextEncoder();

/** Member events a listening stream holds while the object handles earlier ones. */
const MAX_QUEUED_EVENTS = 1024;

type SessionStub = DurableObjectStub<SessionDO>;
type UpstreamPlan = Extract<ListenPlan, { kind: "upstream" }>;
type MembersPlan = Extract<ListenPlan, { kind: "members" }>;

/**
 * A client's GET. The session's Durable Object plans it and this Worker
 * carries it: Workers are billed for CPU, not for the wall time a quiet
 * stream stays open, so a client that only listens costs the object a few
 * milliseconds per window instead of the whole time. Each window ends by the
 * session's next recheck; the client resumes (Last-Event-ID) and the object
 * rechecks it then.
 */
export async function serveListen(
	env: Env,
	settings: Settings,
	stub: SessionStub,
	scope: SessionScope,
	lastEventId: string | null,
	waitUntil: WaitUntil,
): Promise<Response> {
	const plan = (await stub.listen(scope, lastEventId)) as ListenPlan | Response;
	if (plan instanceof Response) return plan;
	if (plan.kind === "upstream") return listenUpstream(env, settings, stub, scope, plan, waitUntil);
	return listenMembers(env, settings, stub, scope, plan);
}

/** Transparent: the upstream's own GET stream, passed through byte for byte (its ids too) for one window. */
async function listenUpstream(
	env: Env,
	settings: Settings,
	stub: SessionStub,
	scope: SessionScope,
	plan: UpstreamPlan,
	waitUntil: WaitUntil,
): Promise<Response> {
	const connection = new UpstreamPool(env, settings).connection(plan.member);
	const abort = new AbortController();
	let upstream = await connection.openStream(plan.session, plan.lastEventId, abort.signal);
	if (upstream.status === 404 && plan.session.sessionId !== null) {
		// The upstream session expired: the object retires it, and the client listens on a fresh one.
		await upstream.body?.cancel();
		await stub.listenExpired(scope, plan.member.name, plan.session.sessionId);
		const again = (await stub.listen(scope, null)) as ListenPlan | Response;
		if (again instanceof Response) return again;
		if (again.kind !== "upstream") throw new GatewayError("internal", "The session changed while it was listened to.");
		upstream = await connection.openStream(again.session, null, abort.signal);
	}
	if (upstream.status === 405) {
		await upstream.body?.cancel();
		return new Response(null, { status: 405, headers: { allow: "POST, DELETE" } });
	}
	if (!upstream.ok || !upstream.body) {
		await upstream.body?.cancel();
		throw connection.statusError(upstream.status, "its event stream");
	}
	// At the window's end the object rechecks the session (it was due): a revoked one ends then.
	const windowEnd = () => waitUntil(stub.listenCollect(scope, null, true).catch(() => undefined));
	return passThrough(upstream, forWindow(upstream.body, plan.windowMs, settings.maxReplyBytes, abort, windowEnd));
}

/**
 * Passes whole events through until the window ends (or the upstream ends
 * its stream), then closes cleanly: an event cut off by the window's end is
 * never half-sent; the client gets it again when it resumes.
 */
function forWindow(
	body: ReadableStream<Uint8Array>,
	windowMs: number,
	maxEventBytes: number,
	abort: AbortController,
	onWindowEnd: () => void,
): ReadableStream<Uint8Array> {
	const reader = body.getReader();
	const limit = new EventSizeLimit(maxEventBytes);
	let held: Uint8Array[] = [];
	let timer: ReturnType<typeof setTimeout> | null = null;
	const stop = () => {
		if (timer !== null) clearTimeout(timer);
		abort.abort();
		reader.cancel().catch(() => undefined);
	};
	return new ReadableStream<Uint8Array>({
		start() {
			timer = setTimeout(() => {
				stop();
				onWindowEnd();
			}, windowMs);
		},
		async pull(controller) {
			for (;;) {
				const chunk = await reader.read().catch(() => ({ done: true as const, value: undefined }));
				if (chunk.done) {
					stop();
					controller.close();
					return;
				}
				const cut = limit.add(chunk.value);
				if (cut < 0) {
					stop();
					controller.close();
					return;
				}
				if (cut === 0) {
					held.push(chunk.value);
					continue;
				}
				const complete = chunk.value.subarray(0, cut);
				for (const part of held) controller.enqueue(part);
				controller.enqueue(complete);
				held = cut < chunk.value.length ? [chunk.value.subarray(cut)] : [];
				return;
			}
		},
		cancel() {
			stop();
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
): Response {
	const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
	const writer = writable.getWriter();
	const abort = new AbortController();
	const pool = new UpstreamPool(env, settings);
	let chain: Promise<void> = Promise.resolve();
	let collecting = false;
	const write = (answer: ListenFrames) => {
		if (answer.frames === null) {
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
		clearTimeout(timer);
		abort.abort();
		writer.close().catch(() => undefined);
	});
	// At the window's end, what waits for the client is collected once more, then the stream ends.
	const timer = setTimeout(() => {
		chain = chain
			.then(async () => write(await stub.listenCollect(scope, plan.window, true)))
			.catch(failed)
			.finally(close);
	}, plan.windowMs);
	writer.closed.catch(close);
	writer.write(encoder.encode(plan.first)).catch(close);
	for (const { member, session, lastEventId } of plan.members) {
		const connection = pool.connection(member);
		(async () => {
			const response = await connection.openStream(session, lastEventId, abort.signal);
			if (response.status === 404 && session.sessionId !== null) {
				await response.body?.cancel();
				chain = chain.then(() => stub.listenExpired(scope, member.name, session.sessionId));
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
			);
			// The member ended its stream (its session may have been deleted with the client's):
			// the object says whether the client's stream is still live.
			if (!abort.signal.aborted) {
				chain = chain.then(async () => write(await stub.listenCollect(scope, plan.window))).catch(failed);
			}
		})().catch((error: unknown) => {
			if (!abort.signal.aborted) console.warn(`member ${member.name}: event stream ended: ${describeError(error)}`);
		});
	}
	return new Response(readable, { headers: SSE_HEADERS });
}
