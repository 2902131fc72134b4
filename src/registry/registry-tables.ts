import { z } from "zod";
import { randomToken, sha256Hex } from "../primitives/crypto.ts";
import {
	type AccessRuleInput,
	type AccessRuleRecord,
	AccessRuleRecordSchema,
	matchChanged,
	orderRules,
} from "./access-rules.ts";
import { type StoredKey, StoredKeySchema } from "./kv-records.ts";
import { orderPolicies, type PolicyInput, type PolicyRecord, PolicyRecordSchema } from "./policy-records.ts";
import { type ColumnCodec, JSON_TEXT, RecordTable } from "./record-rows.ts";
import {
	type ApiKeyRecord,
	ApiKeyRecordSchema,
	type ConnectionRecord,
	ConnectionRecordSchema,
	type ResolvedEndpoint,
	type ServerRecord,
	ServerRecordSchema,
	type VirtualServerRecord,
	VirtualServerRecordSchema,
} from "./schemas.ts";
import { DEFAULT_PINNING, type PinInput, type ServerPins, ToolPinSchema } from "./tool-pins.ts";

/**
 * The registry's SQLite tables: how this version creates them, how older
 * registries are brought up to date, and every statement the registry runs on
 * them (its records, the KV outbox, the meta values). A row is its record
 * (schemas.ts) field by field (record-rows.ts).
 */

/** A flag as SQLite keeps one: 0 or 1. */
const BOOLEAN_INTEGER: ColumnCodec = {
	toColumn: (value) => (value === true ? 1 : 0),
	fromColumn: (value) => value === 1,
};

const servers = new RecordTable("servers", "name", ServerRecordSchema, {
	headers: JSON_TEXT,
	auth: JSON_TEXT,
	tools: JSON_TEXT,
	prompts: JSON_TEXT,
	resources: JSON_TEXT,
	captureArguments: BOOLEAN_INTEGER,
	// NULL only in a registry older than digests, until `migrate` fills it in.
	configDigest: {
		toColumn: (value) => (typeof value === "string" ? value : null),
		fromColumn: (value) => value ?? "",
	},
});

const virtualServers = new RecordTable("virtual_servers", "name", VirtualServerRecordSchema, {
	servers: JSON_TEXT,
	userPaths: JSON_TEXT,
	tools: JSON_TEXT,
	prompts: JSON_TEXT,
	resources: JSON_TEXT,
	alwaysList: JSON_TEXT,
});

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

const connections = new RecordTable("connections", "id", ConnectionRecordSchema);

const accessRules = new RecordTable("access_rules", "name", AccessRuleRecordSchema, {
	match: JSON_TEXT,
	servers: JSON_TEXT,
	admin: BOOLEAN_INTEGER,
	alwaysList: JSON_TEXT,
});

const policies = new RecordTable("policies", "name", PolicyRecordSchema, { applies: JSON_TEXT });

/** The records named by their operators, by the words the admin API uses for them. */
const NAMED_TABLES = { servers, virtualServers, accessRules, policies } as const;
export type NamedKind = keyof typeof NAMED_TABLES;

/** A server's approved tool definitions, one row per tool (written by hand: the key is two columns). */
const toolPins = new RecordTable("tool_pins", "server", ToolPinSchema.extend({ server: z.string() }), {
	definition: JSON_TEXT,
});

/** Servers whose tools were recorded (first seen or approved): from then on, a tool not pinned is new. */
const pinnedServers = new RecordTable(
	"pinned_servers",
	"server",
	z.object({ server: z.string(), generation: z.string(), recordedAt: z.number() }),
);

/** What `migrate` needs of a server row to compute its digest. */
const undigested = new RecordTable(
	"servers",
	"name",
	ServerRecordSchema.pick({ name: true, url: true, headers: true, timeoutSeconds: true, protocol: true }),
	{ headers: JSON_TEXT },
);

