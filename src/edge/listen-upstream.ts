import { GatewayError } from "../mcp/gateway-error.ts";
import { NOTIFICATIONS_TASKS_STATUS } from "../mcp/methods.ts";
import { joinChunks } from "../mcp/read-capped.ts";
import { EventSizeLimit, lastRetry, rewriteEventData } from "../mcp/sse.ts";
import { type ListenPlan, sealedStatus, UpstreamPool, upstreamTaskSealer } from "../session/session-do.ts";
import type { ListeningWindow, ListenLater } from "./listen-window.ts";
import { requireSessionSecret } from "./session-routing.ts";

type UpstreamPlan = Extract<ListenPlan, { kind: "upstream" }>;

/**
 * A transparent session's window: the upstream's own GET stream, passed
 * through byte for byte (its ids too), an upstream's task status naming its
 * task by the id the client was given. The window ends with the upstream's
 * stream, which the session then paces (it ended early).
 */
export async function readUpstream(window: ListeningWindow, plan: UpstreamPlan): Promise<Response | ListenLater> {
	const settings = window.c.get("settings");
	const scope = window.scope;
	const connection = new UpstreamPool(window.c.env, settings, () => scope.calling ?? null).connection(plan.member);
	const server = plan.member.name;
	// The upstream's stream ended, or failed, before the window did: the session paces the next
	// one, and knows it before the client does (a client reconnecting at once finds it paced).
	const endedEarly = (retryMs: number | null) => window.end({ by: "upstream", server, retryMs });
	const open = (session: UpstreamPlan["session"], lastEventId: string | null) =>
		connection.openStream(session, lastEventId, window.signal).catch(async (error: unknown) => {
			await endedEarly(null);
			throw error;
		});
	let upstream = await open(plan.session, plan.lastEventId);
	if (upstream.status === 404 && plan.session.sessionId !== null) {
		// The upstream session expired: the object retires it, and the client listens on a fresh one.
		await upstream.body?.cancel();
		await window.stub.listenExpired(scope, window.id, server, plan.session.sessionId);
		const again = await window.replan();
		if (again instanceof Response || again.kind === "wait") return again;
		if (again.kind !== "upstream") throw new GatewayError("internal", "The session changed while it was listened to.");
		window.id = again.window;
		upstream = await open(again.session, null);
	}
	if (!upstream.ok || !upstream.body) {
		await upstream.body?.cancel();
		await endedEarly(null);
		if (upstream.status === 405) return new Response(null, { status: 405, headers: { allow: "POST, DELETE" } });
		throw connection.statusError(upstream.status, "its event stream");
	}
	const seal = upstreamTaskSealer(requireSessionSecret(settings), scope, { server, place: window.stub.id.toString() });
	window.start(plan.windowMs);
	passEvents(window, upstream.body, settings.maxReplyBytes, seal, endedEarly).catch(window.fail);
	return passThrough(upstream, window.body);
}

/**
 * Passes whole events through until the window ends (or the upstream ends
 * its stream, or sends an event over the cap): an event cut off by the
 * window's end is never half-sent; the client gets it again when it resumes.
 * The last `retry` the upstream gave goes with an early end, to pace the next
 * window. Reads only as fast as the client takes the events.
 */
async function passEvents(
	window: ListeningWindow,
	body: ReadableStream<Uint8Array>,
	maxEventBytes: number,
	seal: (upstreamTaskId: string) => Promise<string>,
	endedEarly: (retryMs: number | null) => Promise<void>,
): Promise<void> {
	const reader = body.getReader();
	// Cancelling an upstream stream that already ended or broke can reject: nothing is left to release.
	window.signal.addEventListener("abort", () => void reader.cancel().catch(() => undefined), { once: true });
	const limit = new EventSizeLimit(maxEventBytes);
	const decoder = new TextDecoder();
	let retryMs: number | null = null;
	let held: Uint8Array[] = [];
	for (;;) {
		const chunk = await reader.read().catch(() => ({ done: true as const, value: undefined }));
		if (window.signal.aborted) return;
		const cut = chunk.done ? -1 : limit.add(chunk.value);
		if (chunk.done || cut < 0) return endedEarly(retryMs);
		if (cut === 0) {
			held.push(chunk.value);
			continue;
		}
		// Whole events in one piece: an event split across chunks is rewritten whole, if at all.
		const head = chunk.value.subarray(0, cut);
		const events = held.length === 0 ? head : joinChunks([...held, head]);
		held = cut < chunk.value.length ? [chunk.value.subarray(cut)] : [];
		const text = decoder.decode(events, { stream: true });
		retryMs = lastRetry(text) ?? retryMs;
		// The rare event naming an upstream's task is rewritten; the rest go as they came.
		if (!text.includes(NOTIFICATIONS_TASKS_STATUS)) await window.send(events);
		else await window.send(await rewriteEventData(text, (data) => sealedStatus(data, seal)));
	}
}

/** The upstream's response with only the headers a client may see: no upstream session id. */
function passThrough(upstream: Response, body: ReadableStream<Uint8Array>): Response {
	const headers = new Headers();
	const type = upstream.headers.get("content-type");
	if (type) headers.set("content-type", type);
	if (type?.includes("text/event-stream")) headers.set("cache-control", "no-cache");
	return new Response(body, { status: upstream.status, headers });
}
