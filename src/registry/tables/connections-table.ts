import { type ConnectionRecord, ConnectionRecordSchema } from "../schemas.ts";
import { RecordTable } from "./record-rows.ts";
import type { TableSchema } from "./table-schema.ts";

/** Who connected their own account at an oauth server, one row per server and vault. */

const connections = new RecordTable("connections", "id", ConnectionRecordSchema);

export const CONNECTIONS_SCHEMA: TableSchema = {
	create: `
		-- Who connected their own account at an oauth server (the tokens are in their vault, never here).
		CREATE TABLE IF NOT EXISTS connections (
			id TEXT PRIMARY KEY, -- server and vault
			server TEXT NOT NULL,
			vault TEXT NOT NULL,
			issuer TEXT,
			subject TEXT,
			key_id TEXT,
			label TEXT NOT NULL,
			rule TEXT,
			connected_at INTEGER NOT NULL
		);
	`,
	addedColumns: [],
};

export class ConnectionsTable {
	constructor(private readonly sql: SqlStorage) {}

	put(connection: ConnectionRecord): ConnectionRecord {
		return connections.put(this.sql, connection);
	}

	delete(id: string): boolean {
		return connections.delete(this.sql, id);
	}

	/** Who is connected to `server`, first connected first. */
	to(server: string): ConnectionRecord[] {
		return connections.select(this.sql, "WHERE server = ? ORDER BY connected_at", server);
	}

	/** What one vault (a person, a key) has connected. */
	of(vault: string): ConnectionRecord[] {
		return connections.select(this.sql, "WHERE vault = ? ORDER BY server", vault);
	}

	/** The connections made under an access rule. */
	under(rule: string): ConnectionRecord[] {
		return connections.select(this.sql, "WHERE rule = ? ORDER BY server", rule);
	}
}
