import type { ProtocolEra } from "../mcp/protocol-version.ts";

export interface EraCacheOptions {
	/** Answers kept at most; the oldest goes first. */
	maxEntries?: number;
	/** How long an answer is believed. */
	ttlMs?: number;
	now?: () => number;
}

/** Enough for every server of a large registry; an entry is a short key and a word. */
const DEFAULT_MAX_ENTRIES = 256;

/**
 * An upgraded server is found within this long. The era is a property of the
 * server (spec: basic/versioning, "Backward Compatibility"), so a new
 * generation or configuration is asked at once anyway; the TTL is for a
 * server replaced in place behind the same registration.
 */
const DEFAULT_TTL_MS = 10 * 60_000;

/**
 * Eras found by probing, per isolate: bounded, each believed for a while,
 * and single-flight, so concurrent lookups of one key share one probe. Only
 * answers are kept: a probe that failed leaves nothing behind, and the next
 * lookup probes again.
 */
export class EraCache {
	private readonly answers = new Map<string, { era: ProtocolEra; expiresAt: number }>();
	private readonly probes = new Map<string, Promise<ProtocolEra>>();
	private readonly maxEntries: number;
	private readonly ttlMs: number;
	private readonly now: () => number;

	constructor(options: EraCacheOptions = {}) {
		this.maxEntries = options.maxEntries ?? DEFAULT_MAX_ENTRIES;
		this.ttlMs = options.ttlMs ?? DEFAULT_TTL_MS;
		this.now = options.now ?? (() => Date.now());
	}

	/** The era remembered for `key`, or the answer of the one probe running (or started now) for it. */
	lookup(key: string, probe: () => Promise<ProtocolEra>): Promise<ProtocolEra> {
		const known = this.answers.get(key);
		if (known && known.expiresAt > this.now()) return Promise.resolve(known.era);
		this.answers.delete(key);
		let running = this.probes.get(key);
		if (!running) {
			running = probe()
				.then((era) => {
					this.remember(key, era);
					return era;
				})
				.finally(() => this.probes.delete(key));
			this.probes.set(key, running);
		}
		return running;
	}

	/** Answers held now (expired ones included until they are looked up or pushed out). */
	get size(): number {
		return this.answers.size;
	}

	private remember(key: string, era: ProtocolEra): void {
		this.answers.delete(key);
		if (this.answers.size >= this.maxEntries) {
			const oldest = this.answers.keys().next();
			if (!oldest.done) this.answers.delete(oldest.value);
		}
		this.answers.set(key, { era, expiresAt: this.now() + this.ttlMs });
	}
}
