import type { TableSchema } from "./table-schema.ts";

/** The registry's own values by key (the KV record format it last published in). */

export const META_SCHEMA: TableSchema = {
	create: `
		CREATE TABLE IF NOT EXISTS meta (
			key TEXT PRIMARY KEY,
			value TEXT NOT NULL
		);
	`,
	addedColumns: [],
};

export class MetaTable {
	constructor(private readonly sql: SqlStorage) {}

	get(key: string): string | null {
		return this.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = ?", key).toArray()[0]?.value ?? null;
	}

	set(key: string, value: string): void {
		this.sql.exec("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", key, value);
	}
}
