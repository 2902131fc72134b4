import { GatewayError } from "../mcp/gateway-error.ts";
import { joinChunks } from "../mcp/read-capped.ts";
import { EventSizeLimit, lastRetry, rewriteEventData, SSE_HEADERS } from "../mcp/sse.ts";
import { type ListenPlan, sealedStatus, sealUpstreamTaskId, UpstreamPool } from "../session/session-do.ts";
import { reportEnd, type SessionStub } from "./listen-end.ts";
import { listenMembers } from "./listen-members.ts";
import { listenTime } from "./listen-time.ts";
import type { McpContext } from "./request-context.ts";
import { requireSessionSecret } from "./session-routing.ts";

const encoder = new TextEncoder();

type UpstreamPlan = Extract<ListenPlan, { kind: "upstream" }>;

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
export async function serveListen(c: McpContext, stub: SessionStub): Promise<Response> {
	const window = await listenWindow(c, stub, c.req.raw.headers.get("last-event-id"));
	return window instanceof Response ? window : retryLater(window.waitMs);
}

/**
 * One listening window as the session plans it: the client's stream for it, or how long until there is one.
 * `c`: the request that listens (a window may outlive its handler: a 2026-07-28 listen opens many).
 */
export async function listenWindow(
	c: McpContext,
	stub: SessionStub,
	lastEventId: string | null,
): Promise<Response | ListenLater> {
	const plan = (await stub.listen(c.get("scope"), lastEventId)) as ListenPlan | Response;
	if (plan instanceof Response) return plan;
	if (plan.kind === "wait") return { waitMs: plan.retryMs };
	if (plan.kind === "upstream") return listenUpstream(c, stub, plan);
	return listenMembers(c, stub, plan);
}

/** A stream with no events: the client comes back after `retry`, when the upstream may be listened to again. */
function retryLater(waitMs: number): Response {
	return new Response(`: the upstream ended its stream early; listen again after retry\nretry: ${waitMs}\n\n`, {
		headers: SSE_HEADERS,
	});
}

/** Transparent: the upstream's own GET stream, passed through byte for byte (its ids too) for one window. */
async function listenUpstream(c: McpContext, stub: SessionStub, plan: UpstreamPlan): Promise<Response | ListenLater> {
	const settings = c.get("settings");
	const scope = c.get("scope");
	const waitUntil = c.get("waitUntil");
	const connection = new UpstreamPool(c.env, settings, () => scope.calling ?? null).connection(plan.member);
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
	// An upstream's task status names its task by the id the client was given (sealed to this session).
	const secret = requireSessionSecret(settings);
	const task = { server, place: stub.id.toString() };
	const sealed = (data: string) =>
		sealedStatus(data, (upstreamTaskId) => sealUpstreamTaskId(secret, scope, { ...task, upstreamTaskId }));
	return passThrough(
		upstream,
		forWindow(upstream.body, plan.windowMs, settings.maxReplyBytes, abort, sealed, {
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
	sealed: (data: string) => Promise<string | null>,
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
	const pass = async (controller: ReadableStreamDefaultController<Uint8Array>, part: Uint8Array) => {
		const text = decoder.decode(part, { stream: true });
		retryMs = lastRetry(text) ?? retryMs;
		// Only whole events pass here; the rare one naming an upstream's task is rewritten, the rest go as they came.
		if (!text.includes("notifications/tasks/status")) controller.enqueue(part);
		else controller.enqueue(encoder.encode(await rewriteEventData(text, sealed)));
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
				// Whole events in one piece: an event split across chunks is rewritten whole, if at all.
				const head = chunk.value.subarray(0, cut);
				await pass(controller, held.length === 0 ? head : joinChunks([...held, head]));
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

/** The upstream's response with only the headers a client may see: no upstream session id. */
function passThrough(upstream: Response, body: ReadableStream<Uint8Array>): Response {
	const headers = new Headers();
	const type = upstream.headers.get("content-type");
	if (type) headers.set("content-type", type);
	if (type?.includes("text/event-stream")) headers.set("cache-control", "no-cache");
	return new Response(body, { status: upstream.status, headers });
}
