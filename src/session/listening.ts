import type { Settings } from "../config.ts";
import { parseJsonRpcMessage } from "../mcp/jsonrpc.ts";
import type { UpstreamSession } from "../upstream/upstream-connection.ts";
import type { AggregateRouter } from "./aggregate-router.ts";
import type { Member, SessionBinding } from "./binding.ts";
import type { ClientStreams, LiveStream } from "./client-streams.ts";
import type { MemberSessions } from "./member-sessions.ts";

/** At most this many members' GET streams are listened on per client stream (Workers allow six connections). */
const MAX_WATCHED_MEMBERS = 4;

/** What the edge Worker does for a client's GET: the Durable Object is not held while a client only listens. */
export type ListenPlan =
	/** Transparent: the edge listens on the upstream's GET stream itself, passing it through. */
	| { kind: "upstream"; member: Member; session: UpstreamSession; lastEventId: string | null; windowMs: number }
	/**
	 * Aggregate: the edge writes `first` (priming, or the events the client
	 * missed), listens on the members' GET streams and hands each event to
	 * `listenEvent`, writing back what that returns.
	 */
	| {
			kind: "members";
			/** Names this window of the stream in `listenEvents` and `listenCollect`. */
			window: string;
			first: string;
			members: Array<{ member: Member; session: UpstreamSession; lastEventId: string | null }>;
			windowMs: number;
	  };

/** One event from a member's GET stream: the SSE data, as the member sent it. */
export interface ListenEvent {
	server: string;
	data: string;
	/** The member's own event id, if it gave one: the next window resumes the member's stream from it. */
	id?: string;
}

/** Frames for a listening client, and whether more may follow from a list refresh now running. */
export interface ListenFrames {
	frames: string | null;
	refreshing: boolean;
}

export const SSE_HEADERS = { "content-type": "text/event-stream", "cache-control": "no-cache" };

function replayOnly(frames: string): ReadableStream<Uint8Array> {
	return new Response(frames).body as ReadableStream<Uint8Array>;
}

/** What listening needs from its SessionDO. */
export interface ListeningHost {
	readonly settings: Settings;
	readonly streams: ClientStreams;
	readonly router: AggregateRouter;
	readonly members: MemberSessions;
	current(): SessionBinding | null | undefined;
	/** Milliseconds until the session's next recheck is due. */
	untilRecheck(binding: SessionBinding): number;
}

/**
 * A client's listening streams, carried by the edge Worker rather than by the
 * Durable Object (see docs/architecture.md, "Listening is carried by the
 * edge Worker, in windows"): the object plans a listening window, then is called only when a
 * member has something to say. Each window ends by the next recheck, so a
 * revoked key still loses its stream within one recheck interval; the client
 * resumes with Last-Event-ID and loses nothing.
 */
export class Listening {
	/** Outboxes of the listening windows the edges hold, by window (one per stream). */
	private readonly outboxes = new Map<string, { stream: string; outbox: { drain(): string | null } }>();
	/** Numbers listening windows, so a window that was replaced cannot take its successor's frames. */
	private windows = 0;
	/**
	 * The last event id each member gave on its GET stream, with the upstream
	 * session it belongs to: a member that keeps its events lets the next
	 * window resume where the last one stopped, so nothing sent between
	 * windows is lost.
	 */
	private readonly cursors = new Map<string, { sessionId: string | null; id: string }>();

	constructor(private readonly host: ListeningHost) {}

