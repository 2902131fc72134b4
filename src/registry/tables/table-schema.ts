/**
 * What a table module declares of its tables for the migration runner
 * (migrations.ts): how this version creates them, and what a registry
 * created by an earlier version lacks.
 */

/** A column a later version added to a table: older registries get it, at the end of the table. */
export interface AddedColumn {
	readonly table: string;
	readonly column: string;
	/** Its type and constraints, as `ALTER TABLE … ADD COLUMN` takes them; a default says what older rows hold. */
	readonly type: string;
}

export interface TableSchema {
	/** `CREATE TABLE IF NOT EXISTS` for each of its tables, with every column this version has. */
	readonly create: string;
	/** The columns added since its tables were first created, in the order the versions added them. */
	readonly addedColumns: readonly AddedColumn[];
	/** What older rows lack that a default cannot give, filled in once every table has its columns. */
	readonly backfill?: (sql: SqlStorage) => Promise<void>;
}
