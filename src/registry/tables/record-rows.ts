import type { z } from "zod";

/**
 * A record kept as a table row, field by field: each field in the column of
 * its snake_case name (`timeoutSeconds` in `timeout_seconds`) unless a codec
 * says otherwise. A row read back is parsed with the record's schema, so the
 * schema is the one declaration of the record, its row and its columns.
 */

export type Row = Record<string, SqlStorageValue>;

/** How one field is kept in its column, where that is not as it is under its snake_case name. */
export interface ColumnCodec {
	column?: string;
	toColumn(value: unknown): SqlStorageValue;
	fromColumn(value: SqlStorageValue | undefined): unknown;
}

/** Lists and objects as JSON text; SQL NULL stays null. */
export const JSON_TEXT: ColumnCodec = {
	toColumn: (value) => (value === null || value === undefined ? null : JSON.stringify(value)),
	fromColumn: (value) => (typeof value === "string" ? JSON.parse(value) : value),
};

/** A flag as SQLite keeps one: 0 or 1. */
export const BOOLEAN_INTEGER: ColumnCodec = {
	toColumn: (value) => (value === true ? 1 : 0),
	fromColumn: (value) => value === 1,
};

const AS_IS: ColumnCodec = {
	toColumn(value) {
		if (value === undefined) return null;
		if (value === null || typeof value === "string" || typeof value === "number") return value;
		throw new Error(`a ${typeof value} needs a column codec to be stored`);
	},
	fromColumn: (value) => value,
};

const snakeCase = (field: string) => field.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);

/** One table whose rows are records of `schema`, keyed by the column `key`; the SQL it runs is built from the schema. */
export class RecordTable<S extends z.ZodObject> {
	private readonly fields: ReadonlyArray<{ field: string; column: string; codec: ColumnCodec }>;
	/** The record's columns, for a SELECT list. */
	readonly columns: string;

	constructor(
		readonly table: string,
		/** The primary key's column. */
		readonly key: string,
		readonly schema: S,
		codecs: Partial<Record<Extract<keyof z.output<S>, string>, ColumnCodec>> = {},
	) {
		const byField: Partial<Record<string, ColumnCodec>> = codecs;
		this.fields = Object.keys(schema.shape).map((field) => {
			const codec = byField[field] ?? AS_IS;
			return { field, column: codec.column ?? snakeCase(field), codec };
		});
		this.columns = this.fields.map(({ column }) => column).join(", ");
	}

	/** A row as its record; a row that does not parse is an error, never a record. */
	read(row: Row): z.output<S> {
		return this.schema.parse(
			Object.fromEntries(this.fields.map(({ field, column, codec }) => [field, codec.fromColumn(row[column])])),
		);
	}

	/** The records of `SELECT <columns> FROM <table> <rest>`. */
	select(sql: SqlStorage, rest: string, ...bindings: SqlStorageValue[]): z.output<S>[] {
		return sql
			.exec(`SELECT ${this.columns} FROM ${this.table} ${rest}`, ...bindings)
			.toArray()
			.map((row) => this.read(row));
	}

	/** Every row's key, in order: the names a mistyped one is compared with. */
	keys(sql: SqlStorage): string[] {
		return sql
			.exec(`SELECT ${this.key} AS key FROM ${this.table} ORDER BY ${this.key}`)
			.toArray()
			.map((row) => String(row.key));
	}

	/** Those of `keys` that some row has as its key, in one query. */
	existing(sql: SqlStorage, keys: readonly string[]): Set<string> {
		return new Set(
			sql
				.exec(
					`SELECT ${this.key} AS key FROM ${this.table} WHERE ${this.key} IN (SELECT value FROM json_each(?))`,
					JSON.stringify(keys),
				)
				.toArray()
				.map((row) => String(row.key)),
		);
	}

	/** The record whose key is `key`, or null. */
	get(sql: SqlStorage, key: SqlStorageValue): z.output<S> | null {
		return this.select(sql, `WHERE ${this.key} = ?`, key)[0] ?? null;
	}

	/** Writes a record (inserted, or every column of the row with its key replaced) and reads it back. */
	put(sql: SqlStorage, record: z.output<S>): z.output<S> {
		const values: Record<string, unknown> = record;
		const key = this.fields.find(({ column }) => column === this.key);
		if (!key) throw new Error(`${this.table}: the key ${this.key} is none of the record's columns`);
		const updates = this.fields
			.filter(({ column }) => column !== this.key)
			.map(({ column }) => `${column} = excluded.${column}`);
		sql.exec(
			`INSERT INTO ${this.table} (${this.columns}) VALUES (${this.fields.map(() => "?").join(", ")})
			 ON CONFLICT(${this.key}) DO UPDATE SET ${updates.join(", ")}`,
			...this.fields.map(({ field, codec }) => codec.toColumn(values[field])),
		);
		const keyValue = key.codec.toColumn(values[key.field]);
		const written = this.get(sql, keyValue);
		if (!written) throw new Error(`${this.table}: ${String(keyValue)} vanished right after it was written`);
		return written;
	}

	/** Deletes the record whose key is `key`; whether there was one. */
	delete(sql: SqlStorage, key: SqlStorageValue): boolean {
		return sql.exec(`DELETE FROM ${this.table} WHERE ${this.key} = ?`, key).rowsWritten > 0;
	}
}
