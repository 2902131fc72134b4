import { describeError } from "../mcp/gateway-error.ts";
import { KV_FORMAT } from "./kv-records.ts";
import type { RegistryTables } from "./tables/registry-tables.ts";

/** What publishing needs of a KV namespace. Tests swap in failing or gated versions. */
export type KvWriter = Pick<KVNamespace, "put" | "delete">;

/** Longest wait between retries of a publish that failed. */
const MAX_RETRY_MS = 60_000;
const FIRST_RETRY_MS = 1_000;

/**
 * Writes the registry through to Workers KV, after the RegistryDO committed.
 * Every write marks the KV names it changes in an outbox table in the same
 * synchronous step as the write itself (so a committed write is never lost
 * for KV). One drain at a time publishes the outbox, reading each name's
 * value from SQLite when it is written, so the last value to reach KV is the
 * current one, whatever the order of concurrent writes: KV never runs ahead
 * of the registry, and a later write always wins. A name marked again while
 * it is being published stays in the outbox for the next pass. A failed put
 * leaves the outbox as it is and retries by alarm, with backoff.
 */
export class KvPublisher {
	/** Consecutive failed drains, for the retry backoff. */
	private failures = 0;
	private draining: Promise<void> | null = null;
	/** KV puts and deletes made, for cost reports. */
	writes = 0;

	constructor(
		private readonly tables: Pick<RegistryTables, "outbox" | "meta">,
		private readonly storage: DurableObjectStorage,
		public kv: KvWriter,
		/** The value a KV name should hold now; null: it should not exist. */
		private readonly currentValue: (name: string) => unknown,
		/** Every name the registry publishes (for a full republish). */
		private readonly allNames: () => string[],
	) {}

	/** Marks names to publish. Synchronous: call it in the same step as the write it reflects. */
	markDirty(names: readonly string[]): void {
		for (const name of names) this.tables.outbox.mark(name);
	}

	/**
	 * Publishes what a committed write changed: the names are marked in the
	 * same synchronous step as the write (call it right after the write, before
	 * anything awaits), then written through.
	 */
	async publishWrite(names: readonly string[]): Promise<void> {
		this.markDirty(names);
		await this.publish();
	}

	/** After a delete: publishes the names its absence changes, if there was anything to delete; whether there was. */
	async publishDelete(deleted: boolean, names: () => readonly string[]): Promise<boolean> {
		if (!deleted) return false;
		await this.publishWrite(names());
		return true;
	}

	/** Marks everything: a full republish. Returns how many names. */
	markAll(): number {
		const names = this.allNames();
		this.markDirty(names);
		this.tables.meta.set("kv_format", String(KV_FORMAT));
		return names.length;
	}

	/** Whether KV was last published in another format than this version's (or never). */
	formatOutdated(): boolean {
		return this.tables.meta.get("kv_format") !== String(KV_FORMAT);
	}

	/** Names waiting to be published. */
	pending(): number {
		return this.tables.outbox.size();
	}

	/** Publishes the outbox; resolves once it is empty or a put failed (then an alarm retries). Never throws. */
	publish(): Promise<void> {
		this.draining ??= this.drain().finally(() => {
			this.draining = null;
		});
		return this.draining;
	}

	private async drain(): Promise<void> {
		for (;;) {
			const batch = this.tables.outbox.batch(100);
			if (batch.length === 0) {
				this.failures = 0;
				return;
			}
			for (const { name, version } of batch) {
				const value = this.currentValue(name);
				try {
					this.writes++;
					if (value === null) await this.kv.delete(name);
					else await this.kv.put(name, JSON.stringify(value));
				} catch (error) {
					this.failures++;
					const retryIn = Math.min(FIRST_RETRY_MS * 2 ** (this.failures - 1), MAX_RETRY_MS);
					console.warn(
						`registry: publishing ${name} to KV failed (${describeError(error)}); ${this.pending()} name(s) wait, retry in ${retryIn / 1000} s`,
					);
					await this.storage.setAlarm(Date.now() + retryIn);
					return;
				}
				// Marked again meanwhile (a newer write): it stays for the next pass.
				this.tables.outbox.done(name, version);
			}
		}
	}
}
