/**
 * Registry records kept in one isolate's memory for a few seconds, so most
 * requests cost no KV read: bounded (the oldest entry goes first), with
 * concurrent misses for one name sharing one read. Absent records (null) are
 * never kept, so something created works the moment it reaches KV.
 */
export class IsolateCache<T> {
	private readonly entries = new Map<string, { value: T; expiresAt: number }>();
	private readonly reads = new Map<string, Promise<T | null>>();

	constructor(private readonly maxEntries: number) {}

	/** The cached value of `name`, if it is still fresh. */
	fresh(name: string, now = Date.now()): T | undefined {
		const entry = this.entries.get(name);
		return entry && entry.expiresAt > now ? entry.value : undefined;
	}

	/** The value of `name`: from memory while fresh, else from `read` (kept for `ttlMs`; 0 keeps nothing). */
	async get(name: string, ttlMs: number, read: () => Promise<T | null>): Promise<T | null> {
		const now = Date.now();
		const cached = this.fresh(name, now);
		if (cached !== undefined) return cached;
		let reading = this.reads.get(name);
		if (!reading) {
			reading = read().finally(() => this.reads.delete(name));
			this.reads.set(name, reading);
		}
		const value = await reading;
		if (value !== null && ttlMs > 0) {
			if (this.entries.size >= this.maxEntries && !this.entries.has(name)) {
				const oldest = this.entries.keys().next();
				if (!oldest.done) this.entries.delete(oldest.value);
			}
			this.entries.set(name, { value, expiresAt: now + ttlMs });
		}
		return value;
	}
}
