import { z } from "zod";
import type { Sealed } from "./vault-crypto.ts";

/**
 * A vault object's SQLite tables, one per concern, and every statement the
 * vault runs on them, counted (reads, writes) so tests and benchmarks can
 * assert what the vault costs. Secrets are only ever here sealed: a row's
 * clear columns say what it is and when, never what it holds.
 */

const CREATE_TABLES = `
	CREATE TABLE IF NOT EXISTS connections (
		server TEXT PRIMARY KEY,
		generation TEXT NOT NULL,
		state TEXT NOT NULL,
		connected_at INTEGER NOT NULL,
		key_id TEXT,
		box TEXT
	);
	CREATE TABLE IF NOT EXISTS links (
		nonce_digest TEXT PRIMARY KEY,
		expires_at INTEGER NOT NULL
	);
	CREATE TABLE IF NOT EXISTS flows (
		state_digest TEXT PRIMARY KEY,
		expires_at INTEGER NOT NULL,
		key_id TEXT NOT NULL,
		box TEXT NOT NULL
	);
	CREATE TABLE IF NOT EXISTS registered_client (
		id INTEGER PRIMARY KEY CHECK (id = 1),
		registered_at INTEGER NOT NULL,
		key_id TEXT NOT NULL,
		box TEXT NOT NULL
	);
`;

export const ConnectionStateSchema = z.enum(["connected", "disconnected"]);
export type ConnectionState = z.infer<typeof ConnectionStateSchema>;

/** A connection row: clear columns, and the sealed connection (null once disconnected: the tokens are gone). */
export interface ConnectionRow {
	server: string;
	generation: string;
	state: ConnectionState;
	connectedAt: number;
	sealed: Sealed | null;
}

const ConnectionRowSchema = z
	.object({
		server: z.string(),
		generation: z.string(),
		state: ConnectionStateSchema,
		connected_at: z.number(),
		key_id: z.string().nullable(),
		box: z.string().nullable(),
	})
	.transform(
		(row): ConnectionRow => ({
			server: row.server,
			generation: row.generation,
			state: row.state,
			connectedAt: row.connected_at,
			sealed: row.key_id !== null && row.box !== null ? { keyId: row.key_id, box: row.box } : null,
		}),
	);

const SealedRowSchema = z
	.object({ expires_at: z.number(), key_id: z.string(), box: z.string() })
	.transform((row) => ({ expiresAt: row.expires_at, sealed: { keyId: row.key_id, box: row.box } }));

const ClientRowSchema = z
	.object({ key_id: z.string(), box: z.string() })
	.transform((row): Sealed => ({ keyId: row.key_id, box: row.box }));

/** The row parsed, or null (logged) when this code cannot read it: treated as absent, never guessed at. */
function parsedRow<T>(schema: z.ZodType<T>, raw: unknown, table: string): T | null {
	const parsed = schema.safeParse(raw);
	if (parsed.success) return parsed.data;
	console.error(`token vault: unreadable ${table} row: ${parsed.error.issues[0]?.message}`);
	return null;
}

export class VaultStore {
	/** Statements that read rows, and statements that write (or delete) them. */
	reads = 0;
	writes = 0;

	constructor(private readonly sql: SqlStorage) {
		sql.exec(CREATE_TABLES);
	}

	connection(server: string): ConnectionRow | null {
		this.reads++;
		const raw = this.sql.exec("SELECT * FROM connections WHERE server = ?", server).toArray()[0];
		return raw === undefined ? null : parsedRow(ConnectionRowSchema, raw, "connections");
	}

	connections(): ConnectionRow[] {
		this.reads++;
		return this.sql
			.exec("SELECT * FROM connections ORDER BY server")
			.toArray()
			.flatMap((raw) => parsedRow(ConnectionRowSchema, raw, "connections") ?? []);
	}

	putConnection(row: ConnectionRow): void {
		this.writes++;
		this.sql.exec(
			"INSERT OR REPLACE INTO connections (server, generation, state, connected_at, key_id, box) VALUES (?, ?, ?, ?, ?, ?)",
			row.server,
			row.generation,
			row.state,
			row.connectedAt,
			row.sealed?.keyId ?? null,
			row.sealed?.box ?? null,
		);
	}

	/** Deletes a connection row; returns it (as it was) when there was one. */
	deleteConnection(server: string): ConnectionRow | null {
		this.writes++;
		const raw = this.sql.exec("DELETE FROM connections WHERE server = ? RETURNING *", server).toArray()[0];
		return raw === undefined ? null : parsedRow(ConnectionRowSchema, raw, "connections");
	}

	/** Deletes every connection row; returns them as they were. */
	deleteConnections(): ConnectionRow[] {
		this.writes++;
		return this.sql
			.exec("DELETE FROM connections RETURNING *")
			.toArray()
			.flatMap((raw) => parsedRow(ConnectionRowSchema, raw, "connections") ?? []);
	}

	/** Records a link's nonce as used; false when it was used before. */
	useLink(nonceDigest: string, expiresAt: number): boolean {
		this.writes++;
		const cursor = this.sql.exec(
			"INSERT OR IGNORE INTO links (nonce_digest, expires_at) VALUES (?, ?)",
			nonceDigest,
			expiresAt,
		);
		return cursor.rowsWritten > 0;
	}

	/** Stores a flow; false when a flow of that state exists already. */
	putFlow(stateDigest: string, expiresAt: number, sealed: Sealed): boolean {
		this.writes++;
		const cursor = this.sql.exec(
			"INSERT OR IGNORE INTO flows (state_digest, expires_at, key_id, box) VALUES (?, ?, ?, ?)",
			stateDigest,
			expiresAt,
			sealed.keyId,
			sealed.box,
		);
		return cursor.rowsWritten > 0;
	}

	/** Deletes a flow and returns it: whoever takes it first is the only one to get it. */
	takeFlow(stateDigest: string): { expiresAt: number; sealed: Sealed } | null {
		this.writes++;
		const raw = this.sql
			.exec("DELETE FROM flows WHERE state_digest = ? RETURNING expires_at, key_id, box", stateDigest)
			.toArray()[0];
		return raw === undefined ? null : parsedRow(SealedRowSchema, raw, "flows");
	}

	deleteFlows(): void {
		this.writes++;
		this.sql.exec("DELETE FROM flows");
	}

	/** Deletes the links and flows that expired by `now`. */
	sweep(now: number): void {
		this.writes++;
		this.sql.exec("DELETE FROM links WHERE expires_at <= ?", now);
		this.sql.exec("DELETE FROM flows WHERE expires_at <= ?", now);
	}

	registeredClient(): Sealed | null {
		this.reads++;
		const raw = this.sql.exec("SELECT key_id, box FROM registered_client WHERE id = 1").toArray()[0];
		return raw === undefined ? null : parsedRow(ClientRowSchema, raw, "registered_client");
	}

	putRegisteredClient(sealed: Sealed, registeredAt: number): void {
		this.writes++;
		this.sql.exec(
			"INSERT OR REPLACE INTO registered_client (id, registered_at, key_id, box) VALUES (1, ?, ?, ?)",
			registeredAt,
			sealed.keyId,
			sealed.box,
		);
	}

	/** Deletes the registration; returns whether there was one. */
	deleteRegisteredClient(): boolean {
		this.writes++;
		return this.sql.exec("DELETE FROM registered_client WHERE id = 1").rowsWritten > 0;
	}
}
