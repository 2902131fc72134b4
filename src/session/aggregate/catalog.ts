import { LIST_KINDS, type ListItems, type ListKind } from "../../mcp/list-kinds.ts";

/**
 * Where the catalog's lists come from: one whole list of one member per
 * fetch (`MemberLists`). A list_changed seen on the way reaches the catalog
 * through `invalidate` (via the router's throttle).
 */
export interface ListSource {
	fetchList<K extends ListKind>(server: string, kind: K): Promise<Array<ListItems[K]>>;
}

interface Entry {
	/** Bumped by every invalidation; a fetch commits only if it is unchanged. */
	generation: number;
	cached?: { items: unknown[]; generation: number };
	flight?: { promise: Promise<unknown[]>; generation: number };
}

/** Attempts per get by default: a list that keeps changing while it is fetched is served as last fetched. */
const MAX_ATTEMPTS = 3;

/**
 * Per-session cache of member lists. Concurrent readers share one fetch per
 * member and kind (single-flight). An invalidation bumps a generation: a fetch
 * that started before it never commits over the newer state, and readers
 * waiting on it fetch again. A burst of invalidations costs one refetch, made
 * by the next reader.
 */
export class Catalog {
	private readonly entries = new Map<string, Entry>();
	/** Changes whenever any list may have changed (an invalidation or a committed fetch). */
	version = 0;

	constructor(private readonly source: ListSource) {}

	/**
	 * The member's list, from cache or one shared fetch. A fetch invalidated
	 * while it ran is repeated, up to `attempts` fetches in all. Throws when the
	 * member fails.
	 */
	async get<K extends ListKind>(server: string, kind: K, attempts = MAX_ATTEMPTS): Promise<Array<ListItems[K]>> {
		// Entries of kind K only ever hold lists of kind K (fetched by `source.fetchList(server, kind)`).
		return (await this.getAny(server, kind, attempts)) as Array<ListItems[K]>;
	}

	/** Marks lists of a member stale; the next get refetches them. */
	invalidate(server: string, kinds: readonly ListKind[]): void {
		for (const kind of kinds) {
			const entry = this.entry(server, kind);
			entry.generation++;
			entry.cached = undefined;
		}
		this.version++;
	}

	/** Forgets everything about a member (its upstream session was replaced). */
	forget(server: string): void {
		this.invalidate(server, Object.keys(LIST_KINDS) as ListKind[]);
	}

	private async getAny(server: string, kind: ListKind, attempts: number): Promise<unknown[]> {
		const entry = this.entry(server, kind);
		for (let attempt = 1; ; attempt++) {
			if (entry.cached && entry.cached.generation === entry.generation) return entry.cached.items;
			let flight = entry.flight;
			if (!flight || flight.generation !== entry.generation) {
				const generation = entry.generation;
				const promise: Promise<unknown[]> = this.source.fetchList(server, kind);
				flight = { promise, generation };
				entry.flight = flight;
				promise.then(
					() => this.settle(entry, promise),
					() => this.settle(entry, promise),
				);
			}
			const items = await flight.promise;
			if (entry.generation === flight.generation) {
				if (entry.cached?.items !== items) this.version++;
				entry.cached = { items, generation: flight.generation };
				return items;
			}
			if (attempt >= attempts) return items;
		}
	}

	private settle(entry: Entry, promise: Promise<unknown[]>): void {
		if (entry.flight?.promise === promise) entry.flight = undefined;
	}

	private entry(server: string, kind: ListKind): Entry {
		const key = `${server}\u0000${kind}`;
		let entry = this.entries.get(key);
		if (!entry) {
			entry = { generation: 0 };
			this.entries.set(key, entry);
		}
		return entry;
	}
}