/** The registry's tables, as this version creates them. */
const CREATE_TABLES = `
	CREATE TABLE IF NOT EXISTS servers (
		name TEXT PRIMARY KEY,
		url TEXT NOT NULL,
		headers TEXT NOT NULL,
		timeout_seconds INTEGER,
		protocol TEXT NOT NULL DEFAULT 'auto',
		auth TEXT NOT NULL DEFAULT '{"type":"operator"}', -- JSON: whose credentials its requests carry
		tools TEXT, -- JSON: how its tools look to callers; NULL: as the upstream has them
		prompts TEXT, -- JSON: which of its prompts callers see; NULL: all
		resources TEXT, -- JSON: which of its resources and templates callers see; NULL: all
		pinning TEXT NOT NULL DEFAULT 'warn', -- block | warn | off: what a changed tool definition does
		capture_arguments INTEGER NOT NULL DEFAULT 0, -- 1: tool_call events carry argument values
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
		rate_class TEXT NOT NULL DEFAULT 'standard',
		disclosure TEXT NOT NULL DEFAULT 'full',
		always_list TEXT NOT NULL DEFAULT '[]', -- JSON array of globs
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
		rate_class TEXT NOT NULL DEFAULT 'standard',
		priority INTEGER NOT NULL,
		admin INTEGER NOT NULL DEFAULT 0, -- 1: its identities may use the operators' dashboard
		disclosure TEXT NOT NULL DEFAULT 'full',
		always_list TEXT NOT NULL DEFAULT '[]', -- JSON array of globs
		generation TEXT NOT NULL,
		created_at INTEGER NOT NULL,
		updated_at INTEGER NOT NULL
	);
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
	-- Tool policies (CEL), compiled by governance; the registry keeps and publishes them.
	CREATE TABLE IF NOT EXISTS policies (
		name TEXT PRIMARY KEY,
		expression TEXT NOT NULL,
		effect TEXT NOT NULL, -- 'allow' or 'deny'
		applies TEXT, -- JSON object of servers, virtualServers, keys, rules; NULL means everywhere
		priority INTEGER NOT NULL,
		created_at INTEGER NOT NULL,
		updated_at INTEGER NOT NULL
	);
	-- Approved tool definitions (pinning): the digest and the definition it covers, per server and tool.
	CREATE TABLE IF NOT EXISTS tool_pins (
		server TEXT NOT NULL,
		tool TEXT NOT NULL,
		digest TEXT NOT NULL,
		definition TEXT NOT NULL, -- JSON: name, description, inputSchema, outputSchema, annotations
		approved_at INTEGER NOT NULL,
		PRIMARY KEY (server, tool)
	);
	-- Servers whose tools have been recorded, and for which incarnation.
	CREATE TABLE IF NOT EXISTS pinned_servers (
		server TEXT PRIMARY KEY,
		generation TEXT NOT NULL,
		recorded_at INTEGER NOT NULL
	);
	CREATE TABLE IF NOT EXISTS virtual_servers (
		name TEXT PRIMARY KEY,
		servers TEXT NOT NULL, -- JSON array of member server names, in order
		user_paths TEXT, -- JSON array of allowed user paths; NULL means all
		tools TEXT, -- JSON: which of its members' tools it offers; NULL: all
		prompts TEXT, -- JSON: which of its members' prompts it offers; NULL: all
		resources TEXT, -- JSON: which of its members' resources and templates it offers; NULL: all
		disclosure TEXT NOT NULL DEFAULT 'full', -- 'full' or 'search' (tool search)
		always_list TEXT NOT NULL DEFAULT '[]', -- JSON array of globs listed in search mode
		generation TEXT NOT NULL,
		created_at INTEGER NOT NULL,
		updated_at INTEGER NOT NULL
	);
`;

/**
 * What identifies a server's configuration: a change of URL, headers, timeout,
 * protocol or auth changes it. "auto" and "operator" add nothing, so servers
 * registered before those fields existed keep their digest, and their live
 * sessions are not told of a change that did not happen.
 */
