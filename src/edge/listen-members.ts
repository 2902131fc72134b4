import { describeError } from "../mcp/gateway-error.ts";
import { readSseEvents, SSE_HEADERS } from "../mcp/sse.ts";
import { type ListenEvent, type ListenPlan, UpstreamPool } from "../session/session-do.ts";
import type { ListeningWindow } from "./listen-window.ts";

/** Member events a listening stream holds while the object handles earlier ones. */
const MAX_QUEUED_EVENTS = 1024;

type MembersPlan = Extract<ListenPlan, { kind: "members" }>;

/**
 * An aggregate session's window: the edge listens on the members' GET
 * streams and hands each event to the session's object, which decides what
 * the client gets (and gives it an id, keeping it for resumption). The
 * window outlives a member's stream that ends early (the session paces that
 * member); it starts with `first` (priming, or the events the client missed).
 */
export function readMembers(window: ListeningWindow, plan: MembersPlan): Response {
	const { c, stub, scope } = window;
	const settings = c.get("settings");
	const pool = new UpstreamPool(c.env, settings, () => scope.calling ?? null);
	// Events waiting for the object: sent together in one call when their turn comes, so a burst costs one call.
	let batch: ListenEvent[] | null = null;
	let dropped = 0;
	const ask = (event: ListenEvent) => {
		if (batch === null) {
			const events: ListenEvent[] = [];
			batch = events;
			void window.inOrder(async () => {
				batch = null;
				if (!window.signal.aborted) window.deliver(await stub.listenEvents(scope, window.id, events));
			});
		}
		// A member flooding its stream faster than the object takes events loses the excess, not the session.
		if (batch.length < MAX_QUEUED_EVENTS) batch.push(event);
		else dropped++;
	};
	window.signal.addEventListener("abort", () => {
		if (dropped > 0) console.warn(`listening stream: ${dropped} member events dropped, sent faster than handled`);
	});
	window.start(plan.windowMs);
	void window.send(plan.first);
	const listenTo = async ({ member, session, lastEventId }: MembersPlan["members"][number]) => {
		let retryMs: number | null = null;
		try {
			const response = await pool.connection(member).openStream(session, lastEventId, window.signal);
			if (response.status === 404 && session.sessionId !== null) {
				await response.body?.cancel();
				return void window.inOrder(() =>
					stub.listenExpired(scope, window.id, member.name, session.sessionId).catch((error: unknown) => {
						console.warn(`member ${member.name}: its expired session was not retired: ${describeError(error)}`);
					}),
				);
			}
			// 405: the member offers no GET stream; its notifications arrive on replies only.
			if (!response.ok || !response.body) await response.body?.cancel();
			else {
				await readSseEvents(
					response.body,
					(event) => {
						ask({ server: member.name, data: event.data, ...(event.id ? { id: event.id } : {}) });
						return window.signal.aborted;
					},
					settings.maxReplyBytes,
					(ms) => {
						retryMs = ms;
					},
				);
			}
		} catch (error) {
			if (!window.signal.aborted) console.warn(`member ${member.name}: event stream ended: ${describeError(error)}`);
		}
		// The member ended its stream, or gave none, before the window ended (its session may have been
		// deleted with the client's): its next stream is paced, and the object says whether the client's
		// stream is still live.
		if (!window.signal.aborted) void window.sourceEnded({ by: "upstream", server: member.name, retryMs });
	};
	for (const source of plan.members) void listenTo(source);
	return new Response(window.body, { headers: SSE_HEADERS });
}
