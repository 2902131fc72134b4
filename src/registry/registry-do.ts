import { DurableObject } from "cloudflare:workers";
import { randomToken, sha256Hex } from "../crypto.ts";
import type { Env } from "../env.ts";
import type { ApiKeyRecord, KeyInput, ServerInput, ServerRecord } from "./schemas.ts";

/** The registry is one Durable Object instance under this name. */
export const REGISTRY_NAME = "registry";

/** Prefix that makes gateway API keys recognisable in secret scanners and logs. */
const API_KEY_PREFIX = "mcpgw_";

interface ServerRow extends Record<string, SqlStorageValue> {
	name: string;
	url: string;
	headers: string;
	timeout_seconds: number | null;
	generation: string;
	created_at: number;
	updated_at: number;
}

interface KeyRow extends Record<string, SqlStorageValue> {
	id: string;
	name: string | null;
	user_path: string;
	servers: string | null;
	created_at: number;
}

/**
 * The registry of upstream servers and API keys, in SQLite. Reads go through
 * RPC from the edge (cached per isolate) and from SessionDOs (rechecks).
 */
export class RegistryDO extends DurableObject<Env> {
	private readonly sql: SqlStorage;
	/** Reads served, for cost assertions in tests and benchmarks. */
	reads = 0;

	constructor(ctx: DurableObjectState, env: Env) {
		super(ctx, env);
		this.sql = ctx.storage.sql;
		this.sql.exec(`
			CREATE TABLE IF NOT EXISTS servers (
				name TEXT PRIMARY KEY,
				url TEXT NOT NULL,
				headers TEXT NOT NULL,
				timeout_seconds INTEGER,
				generation TEXT NOT NULL,
				created_at INTEGER NOT NULL,
				updated_at INTEGER NOT NULL
			);
			CREATE TABLE IF NOT EXISTS api_keys (
				id TEXT PRIMARY KEY,
				name TEXT,
				digest TEXT NOT NULL UNIQUE,
				user_path TEXT NOT NULL,
				servers TEXT,
				created_at INTEGER NOT NULL
			);
		`);
	}

	/** Creates or replaces a server. A replacement keeps its generation; a new name gets a fresh one. */
	putServer(name: string, input: ServerInput): { server: ServerRecord; created: boolean } {
		const now = Date.now();
		const existing = this.sql.exec<ServerRow>("SELECT * FROM servers WHERE name = ?", name).toArray()[0];
		const generation = existing?.generation ?? randomToken(12);
		this.sql.exec(
			`INSERT INTO servers (name, url, headers, timeout_seconds, generation, created_at, updated_at)
			 VALUES (?, ?, ?, ?, ?, ?, ?)
			 ON CONFLICT(name) DO UPDATE SET url = excluded.url, headers = excluded.headers,
			   timeout_seconds = excluded.timeout_seconds, updated_at = excluded.updated_at`,
			name,
			input.url,
			JSON.stringify(input.headers),
			input.timeoutSeconds ?? null,
			generation,
			existing?.created_at ?? now,
			now,
		);
		const server = this.getServerRow(name);
		if (!server) throw new Error(`server ${name} vanished right after it was written`);
		return { server, created: existing === undefined };
	}

	getServer(name: string): ServerRecord | null {
		this.reads++;
		return this.getServerRow(name);
	}

	listServers(): ServerRecord[] {
		this.reads++;
		return this.sql.exec<ServerRow>("SELECT * FROM servers ORDER BY name").toArray().map(toServerRecord);
	}

	deleteServer(name: string): boolean {
		return this.sql.exec("DELETE FROM servers WHERE name = ?", name).rowsWritten > 0;
	}

	/** Creates a key and returns its secret, which is never stored or shown again. */
	async createKey(input: KeyInput): Promise<{ record: ApiKeyRecord; key: string }> {
		const key = API_KEY_PREFIX + randomToken(32);
		const id = `key_${randomToken(9)}`;
		const now = Date.now();
		this.sql.exec(
			"INSERT INTO api_keys (id, name, digest, user_path, servers, created_at) VALUES (?, ?, ?, ?, ?, ?)",
			id,
			input.name ?? null,
			await sha256Hex(key),
			input.userPath,
			input.servers ? JSON.stringify(input.servers) : null,
			now,
		);
		const record: ApiKeyRecord = {
			id,
			name: input.name ?? null,
			userPath: input.userPath,
			servers: input.servers ?? null,
			createdAt: now,
		};
		return { record, key };
	}

	listKeys(): ApiKeyRecord[] {
		this.reads++;
		return this.sql
			.exec<KeyRow>("SELECT id, name, user_path, servers, created_at FROM api_keys ORDER BY created_at, id")
			.toArray()
			.map(toKeyRecord);
	}

	revokeKey(id: string): boolean {
		return this.sql.exec("DELETE FROM api_keys WHERE id = ?", id).rowsWritten > 0;
	}

	findKeyByDigest(digest: string): ApiKeyRecord | null {
		this.reads++;
		const row = this.sql
			.exec<KeyRow>("SELECT id, name, user_path, servers, created_at FROM api_keys WHERE digest = ?", digest)
			.toArray()[0];
		return row ? toKeyRecord(row) : null;
	}

	private getServerRow(name: string): ServerRecord | null {
		const row = this.sql.exec<ServerRow>("SELECT * FROM servers WHERE name = ?", name).toArray()[0];
		return row ? toServerRecord(row) : null;
	}
}

function toServerRecord(row: ServerRow): ServerRecord {
	return {
		name: row.name,
		url: row.url,
		headers: JSON.parse(row.headers) as Record<string, string>,
		timeoutSeconds: row.timeout_seconds,
		generation: row.generation,
		createdAt: row.created_at,
		updatedAt: row.updated_at,
	};
}

function toKeyRecord(row: KeyRow): ApiKeyRecord {
	return {
		id: row.id,
		name: row.name,
		userPath: row.user_path,
		servers: row.servers === null ? null : (JSON.parse(row.servers) as string[]),
		createdAt: row.created_at,
	};
}