	/**
	 * Plans a listening window for a client's GET (after authorization and the
	 * recheck). A stream the object itself carries comes back as a Response:
	 * a running call's stream being resumed (the object is busy with the call
	 * anyway), or a finished call's stream, replayed and ended.
	 */
	async plan(binding: SessionBinding, lastEventId: string | null): Promise<ListenPlan | Response> {
		const windowMs = Math.max(0, Math.min(this.host.settings.listenWindowMs, this.host.untilRecheck(binding)));
		const { members, streams } = this.host;
		if (binding.mode === "transparent") {
			const member = members.sole(binding);
			return { kind: "upstream", member, session: await members.session(member), lastEventId, windowMs };
		}
		const resumed = lastEventId === null ? null : await streams.resume(lastEventId);
		let stream: LiveStream;
		let first: string;
		if (resumed && (!resumed.stream || resumed.stream.kind === "p")) {
			// A call's stream: what the client missed of it, then the rest of the call, if it still runs.
			const body = resumed.stream ? resumed.stream.connect(resumed.missed) : replayOnly(resumed.missed);
			return new Response(body, { headers: SSE_HEADERS });
		}
		if (resumed?.stream) {
			stream = resumed.stream;
			first = resumed.missed;
		} else {
			stream = await streams.open("g");
			// A Last-Event-ID that cannot be honoured starts a fresh stream; the new id in the priming event says so.
			first =
				(lastEventId === null ? "" : ": Last-Event-ID not resumable; this is a new stream\n\n") +
				streams.priming(stream);
		}
		// One window per stream at a time: an earlier one still held by an edge is over.
		for (const [key, entry] of this.outboxes) if (entry.stream === stream.id) this.outboxes.delete(key);
		const window = `${stream.id}#${++this.windows}`;
		this.outboxes.set(window, { stream: stream.id, outbox: stream.outbox() });
		const watched = await Promise.all(
			binding.members.slice(0, MAX_WATCHED_MEMBERS).map(async (member) => {
				try {
					const session = await members.session(member);
					const cursor = this.cursors.get(member.name);
					const lastEventId = cursor && cursor.sessionId === session.sessionId ? cursor.id : null;
					return [{ member, session, lastEventId }];
				} catch {
					// A member that cannot be reached now is listened to on the next window.
					return [];
				}
			}),
		);
		return { kind: "members", window, first, members: watched.flat(), windowMs };
	}

	/**
	 * Members' events (in order) in a window the edge listens for. Returns the frames for
	 * the client (null when the stream is no longer live here: the edge ends
	 * it), and whether a list refresh is running, whose outcome (a
	 * list_changed for the client) the edge then collects with `collect`.
	 */
	events(window: string, events: readonly ListenEvent[]): ListenFrames {
		const entry = this.outboxes.get(window);
		const live = entry && this.host.streams.live(entry.stream);
		for (const { server, data, id } of live ? events : []) {
			if (id !== undefined) {
				const sessionId = this.host.current()?.upstreams[server]?.sessionId;
				if (sessionId !== undefined) this.cursors.set(server, { sessionId, id });
			}
			const message = parseJsonRpcMessage(data);
			const passed = message === null ? null : this.host.router.memberMessage(server, message, null);
			if (passed) live?.send(passed);
		}
		return { frames: this.drain(window), refreshing: this.host.router.refreshing };
	}

	/** What waits for the client in `window` once running list refreshes are over. */
	async collect(window: string): Promise<ListenFrames> {
		await this.host.router.settled();
		return { frames: this.drain(window), refreshing: false };
	}

	/** The frames waiting in a window's outbox; null once the window is over here (replaced, or its stream ended). */
	private drain(window: string): string | null {
		// The edge is about to hand these events on: they are kept durably first, in one write.
		this.host.streams.buffer.flush();
		const entry = this.outboxes.get(window);
		const frames = entry?.outbox.drain() ?? null;
		if (entry && (frames === null || this.host.streams.live(entry.stream) === undefined)) this.outboxes.delete(window);
		return frames;
	}

	/** A member's GET stream answered 404 for its upstream session: retire it; the next window opens a new one. */
	async expired(binding: SessionBinding, server: string, sessionId: string | null): Promise<void> {
		const member = this.host.members.member(server);
		await this.host.members.retire(member, { sessionId, protocolVersion: "" });
		// Its lists are refetched, and the client told of real changes.
		if (binding.mode === "aggregate") this.host.router.memberReset(server);
	}

	clear(): void {
		this.outboxes.clear();
		this.cursors.clear();
	}
}
