import { GatewayError } from "../../mcp/gateway-error.ts";
import type { Clock } from "../../primitives/clock.ts";

/**
 * Listening windows one session may have open at once. Each holds upstream
 * GET streams at an edge; with the key's cap of live sessions (counted in its
 * KeySessionsDO) this bounds the listens one person holds, across every edge.
 */
export const MAX_OPEN_WINDOWS = 8;

/** A window whose end was never reported (its edge went away) is taken as over this long after its planned end. */
const LOST_WINDOW_GRACE_MS = 5_000;

/** The longest `retry` of an upstream the gateway waits out; a longer one is taken as this. */
const MAX_HONOURED_RETRY_MS = 10 * 60_000;

/** How a listening window, or one upstream stream in it, ended (as the edge that held it saw it). */
export type WindowEnd =
	/** The window's time was up: the streams still open in it lived a whole window. */
	| { by: "time" }
	/** The client went away. */
	| { by: "client" }
	/** A member's GET stream ended, or failed, before the window did, with the `retry` it last gave. */
	| { by: "upstream"; server: string; retryMs: number | null };

interface OpenWindow {
	/** The members whose GET streams the edge holds in this window. */
	sources: readonly string[];
	/** Those whose stream ended early. */
	ended: Set<string>;
	/** Transparent: the window is its one upstream stream, and ends with it. */
	endsWithSource: boolean;
	endsAt: number;
}

interface Pace {
	/** Early ends in a row. */
	streak: number;
	endedAt: number;
	notBefore: number;
}

/**
 * The listening windows a session has open, and when each member's GET
 * stream may be opened again. A stream that ends before its window is not
 * reopened at once, whoever asks (the client reconnecting at once, or the
 * edge carrying a 2026-07-28 listen): the next waits at least the
 * upstream's `retry` (never less than the gateway's own SSE_RETRY_MS), and
 * twice as long each time the stream ends early again, up to one listening
 * window. A stream that lives its whole window starts over. Plain numbers
 * compared with the object's clock, as the breaker's: nothing runs in the
 * background.
 */
export class ListenWindows {
	private readonly held = new Map<string, OpenWindow>();
	private readonly paces = new Map<string, Pace>();
	/** When each member's upstream session last expired under a listening window. */
	private readonly expiries = new Map<string, number>();

	constructor(
		private readonly clock: () => Clock,
		private readonly options: { floorMs: number; windowMs: number },
	) {}

	/** Milliseconds until `server`'s GET stream may be opened again (0: now). */
	wait(server: string): number {
		const pace = this.paces.get(server);
		return pace ? Math.max(0, pace.notBefore - this.clock().now()) : 0;
	}

	/**
	 * Counts a window an edge is about to hold; refused (429) while the
	 * session already has its limit open. `endsWithSource`: a transparent
	 * window, which is its upstream's one stream and ends with it.
	 */
	open(window: string, windowMs: number, endsWithSource: boolean): void {
		const now = this.clock().now();
		for (const [id, entry] of this.held) if (entry.endsAt + LOST_WINDOW_GRACE_MS < now) this.held.delete(id);
		if (this.held.size >= MAX_OPEN_WINDOWS) {
			const soonest = Math.min(...[...this.held.values()].map((entry) => entry.endsAt));
			const seconds = Math.max(1, Math.ceil((soonest - now) / 1000));
			throw new GatewayError(
				"too_many_in_flight",
				`Too Many Requests: this session already has ${MAX_OPEN_WINDOWS} listening streams open; close one, or retry after ${seconds} s.`,
				{ headers: { "retry-after": String(seconds) } },
			);
		}
		this.held.set(window, { sources: [], ended: new Set(), endsWithSource, endsAt: now + windowMs });
	}

	/** The members whose GET streams the edge listens to in `window`. */
	listens(window: string, sources: readonly string[]): void {
		const entry = this.held.get(window);
		if (entry) entry.sources = sources;
	}

	/** A window is over here without a word from its edge (its stream was replaced). */
	forget(window: string): void {
		this.held.delete(window);
	}

	/** What the edge saw end: the window, or one member's stream in it. */
	ended(window: string, end: WindowEnd): void {
		const entry = this.held.get(window);
		if (end.by === "upstream") {
			this.endedEarly(end.server, end.retryMs);
			entry?.ended.add(end.server);
			if (entry?.endsWithSource) this.held.delete(window);
			return;
		}
		if (end.by === "time" && entry) {
			for (const source of entry.sources) if (!entry.ended.has(source)) this.paces.delete(source);
		}
		this.held.delete(window);
	}

	/** A member's stream ended early: it waits before it is opened again. */
	private endedEarly(server: string, retryMs: number | null): void {
		const now = this.clock().now();
		const { floorMs, windowMs } = this.options;
		const base = Math.max(floorMs, Math.min(retryMs ?? 0, MAX_HONOURED_RETRY_MS));
		const cap = Math.max(base, windowMs);
		const previous = this.paces.get(server);
		// Ends within twice the last wait of each other are a stream that keeps ending early;
		// ends further apart (a window's length, say) are not, and the doubling starts over.
		const streak =
			previous && now - previous.endedAt <= 2 * (previous.notBefore - previous.endedAt) ? previous.streak + 1 : 1;
		const wait = Math.min(cap, base * 2 ** Math.min(streak - 1, 20));
		this.paces.set(server, { streak, endedAt: now, notBefore: now + wait });
	}

	/**
	 * A member's upstream session expired (its GET stream answered 404): the
	 * first time it is listened to again at once, on a fresh session; a
	 * member that keeps forgetting its sessions is paced as a stream that
	 * keeps ending early, so it is not initialized again for every window.
	 */
	expired(server: string): void {
		const now = this.clock().now();
		const previous = this.expiries.get(server);
		this.expiries.set(server, now);
		if (previous !== undefined && now - previous < this.options.windowMs) this.endedEarly(server, null);
	}

	/** Windows counted as open (tests). */
	get size(): number {
		return this.held.size;
	}

	clear(): void {
		this.held.clear();
		this.paces.clear();
		this.expiries.clear();
	}
}
