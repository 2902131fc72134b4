import { parseJsonRpcMessage } from "../../mcp/jsonrpc.ts";
import { SSE_HEADERS } from "../../mcp/sse.ts";
import type { UpstreamSession } from "../../upstream/upstream-connection.ts";
import type { AggregateRouter } from "../aggregate/aggregate-router.ts";
import type { MemberSessions } from "../aggregate/member-sessions.ts";
import type { Member, SessionBinding } from "../binding.ts";
import type { SessionLifecycle } from "../session-lifecycle.ts";
import type { SessionState } from "../session-state.ts";
import type { ClientStreams, LiveStream } from "./client-streams.ts";
import { ListenWindows, type WindowEnd } from "./listen-windows.ts";

/** At most this many members' GET streams are listened on per client stream (Workers allow six connections). */
const MAX_WATCHED_MEMBERS = 4;

/** What the edge Worker does for a client's GET: the Durable Object is not held while a client only listens. */
export type ListenPlan =
	/** Transparent: the edge listens on the upstream's GET stream itself, passing it through. */
	| {
			kind: "upstream";
			/** Names this window in `listenEnded`. */
			window: string;
			member: Member;
			session: UpstreamSession;
			lastEventId: string | null;
			windowMs: number;
	  }
	/** Transparent: the upstream's stream ended early lately; nothing is listened to for `retryMs`. */
	| { kind: "wait"; retryMs: number }
	/**
	 * Aggregate: the edge writes `first` (priming, or the events the client
	 * missed), listens on the members' GET streams and hands each event to
	 * `listenEvent`, writing back what that returns.
	 */
	| {
			kind: "members";
			/** Names this window of the stream in `listenEvents`, `listenCollect` and `listenEnded`. */
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

function replayOnly(frames: string): ReadableStream<Uint8Array> {
	return new Response(frames).body as ReadableStream<Uint8Array>;
}

/**
 * A client's listening streams, carried by the edge Worker rather than by the
 * Durable Object (docs/decisions/0022-listening-is-carried-by-the-edge-worker-in-windows.md):
 * the object plans a listening window, then is called only when a
 * member has something to say. Each window ends by the next recheck, so a
 * revoked key still loses its stream within one recheck interval; the client
 * resumes with Last-Event-ID and loses nothing. A member's stream that ends
 * before its window is not reopened at once (see ListenWindows).
 */
export class Listening {
	/** Outboxes of the listening windows the edges hold, by window (one per stream). */
	private readonly outboxes = new Map<string, { stream: string; outbox: { drain(): string | null } }>();
	/** Numbers listening windows, so a window that was replaced cannot take its successor's frames. */
	private windowCount = 0;
	/** The windows open at edges, and when each member's stream may be opened again. */
	private readonly windows: ListenWindows;
	/**
	 * The last event id each member gave on its GET stream, with the upstream
	 * session it belongs to: a member that keeps its events lets the next
	 * window resume where the last one stopped, so nothing sent between
	 * windows is lost.
	 */
	private readonly cursors = new Map<string, { sessionId: string | null; id: string }>();

	constructor(
		private readonly state: SessionState,
		private readonly streams: ClientStreams,
		private readonly router: AggregateRouter,
		private readonly members: MemberSessions,
		/** When the next recheck is due: a window ends by then. */
		private readonly lifecycle: SessionLifecycle,
	) {
		this.windows = new ListenWindows(() => state.clock, {
			floorMs: state.settings.sseRetryMs,
			windowMs: state.settings.listenWindowMs,
		});
	}

	/**
	 * Plans a listening window for a client's GET (after authorization and the
	 * recheck). A stream the object itself carries comes back as a Response:
	 * a running call's stream being resumed (the object is busy with the call
	 * anyway), or a finished call's stream, replayed and ended. Refused (429)
	 * while the session has its limit of windows open.
	 */
	async plan(binding: SessionBinding, lastEventId: string | null): Promise<ListenPlan | Response> {
		const windowMs = Math.max(0, Math.min(this.state.settings.listenWindowMs, this.lifecycle.untilRecheck(binding)));
		const transparent = binding.mode === "transparent";
		if (transparent) {
			const wait = this.windows.wait(this.members.transparentMember(binding).name);
			if (wait > 0) return { kind: "wait", retryMs: wait };
		}
		// Counted from here, so concurrent plans cannot pass the limit together; a plan that
		// fails, or turns out to be a call's stream, gives its place back.
		const window = `w${++this.windowCount}`;
		this.windows.open(window, windowMs, transparent);
		try {
			const plan = transparent
				? await this.planUpstream(binding, window, lastEventId, windowMs)
				: await this.planMembers(binding, window, lastEventId, windowMs);
			if (plan instanceof Response) this.windows.forget(window);
			else {
				const sources = plan.kind === "members" ? plan.members.map(({ member }) => member.name) : [plan.member.name];
				this.windows.listens(window, sources);
			}
			return plan;
		} catch (error) {
			this.windows.forget(window);
			throw error;
		}
	}

	private async planUpstream(
		binding: SessionBinding,
		window: string,
		lastEventId: string | null,
		windowMs: number,
	): Promise<Extract<ListenPlan, { kind: "upstream" }>> {
		const { members } = this;
		const member = members.transparentMember(binding);
		return { kind: "upstream", window, member, session: await members.session(member), lastEventId, windowMs };
	}

	private async planMembers(
		binding: SessionBinding,
		window: string,
		lastEventId: string | null,
		windowMs: number,
	): Promise<Extract<ListenPlan, { kind: "members" }> | Response> {
		const { members, streams } = this;
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
		for (const [key, entry] of this.outboxes) {
			if (entry.stream !== stream.id) continue;
			this.outboxes.delete(key);
			this.windows.forget(key);
		}
		this.outboxes.set(window, { stream: stream.id, outbox: stream.outbox() });
		// A member whose stream ended early lately is left out of this window (a later one listens to it).
		const listened = binding.members.filter((member) => this.windows.wait(member.name) === 0);
		const watched = await Promise.all(
			listened.slice(0, MAX_WATCHED_MEMBERS).map(async (member) => {
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
		const live = entry && this.streams.live(entry.stream);
		for (const { server, data, id } of live ? events : []) {
			if (id !== undefined) {
				const sessionId = this.state.binding?.upstreams[server]?.sessionId;
				if (sessionId !== undefined) this.cursors.set(server, { sessionId, id });
			}
			const message = parseJsonRpcMessage(data);
			const passed = message === null ? null : this.router.memberMessage(server, message, null);
			if (passed) live?.send(passed);
		}
		return { frames: this.drain(window), refreshing: this.router.refreshing };
	}

	/** What waits for the client in `window` once running list refreshes are over. */
	async collect(window: string): Promise<ListenFrames> {
		await this.router.settled();
		return { frames: this.drain(window), refreshing: false };
	}

	/**
	 * The edge saw a window end, or a member's stream in it: the window is no
	 * longer counted (unless only one of its members' streams ended), the
	 * member's next stream is paced, and what waits for the client is
	 * collected (frames null: the window is over here).
	 */
	async ended(window: string, end: WindowEnd): Promise<ListenFrames> {
		this.windows.ended(window, end);
		if (end.by === "client") {
			this.outboxes.delete(window);
			return { frames: null, refreshing: false };
		}
		return this.outboxes.has(window) ? this.collect(window) : { frames: null, refreshing: false };
	}

	/** Windows counted as open at edges (tests). */
	get openWindows(): number {
		return this.windows.size;
	}

	/** Milliseconds until `server`'s GET stream may be opened again (tests). */
	paced(server: string): number {
		return this.windows.wait(server);
	}

	/** The frames waiting in a window's outbox; null once the window is over here (replaced, or its stream ended). */
	private drain(window: string): string | null {
		// The edge is about to hand these events on: they are kept durably first, in one write.
		this.streams.buffer.flush();
		const entry = this.outboxes.get(window);
		const frames = entry?.outbox.drain() ?? null;
		if (entry && (frames === null || this.streams.live(entry.stream) === undefined)) this.outboxes.delete(window);
		return frames;
	}

	/**
	 * A member's GET stream answered 404 for its upstream session: retire it;
	 * the next window opens a new one (transparent: the edge's next plan, as
	 * this window is over), unless the member keeps forgetting its sessions
	 * (see ListenWindows.expired).
	 */
	async expired(binding: SessionBinding, window: string, server: string, sessionId: string | null): Promise<void> {
		const member = this.members.member(server);
		// Only a 2025 upstream's session can expire (the edge reports only those with an id); retiring
		// compares ids alone, so the id stands for the session.
		await this.members.retire(member, { era: "legacy", sessionId, protocolVersion: "" });
		this.windows.expired(server);
		if (binding.mode === "transparent") this.windows.forget(window);
		// Its lists are refetched, and the client told of real changes.
		else this.router.memberReset(server);
	}

	clear(): void {
		this.outboxes.clear();
		this.cursors.clear();
		this.windows.clear();
	}
}
