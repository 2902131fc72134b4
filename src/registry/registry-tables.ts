import { randomToken, sha256Hex } from "../primitives/crypto.ts";
import { type AccessRuleInput, type AccessRuleRecord, matchChanged, orderRules } from "./access-rules.ts";
import { type ApiKeyRecord, type ServerRecord, UpstreamProtocolSchema, type VirtualServerRecord } from "./schemas.ts";

/**
 * The registry's SQLite tables: their rows, how this version creates them,
 * how older registries are brought up to date, and rows to records.
 */

export interface ServerRow extends Record<string, SqlStorageValue> {
	name: string;
	url: string;
	headers: string;
	timeout_seconds: number | null;
	protocol: string;
	generation: string;
	config_digest: string | null;
	created_at: number;
	updated_at: number;
}

export interface VirtualServerRow extends Record<string, SqlStorageValue> {
	name: string;
	servers: string;
	user_paths: string | null;
	generation: string;
	created_at: number;
	updated_at: number;
}

export interface KeyRow extends Record<string, SqlStorageValue> {
	id: string;
	name: string | null;
	user_path: string;
	servers: string | null;
	max_sessions: number | null;
	key_format: number;
	created_at: number;
}

export interface AccessRuleRow extends Record<string, SqlStorageValue> {
	name: string;
	match: string;
	servers: string | null;
	user_path: string;
	max_sessions: number | null;
	priority: number;
	generation: string;
	created_at: number;
	updated_at: number;
}

/** The key columns read back (never the digest). */
export const KEY_COLUMNS = "id, name, user_path, servers, max_sessions, key_format, created_at";

/** The registry's tables, as this version creates them. */
export function createTables(sql: SqlStorage): void {
	sql.exec(`
			CREATE TABLE IF NOT EXISTS servers (
				name TEXT PRIMARY KEY,
				url TEXT NOT NULL,
				headers TEXT NOT NULL,
				timeout_seconds INTEGER,
				protocol TEXT NOT NULL DEFAULT 'auto',
				generation TEXT NOT NULL,
				config_digest TEXT,
				created_at INTEGER NOT NULL,
				updated_at INTEGER NOT NULL
			);
			CREATE TABLE IF NOT EXISTS api_keys (
				id TEXT PRIMARY KEY,
				name TEXT,
				digest TEXT NOT NULL UNIQUE,
				user_path TEXT NOT NULL,
				servers TEXT,
				max_sessions INTEGER,
				key_format INTEGER NOT NULL DEFAULT 2,
				created_at INTEGER NOT NULL
			);
			-- KV names to publish (KvPublisher): version bumps when a name is marked again.
			CREATE TABLE IF NOT EXISTS kv_outbox (
				name TEXT PRIMARY KEY,
				version INTEGER NOT NULL
			);
			CREATE TABLE IF NOT EXISTS meta (
				key TEXT PRIMARY KEY,
				value TEXT NOT NULL
			);
			CREATE TABLE IF NOT EXISTS access_rules (
				name TEXT PRIMARY KEY,
				match TEXT NOT NULL, -- JSON object of the claims to match
				servers TEXT, -- JSON array of server names; NULL means all
				user_path TEXT NOT NULL,
				max_sessions INTEGER,
				priority INTEGER NOT NULL,
				generation TEXT NOT NULL,
				created_at INTEGER NOT NULL,
				updated_at INTEGER NOT NULL
			);
			CREATE TABLE IF NOT EXISTS virtual_servers (
				name TEXT PRIMARY KEY,
				servers TEXT NOT NULL, -- JSON array of member server names, in order
				user_paths TEXT, -- JSON array of allowed user paths; NULL means all
				generation TEXT NOT NULL,
				created_at INTEGER NOT NULL,
				updated_at INTEGER NOT NULL
			);
	`);
}

/**
 * Registries created by earlier versions get the newer columns (a server's
 * config digest and protocol, a key's session cap), and every server its
 * digest, before the first request is served.
 */
export async function migrate(sql: SqlStorage): Promise<void> {
	addColumn(sql, "servers", "config_digest", "TEXT");
	// Servers registered before the field existed were discovered, never pinned.
	addColumn(sql, "servers", "protocol", "TEXT NOT NULL DEFAULT 'auto'");
	addColumn(sql, "api_keys", "max_sessions", "INTEGER");
	// Keys issued before self-verifying keys are of the first format.
	addColumn(sql, "api_keys", "key_format", "INTEGER NOT NULL DEFAULT 1");
	const rows = sql.exec<ServerRow>("SELECT * FROM servers WHERE config_digest IS NULL").toArray();
	for (const row of rows) {
		sql.exec("UPDATE servers SET config_digest = ? WHERE name = ?", await configDigest(toServerRecord(row)), row.name);
	}
}

