import { describeError } from "../mcp/gateway-error.ts";
import { readSseEvents, SSE_HEADERS } from "../mcp/sse.ts";
import { once } from "../primitives/once.ts";
import {
	type ListenEvent,
	type ListenFrames,
	type ListenPlan,
	UpstreamPool,
	type WindowEnd,
} from "../session/session-do.ts";
import { reportEnd, type SessionStub } from "./listen-end.ts";
import { listenTime } from "./listen-time.ts";
import type { McpContext } from "./request-context.ts";

const encoder = new TextEncoder();

/** Member events a listening stream holds while the object handles earlier ones. */
const MAX_QUEUED_EVENTS = 1024;

type MembersPlan = Extract<ListenPlan, { kind: "members" }>;

/**
 * Aggregate: listens on the members' GET streams for one window and hands
 * each event to the session's object, which decides what the client gets
 * (and gives it an id, keeping it for resumption). Calls to the object are
 * made one at a time, so the client sees events in order.
 */
export function listenMembers(c: McpContext, stub: SessionStub, plan: MembersPlan): Response {
	const settings = c.get("settings");
	const scope = c.get("scope");
	const waitUntil = c.get("waitUntil");
	const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
	const writer = writable.getWriter();
	const abort = new AbortController();
	const pool = new UpstreamPool(c.env, settings, () => scope.calling ?? null);
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