export function configDigest(
	server: Pick<ServerRecord, "url" | "headers" | "timeoutSeconds" | "protocol"> & {
		auth?: ServerRecord["auth"] | undefined;
		tools?: ServerRecord["tools"] | undefined;
		prompts?: ServerRecord["prompts"] | undefined;
		resources?: ServerRecord["resources"] | undefined;
		pinning?: ServerRecord["pinning"] | undefined;
	},
): Promise<string> {
	const parts: unknown[] = [server.url, server.headers, server.timeoutSeconds];
	if (server.protocol !== "auto") parts.push(server.protocol);
	if (server.auth !== undefined && server.auth.type !== "operator") parts.push({ auth: server.auth });
	if (server.tools !== undefined && server.tools !== null) parts.push({ tools: server.tools });
	if (server.prompts !== undefined && server.prompts !== null) parts.push({ prompts: server.prompts });
	if (server.resources !== undefined && server.resources !== null) parts.push({ resources: server.resources });
	if (server.pinning !== undefined && server.pinning !== DEFAULT_PINNING) parts.push({ pinning: server.pinning });
	return sha256Hex(JSON.stringify(parts));
}

/** The registry's tables, read and written synchronously (nothing here awaits but `migrate`). */
export class RegistryTables {
	constructor(private readonly sql: SqlStorage) {
		sql.exec(CREATE_TABLES);
	}

	/**
	 * Registries created by earlier versions get the newer columns (a server's
	 * config digest and protocol, a key's session cap, keys' and rules' rate
	 * classes), and every server its digest, before the first request is served.
	 */
	async migrate(): Promise<void> {
		this.addColumn("servers", "config_digest", "TEXT");
		// Servers registered before the field existed were discovered, never pinned.
		this.addColumn("servers", "protocol", "TEXT NOT NULL DEFAULT 'auto'");
		// Servers registered before auth modes carried the operator's headers, as they still do.
		this.addColumn("servers", "auth", `TEXT NOT NULL DEFAULT '{"type":"operator"}'`);
		this.addColumn("servers", "tools", "TEXT");
		this.addColumn("virtual_servers", "tools", "TEXT");
		this.addColumn("servers", "prompts", "TEXT");
		this.addColumn("servers", "resources", "TEXT");
		this.addColumn("virtual_servers", "prompts", "TEXT");
		this.addColumn("virtual_servers", "resources", "TEXT");
		// Servers registered before pinning are under the default mode.
		this.addColumn("servers", "pinning", `TEXT NOT NULL DEFAULT '${DEFAULT_PINNING}'`);
		// Servers registered before argument capture never captured.
		this.addColumn("servers", "capture_arguments", "INTEGER NOT NULL DEFAULT 0");
		this.addColumn("api_keys", "max_sessions", "INTEGER");
		// Keys issued before self-verifying keys are of the first format.
		this.addColumn("api_keys", "key_format", "INTEGER NOT NULL DEFAULT 1");
		// Keys and rules made before rate classes were counted by KEY_RATE_LIMITER, which is standard.
		this.addColumn("api_keys", "rate_class", "TEXT NOT NULL DEFAULT 'standard'");
		this.addColumn("access_rules", "rate_class", "TEXT NOT NULL DEFAULT 'standard'");
		// Rules made before the admin grant grant no admin.
		this.addColumn("access_rules", "admin", "INTEGER NOT NULL DEFAULT 0");
		// Aggregates made before tool search list every tool, as they did.
		for (const table of ["api_keys", "access_rules", "virtual_servers"]) {
			this.addColumn(table, "disclosure", "TEXT NOT NULL DEFAULT 'full'");
			this.addColumn(table, "always_list", "TEXT NOT NULL DEFAULT '[]'");
		}
		for (const server of undigested.select(this.sql, "WHERE config_digest IS NULL")) {
			this.sql.exec("UPDATE servers SET config_digest = ? WHERE name = ?", await configDigest(server), server.name);
		}
	}

