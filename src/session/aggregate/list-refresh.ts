import { describeError } from "../../mcp/gateway-error.ts";
import type { PublicList } from "../../mcp/list-kinds.ts";
import type { Timers } from "../../primitives/clock.ts";

/**
 * How long a refresh waits for the rest of a burst of list_changed
 * notifications: until none has come for this long (a burst delivered in
 * several batches still shares one refresh), but never longer than
 * REFRESH_MAX_WAIT_MS. A refresh pass fetches each list once (no retry when a
 * notification arrives meanwhile: that only marks the pass dirty), so a member
 * flooding list_changed costs at most one fetch per REFRESH_MAX_WAIT_MS.
 */
const REFRESH_DEBOUNCE_MS = 25;
const REFRESH_MAX_WAIT_MS = 250;

/**
 * The debounce loop of an aggregate's list refreshes: at most one refresh per
 * public list runs at a time, and a burst of invalidations while it runs
 * causes one more pass, not one per notification. Its waits are set on the
 * session's timers, so they follow the session's clock.
 */
export class ListRefresh {
	private readonly refreshes = new Map<PublicList, { running: Promise<void>; dirty: boolean }>();

	/** `pass` recomputes one list (one attempt per member) and tells the client of a real change. */
	constructor(
		private readonly timers: () => Timers,
		private readonly pass: (list: PublicList) => Promise<void>,
	) {}

	/**
	 * Asks for `list` to be recomputed. A pass makes one attempt per list: a
	 * list invalidated while it is fetched is not fetched again in the same
	 * pass, the next pass (one window later) does it.
	 */
	request(list: PublicList): void {
		const current = this.refreshes.get(list);
		if (current) {
			current.dirty = true;
			return;
		}
		const state = { dirty: false, running: Promise.resolve() };
		state.running = (async () => {
			do {
				// Notifications of a burst arrive over several reads: wait until they stop, so they share this refresh.
				let waited = 0;
				do {
					state.dirty = false;
					await new Promise<void>((resolve) => this.timers().set(REFRESH_DEBOUNCE_MS, resolve));
					waited += REFRESH_DEBOUNCE_MS;
				} while (state.dirty && waited < REFRESH_MAX_WAIT_MS);
				state.dirty = false;
				await this.pass(list);
			} while (state.dirty);
		})()
			.catch((error: unknown) => console.warn(`refreshing ${list} failed: ${describeError(error)}`))
			.finally(() => this.refreshes.delete(list));
		this.refreshes.set(list, state);
	}

	/** Whether a refresh is running (its outcome may be a list_changed for the client). */
	get running(): boolean {
		return this.refreshes.size > 0;
	}

	/** Waits for pending refreshes (tests, and a clean shutdown). */
	async settled(): Promise<void> {
		while (this.refreshes.size > 0) await Promise.all([...this.refreshes.values()].map((r) => r.running));
	}
}
