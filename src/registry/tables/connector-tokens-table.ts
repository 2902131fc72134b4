import { z } from "zod";
import { type StoredConnectorToken, StoredConnectorTokenSchema } from "../connector-tokens.ts";
import { RecordTable } from "./record-rows.ts";
import type { TableSchema } from "./table-schema.ts";

/** Connector tokens, one row per id, with the digest of the token (never the token). */

/** A token as the registry keeps it: what is published, and when a connector last came with it. */
export const ConnectorTokenRowSchema = StoredConnectorTokenSchema.extend({
	/** When a connector last connected with it (ms since the epoch); null: never. */
	lastSeenAt: z.number().int().nullable(),
});
export type ConnectorTokenRow = z.infer<typeof ConnectorTokenRowSchema>;

const tokens = new RecordTable("connector_tokens", "id", ConnectorTokenRowSchema);

export const CONNECTOR_TOKENS_SCHEMA: TableSchema = {
	create: `
		-- What connectors (mcpgw connect) present, each for one server: the SHA-256 of the token, never the token.
		CREATE TABLE IF NOT EXISTS connector_tokens (
			id TEXT PRIMARY KEY,
			server TEXT NOT NULL,
			digest TEXT NOT NULL UNIQUE,
			created_at INTEGER NOT NULL,
			last_seen_at INTEGER -- NULL: no connector has come with it yet
		);
		CREATE INDEX IF NOT EXISTS connector_tokens_by_server ON connector_tokens (server);
	`,
	addedColumns: [],
};

export class ConnectorTokensTable {
	constructor(private readonly sql: SqlStorage) {}

	/** The tokens of `server`, oldest first. */
	of(server: string): ConnectorTokenRow[] {
		return tokens.select(this.sql, "WHERE server = ? ORDER BY created_at, id", server);
	}

	/** Every token's id (for a full republish). */
	ids(): string[] {
		return tokens.keys(this.sql);
	}

	/** What `connector-token/<id>` holds: the token's record without `lastSeenAt`; null if none. */
	stored(id: string): StoredConnectorToken | null {
		const row = tokens.get(this.sql, id);
		if (!row) return null;
		const { lastSeenAt: _lastSeenAt, ...stored } = row;
		return stored;
	}

	insert(token: ConnectorTokenRow): ConnectorTokenRow {
		return tokens.put(this.sql, token);
	}

	/** Deletes the token `id` of `server`; whether there was one. */
	delete(server: string, id: string): boolean {
		return this.sql.exec("DELETE FROM connector_tokens WHERE id = ? AND server = ?", id, server).rowsWritten > 0;
	}

	/** Deletes every token of `server`; the ids it had. */
	deleteOf(server: string): string[] {
		return this.sql
			.exec<{ id: string }>("DELETE FROM connector_tokens WHERE server = ? RETURNING id", server)
			.toArray()
			.map((row) => row.id);
	}

	/** Records that a connector came with the token `id` at `at`; whether the token exists. */
	seen(id: string, at: number): boolean {
		return this.sql.exec("UPDATE connector_tokens SET last_seen_at = ? WHERE id = ?", at, id).rowsWritten > 0;
	}
}
