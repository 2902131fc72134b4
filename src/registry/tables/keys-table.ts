import { type StoredKey, StoredKeySchema } from "../kv-records.ts";
import { type ApiKeyRecord, ApiKeyRecordSchema } from "../schemas.ts";
import { type ColumnCodec, JSON_TEXT, RecordTable } from "./record-rows.ts";
import type { TableSchema } from "./table-schema.ts";

/** The API keys, one row per id, with the digest of the key (never the key). */

/** Keys issued before self-verifying keys are of format 1, the others of 2. */
const KEY_FORMAT: ColumnCodec = {
	column: "key_format",
	toColumn: (format) => (format === "legacy" ? 1 : 2),
	fromColumn: (value) => (value === 1 ? "legacy" : "self-verifying"),
};

/** Keys as read back: never the digest. */
const keys = new RecordTable("api_keys", "id", ApiKeyRecordSchema, {
	servers: JSON_TEXT,
	format: KEY_FORMAT,
	alwaysList: JSON_TEXT,
});
/** Keys with the digest of the secret: written once, and read to publish. */
const storedKeys = new RecordTable("api_keys", "id", StoredKeySchema, {
	servers: JSON_TEXT,
	format: KEY_FORMAT,
	alwaysList: JSON_TEXT,
});

const added = (column: string, type: string) => ({ table: "api_keys", column, type });

export const KEYS_SCHEMA: TableSchema = {
	create: `
		CREATE TABLE IF NOT EXISTS api_keys (
			id TEXT PRIMARY KEY,
			name TEXT,
			digest TEXT NOT NULL UNIQUE,
			user_path TEXT NOT NULL,
			servers TEXT,
			max_sessions INTEGER,
			rate_class TEXT NOT NULL DEFAULT 'standard',
			disclosure TEXT NOT NULL DEFAULT 'full',
			always_list TEXT NOT NULL DEFAULT '[]', -- JSON array of globs
			key_format INTEGER NOT NULL DEFAULT 2,
			created_at INTEGER NOT NULL
		);
	`,
	addedColumns: [
		added("max_sessions", "INTEGER"),
		// Keys issued before self-verifying keys are of the first format.
		added("key_format", "INTEGER NOT NULL DEFAULT 1"),
		// Keys made before rate classes were counted by KEY_RATE_LIMITER, which is standard.
		added("rate_class", "TEXT NOT NULL DEFAULT 'standard'"),
		// Keys made before tool search list every tool, as they did.
		added("disclosure", "TEXT NOT NULL DEFAULT 'full'"),
		added("always_list", "TEXT NOT NULL DEFAULT '[]'"),
	],
};

export class KeysTable {
	constructor(private readonly sql: SqlStorage) {}

	get(id: string): ApiKeyRecord | null {
		return keys.get(this.sql, id);
	}

	/** Every key, oldest first. */
	list(): ApiKeyRecord[] {
		return keys.select(this.sql, "ORDER BY created_at, id");
	}

	ids(): string[] {
		return this.sql
			.exec<{ id: string }>("SELECT id FROM api_keys")
			.toArray()
			.map((row) => row.id);
	}

	/** Those of `ids` that are API keys. */
	existing(ids: readonly string[]): Set<string> {
		return keys.existing(this.sql, ids);
	}

	/** A key's record with its digest (what is published as `key/<id>`); null if none. */
	stored(id: string): StoredKey | null {
		return storedKeys.get(this.sql, id);
	}

	insert(key: StoredKey): void {
		storedKeys.put(this.sql, key);
	}

	delete(id: string): boolean {
		return keys.delete(this.sql, id);
	}
}
