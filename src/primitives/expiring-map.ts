export interface ExpiringMapOptions {
	/** Entries kept at most; past it the one written longest ago goes first. */
	maxEntries: number;
	/** The clock, in milliseconds (tests pass their own). */
	now?: (() => number) | undefined;
}

/**
 * What one isolate remembers for a while: registry records and tokens at the
 * edge, upstreams' eras, who is over a rate limit. Bounded, so a flood of
 * names cannot grow memory: past `maxEntries` the entry written longest ago
 * goes first. An entry is believed until its time is up, then dropped when
 * next read.
 *
 * `load` is single-flight within a flight: concurrent loads of one key that
 * name the same flight share one call, and only what it resolves to is kept
 * (a rejection leaves nothing). A flight is the request or the Durable Object
 * the load runs for (its registry reader, its upstream target, the object
 * itself). Settled values are shared by everyone in the isolate; a pending load
 * never is: its I/O belongs to the request or object that started it, which
 * the runtime may end (and cancel it with) or whose context another object must
 * not continue in ("Cannot perform I/O on behalf of a different Durable Object").
 * Many objects share an isolate, in production as under `wrangler dev`.
 *
 * @example
 * const records = new ExpiringMap<StoredKey | null>({ maxEntries: 1_000 });
 * // Absent records are not kept: something created works the moment KV has it.
 * const key = await records.load(id, () => reader.key(id), (found) => (found ? ttlMs : 0), reader);
 */
export class ExpiringMap<V> {
	private readonly entries = new Map<string, { value: V; expiresAt: number }>();
	/** Loads under way, per flight: what one request or object started is awaited by it alone. */
	private loads = new WeakMap<object, Map<string, Promise<V>>>();
	private readonly maxEntries: number;
	private readonly now: () => number;

	constructor(options: ExpiringMapOptions) {
		this.maxEntries = options.maxEntries;
		this.now = options.now ?? Date.now;
	}

	/** The value of `key` while it is fresh; an expired one is dropped. */
	get(key: string): V | undefined {
		const entry = this.entries.get(key);
		if (!entry) return undefined;
		if (entry.expiresAt > this.now()) return entry.value;
		this.entries.delete(key);
		return undefined;
	}

	/** Forgets `key` (a load under way still finishes and writes what it loaded). */
	delete(key: string): void {
		this.entries.delete(key);
	}

	/** Keeps `value` under `key` for `ttlMs` (0 or less keeps nothing, and forgets what was there). */
	set(key: string, value: V, ttlMs: number): void {
		this.write(key, value, this.now() + ttlMs, ttlMs);
	}

	/**
	 * The value of `key`: from memory while fresh, else what `loader` resolves
	 * to, shared with every load of `key` in the same `flight` meanwhile (the
	 * request or object the load runs for; see the class). It is kept for
	 * `keepFor(value)` milliseconds (0: not kept), counted from when the load
	 * began, so a value is never believed longer than that after it was asked for.
	 */
	load(key: string, loader: () => Promise<V>, keepFor: (value: V) => number, flight: object): Promise<V> {
		const known = this.get(key);
		if (known !== undefined) return Promise.resolve(known);
		let loads = this.loads.get(flight);
		if (!loads) {
			loads = new Map();
			this.loads.set(flight, loads);
		}
		let running = loads.get(key);
		if (!running) {
			const began = this.now();
			const own = loads;
			running = loader()
				.then((value) => {
					const ttlMs = keepFor(value);
					this.write(key, value, began + ttlMs, ttlMs);
					return value;
				})
				.finally(() => own.delete(key));
			loads.set(key, running);
		}
		return running;
	}

	/** Forgets every entry; loads in flight still resolve for their callers, and keep nothing. */
	clear(): void {
		this.entries.clear();
		this.loads = new WeakMap();
	}

	/** Entries held now (expired ones included until they are read or pushed out). */
	get size(): number {
		return this.entries.size;
	}

	private write(key: string, value: V, expiresAt: number, ttlMs: number): void {
		// Written again is written last: the bound pushes out what was written longest ago.
		this.entries.delete(key);
		if (ttlMs <= 0) return;
		if (this.entries.size >= this.maxEntries) {
			const oldest = this.entries.keys().next();
			if (!oldest.done) this.entries.delete(oldest.value);
		}
		this.entries.set(key, { value, expiresAt });
	}
}

/** A `keepFor` that keeps what was found for `ttlMs` and never keeps an absence (null). */
export function keepFound(ttlMs: number): (value: unknown) => number {
	return (value) => (value === null ? 0 : ttlMs);
}

/** Every isolate-wide cache made by `isolateCache`, for `forgetIsolateCaches`. */
const isolateCaches = new Set<ExpiringMap<unknown>>();

/**
 * A cache that lives as long as the isolate (a module's own, made once at load):
 * what `forgetIsolateCaches` empties. Per-request maps use `new ExpiringMap`.
 */
export function isolateCache<V>(options: ExpiringMapOptions): ExpiringMap<V> {
	const cache = new ExpiringMap<V>(options);
	isolateCaches.add(cache as ExpiringMap<unknown>);
	return cache;
}

/**
 * Empties every isolate-wide cache, as a fresh isolate would start. The gateway
 * never calls it; the test suite runs its files one after another in one isolate,
 * and calls it between files, so that what one file cached with its own settings
 * (a 60 s TTL, a token's lifetime) never answers for the next.
 */
export function forgetIsolateCaches(): void {
	for (const cache of isolateCaches) cache.clear();
}
