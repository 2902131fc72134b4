import { ACCESS_RULES_SCHEMA } from "./access-rules-table.ts";
import { CONNECTIONS_SCHEMA } from "./connections-table.ts";
import { CONNECTOR_TOKENS_SCHEMA } from "./connector-tokens-table.ts";
import { GUARDS_SCHEMA } from "./guards-table.ts";
import { KEYS_SCHEMA } from "./keys-table.ts";
import { META_SCHEMA } from "./meta-table.ts";
import { OBSERVED_TOOLS_SCHEMA } from "./observed-tools-table.ts";
import { OPENAPI_APIS_SCHEMA } from "./openapi-apis-table.ts";
import { OUTBOX_SCHEMA } from "./outbox-table.ts";
import { PINS_SCHEMA } from "./pins-table.ts";
import { POLICIES_SCHEMA } from "./policies-table.ts";
import { SERVERS_SCHEMA } from "./servers-table.ts";
import type { AddedColumn, TableSchema } from "./table-schema.ts";
import { VIRTUAL_SERVERS_SCHEMA } from "./virtual-servers-table.ts";

/**
 * The registry's tables created and brought up to date, each table module
 * declaring its own (table-schema.ts). There is no schema version: a column
 * is added when the table lacks it, so a registry of any earlier version
 * gets exactly what it lacks, and running again changes nothing. Each
 * table's columns are added in the order its versions added them, which is
 * what decides its columns' order; tables are independent of one another.
 */

/** In the order the tables are created. */
const SCHEMAS: readonly TableSchema[] = [
	SERVERS_SCHEMA,
	KEYS_SCHEMA,
	OUTBOX_SCHEMA,
	META_SCHEMA,
	ACCESS_RULES_SCHEMA,
	CONNECTIONS_SCHEMA,
	POLICIES_SCHEMA,
	PINS_SCHEMA,
	VIRTUAL_SERVERS_SCHEMA,
	OBSERVED_TOOLS_SCHEMA,
	CONNECTOR_TOKENS_SCHEMA,
	OPENAPI_APIS_SCHEMA,
	GUARDS_SCHEMA,
];

/** Creates the tables a registry does not have yet, as this version creates them. Synchronous. */
export function createTables(sql: SqlStorage): void {
	for (const schema of SCHEMAS) sql.exec(schema.create);
}

/**
 * Brings the tables of a registry created by an earlier version up to date
 * (the newer columns, then what older rows lack, such as every server's
 * config digest), before the first request is served.
 */
export async function migrateTables(sql: SqlStorage): Promise<void> {
	for (const schema of SCHEMAS) {
		for (const added of schema.addedColumns) addColumn(sql, added);
	}
	for (const schema of SCHEMAS) await schema.backfill?.(sql);
}

function addColumn(sql: SqlStorage, { table, column, type }: AddedColumn): void {
	const present = sql
		.exec<{ name: string }>(`SELECT name FROM pragma_table_info('${table}')`)
		.toArray()
		.some((row) => row.name === column);
	if (!present) sql.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${type}`);
}