function addColumn(sql: SqlStorage, table: string, column: string, type: string): void {
	const present = sql
		.exec<{ name: string }>(`SELECT name FROM pragma_table_info('${table}')`)
		.toArray()
		.some((row) => row.name === column);
	if (!present) sql.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${type}`);
}

/**
 * What identifies a server's configuration: a change of URL, headers, timeout
 * or protocol changes it. "auto" adds nothing, so servers registered before
 * the protocol existed keep their digest, and their live sessions are not
 * told of a change that did not happen.
 */
export function configDigest(
	server: Pick<ServerRecord, "url" | "headers" | "timeoutSeconds" | "protocol">,
): Promise<string> {
	const parts: unknown[] = [server.url, server.headers, server.timeoutSeconds];
	if (server.protocol !== "auto") parts.push(server.protocol);
	return sha256Hex(JSON.stringify(parts));
}

export function toServerRecord(row: ServerRow): ServerRecord {
	return {
		name: row.name,
		url: row.url,
		headers: JSON.parse(row.headers) as Record<string, string>,
		timeoutSeconds: row.timeout_seconds,
		protocol: UpstreamProtocolSchema.parse(row.protocol),
		generation: row.generation,
		configDigest: row.config_digest ?? "",
		createdAt: row.created_at,
		updatedAt: row.updated_at,
	};
}

export function toVirtualServerRecord(row: VirtualServerRow): VirtualServerRecord {
	return {
		name: row.name,
		servers: JSON.parse(row.servers) as string[],
		userPaths: row.user_paths === null ? null : (JSON.parse(row.user_paths) as string[]),
		generation: row.generation,
		createdAt: row.created_at,
		updatedAt: row.updated_at,
	};
}

export function toKeyRecord(row: KeyRow): ApiKeyRecord {
	return {
		id: row.id,
		name: row.name,
		userPath: row.user_path,
		servers: row.servers === null ? null : (JSON.parse(row.servers) as string[]),
		maxSessions: row.max_sessions,
		format: row.key_format === 1 ? "legacy" : "self-verifying",
		createdAt: row.created_at,
	};
}

export function toAccessRuleRecord(row: AccessRuleRow): AccessRuleRecord {
	return {
		name: row.name,
		match: JSON.parse(row.match) as AccessRuleRecord["match"],
		servers: row.servers === null ? null : (JSON.parse(row.servers) as string[]),
		userPath: row.user_path,
		maxSessions: row.max_sessions,
		priority: row.priority,
		generation: row.generation,
		createdAt: row.created_at,
		updatedAt: row.updated_at,
	};
}

/** Every access rule, in the order they are tried. */
export function readAccessRules(sql: SqlStorage): AccessRuleRecord[] {
	return orderRules(sql.exec<AccessRuleRow>("SELECT * FROM access_rules").toArray().map(toAccessRuleRecord));
}

/**
 * Creates or replaces an access rule, synchronously. A replacement keeps its
 * generation unless its match changed: sessions then follow the new grant as
 * a key's do, while a new match (who the rule is for) ends the old sessions.
 */
export function writeAccessRule(
	sql: SqlStorage,
	name: string,
	input: AccessRuleInput,
	now: number,
): { rule: AccessRuleRecord; created: boolean } {
	const existing = readAccessRules(sql).find((rule) => rule.name === name);
	const generation = existing && !matchChanged(existing.match, input.match) ? existing.generation : randomToken(12);
	sql.exec(
		`INSERT INTO access_rules (name, match, servers, user_path, max_sessions, priority, generation, created_at, updated_at)
		 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		 ON CONFLICT(name) DO UPDATE SET match = excluded.match, servers = excluded.servers,
		   user_path = excluded.user_path, max_sessions = excluded.max_sessions, priority = excluded.priority,
		   generation = excluded.generation, updated_at = excluded.updated_at`,
		name,
		JSON.stringify(input.match),
		input.servers ? JSON.stringify(input.servers) : null,
		input.userPath,
		input.maxSessions ?? null,
		input.priority,
		generation,
		existing?.createdAt ?? now,
		now,
	);
	const rule = readAccessRules(sql).find((candidate) => candidate.name === name);
	if (!rule) throw new Error(`access rule ${name} vanished right after it was written`);
	return { rule, created: existing === undefined };
}
