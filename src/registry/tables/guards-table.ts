import { type GuardInput, type GuardRecord, GuardRecordSchema } from "../guard-records.ts";
import { type ColumnCodec, JSON_TEXT, RecordTable } from "./record-rows.ts";
import type { TableSchema } from "./table-schema.ts";

/** Content guards, one row per name: governance scans with them; the registry keeps and publishes them. */

/**
 * A webhook guard has no action; its row says 'webhook' there, since the
 * column was made NOT NULL before webhook guards were built (SQLite cannot
 * drop the constraint without rebuilding the table).
 */
const ACTION_OR_WEBHOOK: ColumnCodec = {
	toColumn: (value) => (typeof value === "string" ? value : "webhook"),
	fromColumn: (value) => (value === "webhook" ? null : value),
};

const guards = new RecordTable("guards", "name", GuardRecordSchema, {
	applies: JSON_TEXT,
	detect: JSON_TEXT,
	action: ACTION_OR_WEBHOOK,
	webhook: JSON_TEXT,
});

export const GUARDS_SCHEMA: TableSchema = {
	create: `
		CREATE TABLE IF NOT EXISTS guards (
			name TEXT PRIMARY KEY,
			stage TEXT NOT NULL, -- 'request' or 'response'
			applies TEXT, -- JSON object of servers, virtualServers, keys, rules, tools; NULL means everywhere
			detect TEXT NOT NULL, -- JSON array of detector kinds
			action TEXT NOT NULL, -- 'redact', 'block' or 'log'; 'webhook' for a webhook guard
			created_at INTEGER NOT NULL,
			updated_at INTEGER NOT NULL,
			webhook TEXT -- JSON object: url, secret (a reference), timeoutMs, onFailure; NULL for a detect guard
		);
	`,
	addedColumns: [{ table: "guards", column: "webhook", type: "TEXT" }],
};

export class GuardsTable {
	constructor(private readonly sql: SqlStorage) {}

	/** Every guard, by name (the order they run in). */
	list(): GuardRecord[] {
		return guards.select(this.sql, "ORDER BY name");
	}

	get(name: string): GuardRecord | null {
		return guards.get(this.sql, name);
	}

	/** Every name, in order (for "did you mean" in refusals). */
	names(): string[] {
		return guards.keys(this.sql);
	}

	/** Creates or replaces a guard; a replacement keeps when it was created. */
	write(name: string, input: GuardInput, now: number): { guard: GuardRecord; created: boolean } {
		const existing = guards.get(this.sql, name);
		const guard = guards.put(this.sql, {
			name,
			stage: input.stage,
			applies: input.applies ?? null,
			detect: input.detect ?? [],
			action: input.webhook ? null : (input.action ?? null),
			webhook: input.webhook ?? null,
			createdAt: existing?.createdAt ?? now,
			updatedAt: now,
		});
		return { guard, created: existing === null };
	}

	delete(name: string): boolean {
		return guards.delete(this.sql, name);
	}
}
