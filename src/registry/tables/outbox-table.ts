import type { TableSchema } from "./table-schema.ts";

/** The KV names waiting to be published (KvPublisher), one row per name. */

export const OUTBOX_SCHEMA: TableSchema = {
	create: `
		-- KV names to publish (KvPublisher): version bumps when a name is marked again.
		CREATE TABLE IF NOT EXISTS kv_outbox (
			name TEXT PRIMARY KEY,
			version INTEGER NOT NULL
		);
	`,
	addedColumns: [],
};

export class OutboxTable {
	constructor(private readonly sql: SqlStorage) {}

	/** Marks a KV name to publish; marked again, its version bumps. */
	mark(name: string): void {
		this.sql.exec(
			"INSERT INTO kv_outbox (name, version) VALUES (?, 1) ON CONFLICT(name) DO UPDATE SET version = version + 1",
			name,
		);
	}

	/** The next names to publish, in name order. */
	batch(limit: number): Array<{ name: string; version: number }> {
		return this.sql
			.exec<{ name: string; version: number }>("SELECT name, version FROM kv_outbox ORDER BY name LIMIT ?", limit)
			.toArray();
	}

	/** A name published at `version`: it leaves the outbox unless it was marked again meanwhile. */
	done(name: string, version: number): void {
		this.sql.exec("DELETE FROM kv_outbox WHERE name = ? AND version = ?", name, version);
	}

	size(): number {
		return this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM kv_outbox").one().n;
	}
}
