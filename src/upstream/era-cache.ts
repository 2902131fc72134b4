import type { ProtocolEra } from "../mcp/protocol-version.ts";
import { ExpiringMap } from "../primitives/expiring-map.ts";

/** What a probe learned of a server: its era, and whether it holds tasks itself (the tasks extension in its `server/discover`). */
export interface Discovered {
	era: ProtocolEra;
	tasks: boolean;
}

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
 * and single-flight per flight (the request or object looking it up), so its
 * concurrent lookups of one key share one probe. Only
 * answers are kept: a probe that failed leaves nothing behind, and the next
 * lookup probes again.
 */
export class EraCache extends ExpiringMap<Discovered> {
	private readonly ttlMs: number;

	constructor(options: EraCacheOptions = {}) {
		super({ maxEntries: options.maxEntries ?? DEFAULT_MAX_ENTRIES, now: options.now });
		this.ttlMs = options.ttlMs ?? DEFAULT_TTL_MS;
	}

	/** What is remembered for `key`, or the answer of the one probe `flight` runs (or starts now) for it. */
	lookup(key: string, probe: () => Promise<Discovered>, flight: object): Promise<Discovered> {
		return this.load(key, probe, () => this.ttlMs, flight);
	}
}