	private addColumn(table: string, column: string, type: string): void {
		const present = this.sql
			.exec<{ name: string }>(`SELECT name FROM pragma_table_info('${table}')`)
			.toArray()
			.some((row) => row.name === column);
		if (!present) this.sql.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${type}`);
	}

	putConnection(connection: ConnectionRecord): ConnectionRecord {
		return connections.put(this.sql, connection);
	}

	deleteConnection(id: string): boolean {
		return connections.delete(this.sql, id);
	}

	/** Who is connected to `server`, first connected first. */
	connectionsTo(server: string): ConnectionRecord[] {
		return connections.select(this.sql, "WHERE server = ? ORDER BY connected_at", server);
	}

	/** What one vault (a person, a key) has connected. */
	connectionsOf(vault: string): ConnectionRecord[] {
		return connections.select(this.sql, "WHERE vault = ? ORDER BY server", vault);
	}

	/** The connections made under an access rule. */
	connectionsUnder(rule: string): ConnectionRecord[] {
		return connections.select(this.sql, "WHERE rule = ? ORDER BY server", rule);
	}

	server(name: string): ServerRecord | null {
		return servers.get(this.sql, name);
	}

	servers(): ServerRecord[] {
		return servers.select(this.sql, "ORDER BY name");
	}

	/** The named servers that exist, in the order of `names`, in one query. */
	serversNamed(names: readonly string[]): ServerRecord[] {
		const byName = new Map(
			servers
				.select(this.sql, "WHERE name IN (SELECT value FROM json_each(?))", JSON.stringify(names))
				.map((server) => [server.name, server] as const),
		);
		return names.flatMap((name) => byName.get(name) ?? []);
	}

	putServer(server: ServerRecord): ServerRecord {
		return servers.put(this.sql, server);
	}

	deleteServer(name: string): boolean {
		return servers.delete(this.sql, name);
	}

	virtualServer(name: string): VirtualServerRecord | null {
		return virtualServers.get(this.sql, name);
	}

	virtualServers(): VirtualServerRecord[] {
		return virtualServers.select(this.sql, "ORDER BY name");
	}

	/** Names of the virtual servers that list `member`. */
	virtualServersWith(member: string): string[] {
		return this.sql
			.exec<{ name: string }>(
				"SELECT name FROM virtual_servers WHERE EXISTS (SELECT 1 FROM json_each(virtual_servers.servers) WHERE value = ?)",
				member,
			)
			.toArray()
			.map((row) => row.name);
	}

	putVirtualServer(virtualServer: VirtualServerRecord): VirtualServerRecord {
		return virtualServers.put(this.sql, virtualServer);
	}

	deleteVirtualServer(name: string): boolean {
		return virtualServers.delete(this.sql, name);
	}

	/** What `/mcp/:name` refers to, with a virtual server's existing members. */
	endpoint(name: string): ResolvedEndpoint | null {
		const server = this.server(name);
		if (server) return { kind: "server", server };
		const virtualServer = this.virtualServer(name);
		if (!virtualServer) return null;
		return { kind: "virtual", virtualServer, members: this.serversNamed(virtualServer.servers) };
	}

	/** The names of one kind of named record, in order (for "did you mean" in refusals). */
	names(kind: NamedKind): string[] {
		return NAMED_TABLES[kind].keys(this.sql);
	}

	/** Every name a server or a virtual server holds. */
	endpointNames(): string[] {
		return this.sql
			.exec<{ name: string }>("SELECT name FROM servers UNION SELECT name FROM virtual_servers")
			.toArray()
			.map((row) => row.name);
	}

	/** Those of `names` that are a server or a virtual server. */
	existingEndpoints(names: readonly string[]): Set<string> {
		return new Set(
			this.sql
				.exec<{ name: string }>(
					`SELECT name FROM servers WHERE name IN (SELECT value FROM json_each(?))
					 UNION SELECT name FROM virtual_servers WHERE name IN (SELECT value FROM json_each(?))`,
					JSON.stringify(names),
					JSON.stringify(names),
				)
				.toArray()
				.map((row) => row.name),
		);
	}

	key(id: string): ApiKeyRecord | null {
		return keys.get(this.sql, id);
	}

	keys(): ApiKeyRecord[] {
		return keys.select(this.sql, "ORDER BY created_at, id");
	}

	keyIds(): string[] {
		return this.sql
			.exec<{ id: string }>("SELECT id FROM api_keys")
			.toArray()
			.map((row) => row.id);
	}

	/** A key's record with its digest (what is published as `key/<id>`); null if none. */
	storedKey(id: string): StoredKey | null {
		return storedKeys.get(this.sql, id);
	}

	insertKey(key: StoredKey): void {
		storedKeys.put(this.sql, key);
	}

	deleteKey(id: string): boolean {
		return keys.delete(this.sql, id);
	}

	/** Every access rule, in the order they are tried. */
	accessRules(): AccessRuleRecord[] {
		return orderRules(accessRules.select(this.sql, ""));
	}

	/**
	 * Creates or replaces an access rule. A replacement keeps its generation
	 * unless its match changed: sessions then follow the new grant as a key's
	 * do, while a new match (who the rule is for) ends the old sessions.
	 */
	writeAccessRule(name: string, input: AccessRuleInput, now: number): { rule: AccessRuleRecord; created: boolean } {
		const existing = accessRules.get(this.sql, name);
		const rule = accessRules.put(this.sql, {
			name,
			match: input.match,
			servers: input.servers ?? null,
			userPath: input.userPath,
			maxSessions: input.maxSessions ?? null,
			rateClass: input.rateClass,
			priority: input.priority,
			admin: input.admin,
			disclosure: input.disclosure,
			alwaysList: input.alwaysList,
			generation: existing && !matchChanged(existing.match, input.match) ? existing.generation : randomToken(12),
			createdAt: existing?.createdAt ?? now,
			updatedAt: now,
		});
		return { rule, created: existing === null };
	}

	deleteAccessRule(name: string): boolean {
		return accessRules.delete(this.sql, name);
	}

	/** Every policy, in the order they are evaluated. */
	policies(): PolicyRecord[] {
		return orderPolicies(policies.select(this.sql, ""));
	}

	policy(name: string): PolicyRecord | null {
		return policies.get(this.sql, name);
	}

	/** Creates or replaces a policy; a replacement keeps when it was created. */
	writePolicy(name: string, input: PolicyInput, now: number): { policy: PolicyRecord; created: boolean } {
		const existing = policies.get(this.sql, name);
		const policy = policies.put(this.sql, {
			name,
			expression: input.expression,
			effect: input.effect,
			applies: input.applies ?? null,
			priority: input.priority,
			createdAt: existing?.createdAt ?? now,
			updatedAt: now,
		});
		return { policy, created: existing === null };
	}

	deletePolicy(name: string): boolean {
		return policies.delete(this.sql, name);
	}

	/** Those of `ids` that are API keys. */
	existingKeys(ids: readonly string[]): Set<string> {
		return new Set(
			this.sql
				.exec<{ id: string }>(
					"SELECT id FROM api_keys WHERE id IN (SELECT value FROM json_each(?))",
					JSON.stringify(ids),
				)
				.toArray()
				.map((row) => row.id),
		);
	}

	/** Those of `names` that are access rules. */
	existingRules(names: readonly string[]): Set<string> {
		return new Set(
			this.sql
				.exec<{ name: string }>(
					"SELECT name FROM access_rules WHERE name IN (SELECT value FROM json_each(?))",
					JSON.stringify(names),
				)
				.toArray()
				.map((row) => row.name),
		);
	}

	/** A server's pins as published (`pins/<server>`); null until its tools were first recorded. */
	serverPins(server: string): ServerPins | null {
		const recorded = pinnedServers.get(this.sql, server);
		if (!recorded) return null;
		const pins = toolPins
			.select(this.sql, "WHERE server = ? ORDER BY tool", server)
			.map(({ server: _server, ...pin }) => pin);
		return { server, generation: recorded.generation, recordedAt: recorded.recordedAt, pins };
	}

	/** Servers with recorded tools. */
	pinnedServerNames(): string[] {
		return this.sql
			.exec<{ server: string }>("SELECT server FROM pinned_servers")
			.toArray()
			.map((row) => row.server);
	}

	/**
	 * Trust on first use: records `pins` as approved, but only when the server
	 * has nothing recorded yet (even an empty list counts as recorded); whether it wrote.
	 */
	recordFirstSeen(server: string, generation: string, pins: readonly PinInput[], now: number): boolean {
		if (pinnedServers.get(this.sql, server)) return false;
		this.writePins(server, generation, pins, now);
		return true;
	}

	/**
	 * Approves `pins` (replacing what was pinned under their names) and drops
	 * the pins named in `forget`; records the server's tools as seen. Pins of
	 * another incarnation of the server are dropped first.
	 */
	approvePins(
		server: string,
		generation: string,
		pins: readonly PinInput[],
		forget: readonly string[],
		now: number,
	): void {
		const recorded = pinnedServers.get(this.sql, server);
		if (recorded && recorded.generation !== generation) this.deletePins(server);
		for (const tool of forget) this.sql.exec("DELETE FROM tool_pins WHERE server = ? AND tool = ?", server, tool);
		this.writePins(server, generation, pins, recorded?.generation === generation ? recorded.recordedAt : now, now);
	}

	/** Forgets a server's pins (the server was deleted); whether there were any. */
	deletePins(server: string): boolean {
		this.sql.exec("DELETE FROM tool_pins WHERE server = ?", server);
		return pinnedServers.delete(this.sql, server);
	}

	private writePins(
		server: string,
		generation: string,
		pins: readonly PinInput[],
		recordedAt: number,
		approvedAt = recordedAt,
	): void {
		pinnedServers.put(this.sql, { server, generation, recordedAt });
		for (const { digest, definition } of pins) {
			this.sql.exec(
				`INSERT INTO tool_pins (server, tool, digest, definition, approved_at) VALUES (?, ?, ?, ?, ?)
				 ON CONFLICT(server, tool) DO UPDATE SET digest = excluded.digest, definition = excluded.definition, approved_at = excluded.approved_at`,
				server,
				definition.name,
				digest,
				JSON.stringify(definition),
				approvedAt,
			);
		}
	}

	/** Marks a KV name to publish; marked again, its version bumps. */
	markOutbox(name: string): void {
		this.sql.exec(
			"INSERT INTO kv_outbox (name, version) VALUES (?, 1) ON CONFLICT(name) DO UPDATE SET version = version + 1",
			name,
		);
	}

	/** The next names to publish, in name order. */
	outboxBatch(limit: number): Array<{ name: string; version: number }> {
		return this.sql
			.exec<{ name: string; version: number }>("SELECT name, version FROM kv_outbox ORDER BY name LIMIT ?", limit)
			.toArray();
	}

	/** A name published at `version`: it leaves the outbox unless it was marked again meanwhile. */
	outboxDone(name: string, version: number): void {
		this.sql.exec("DELETE FROM kv_outbox WHERE name = ? AND version = ?", name, version);
	}

	outboxSize(): number {
		return this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM kv_outbox").one().n;
	}

	meta(key: string): string | null {
		return this.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = ?", key).toArray()[0]?.value ?? null;
	}

	setMeta(key: string, value: string): void {
		this.sql.exec("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", key, value);
	}
}
