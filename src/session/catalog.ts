/** The lists a member server can offer, with the method and result field of each. */
export const LIST_KINDS = {
	tools: { method: "tools/list", field: "tools" },
	prompts: { method: "prompts/list", field: "prompts" },
	resources: { method: "resources/list", field: "resources" },
	resourceTemplates: { method: "resources/templates/list", field: "resourceTemplates" },
} as const;
export type ListKind = keyof typeof LIST_KINDS;

/** Which lists an upstream `notifications/.../list_changed` invalidates. */
export const INVALIDATED_BY: Record<string, readonly ListKind[]> = {
	"notifications/tools/list_changed": ["tools"],
	"notifications/prompts/list_changed": ["prompts"],
	"notifications/resources/list_changed": ["resources", "resourceTemplates"],
};

/** Fetches one whole list from one member; may report notifications seen on the way. */
export type ListFetcher = (
	server: string,
	kind: ListKind,
	onInvalidate: (kinds: readonly ListKind[]) => void,
) => Promise<unknown[]>;

interface Entry {
	/** Bumped by every invalidation; a fetch commits only if it is unchanged. */
	generation: number;
	cached?: { items: unknown[]; generation: number };
	flight?: { promise: Promise<unknown[]>; generation: number };
}

/** Attempts per get: a list that keeps changing while it is fetched is served as last fetched. */
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

	constructor(private readonly fetchList: ListFetcher) {}

	/** The member's list, from cache or one shared fetch. Throws when the member fails. */
	async get(server: string, kind: ListKind): Promise<unknown[]> {
		const entry = this.entry(server, kind);
		for (let attempt = 1; ; attempt++) {
			if (entry.cached && entry.cached.generation === entry.generation) return entry.cached.items;
			let flight = entry.flight;
			if (!flight || flight.generation !== entry.generation) {
				const generation = entry.generation;
				const promise = this.fetchList(server, kind, (kinds) => this.invalidate(server, kinds));
				flight = { promise, generation };
				entry.flight = flight;
				promise.then(
					() => this.settle(entry, promise),
					() => this.settle(entry, promise),
				);
			}
			const items = await flight.promise;
			if (entry.generation === flight.generation) {
				entry.cached = { items, generation: flight.generation };
				return items;
			}
			if (attempt >= MAX_ATTEMPTS) return items;
		}
	}

	/** Marks lists of a member stale; the next get refetches them. */
	invalidate(server: string, kinds: readonly ListKind[]): void {
		for (const kind of kinds) {
			const entry = this.entry(server, kind);
			entry.generation++;
			entry.cached = undefined;
		}
	}

	/** Forgets everything about a member (its upstream session was replaced). */
	forget(server: string): void {
		for (const kind of Object.keys(LIST_KINDS) as ListKind[]) this.invalidate(server, [kind]);
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
