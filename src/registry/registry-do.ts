import { DurableObject } from "cloudflare:workers";
import { settingsFrom } from "../config.ts";
import type { Env } from "../env.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import { randomToken, sha256Hex } from "../primitives/crypto.ts";
import { type AccessRuleInput, type AccessRuleRecord, parsePrincipalId, principalRecord } from "./access-rules.ts";
import { mintApiKey, newKeyId } from "./api-key.ts";
import { KvPublisher } from "./kv-publisher.ts";
import { KV_NAMES, type StoredKey } from "./kv-records.ts";
import {
	configDigest,
	createTables,
	KEY_COLUMNS,
	type KeyRow,
	migrate,
	readAccessRules,
	type ServerRow,
	toKeyRecord,
	toServerRecord,
	toVirtualServerRecord,
	type VirtualServerRow,
	writeAccessRule,
} from "./registry-tables.ts";
import type {
	ApiKeyRecord,
	KeyInput,
	ResolvedEndpoint,
	ServerInput,
	ServerRecord,
	SessionCheckInput,
	SessionCheckResult,
	VirtualServerInput,
	VirtualServerRecord,
} from "./schemas.ts";
import { checkSessionAgainst, quoteList } from "./session-check.ts";

/** The registry is one Durable Object instance under this name. */
export const REGISTRY_NAME = "registry";

/**
 * The registry of record: upstream servers, virtual servers and API keys, in
 * SQLite, strongly consistent. Only admin writes reach it: each commits here
 * and is then written through to Workers KV (`KvPublisher`), which is what
 * the edge and the sessions read (invariant 12).
 */
export class RegistryDO extends DurableObject<Env> {
	private readonly sql: SqlStorage;
	/** Requests served, for cost assertions in tests and benchmarks. */
	reads = 0;
	readonly publisher: KvPublisher;

	constructor(ctx: DurableObjectState, env: Env) {
		super(ctx, env);
		this.sql = ctx.storage.sql;
		createTables(this.sql);
		this.publisher = new KvPublisher(
			this.sql,
			ctx.storage,
			env.REGISTRY_KV,
			(name) => this.publishedValue(name),
			() => this.publishedNames(),
		);
		void ctx.blockConcurrencyWhile(async () => {
			await migrate(this.sql);
			// The first start of this version (or of a new record format) publishes everything.
			if (this.publisher.formatOutdated()) this.publisher.markAll();
			if (this.publisher.pending() > 0) await ctx.storage.setAlarm(Date.now());
		});
	}

	/** Publishing retries (and the first start's full publish) run here. */
	override async alarm(): Promise<void> {
		await this.publisher.publish();
	}

	/** Requests served so far (cost reports). */
	readCount(): number {
		return this.reads;
	}

	/** Publishes everything to KV again (`POST /admin/sync`); returns how many records, and how many still wait. */
	async sync(): Promise<{ records: number; pending: number }> {
		const records = this.publisher.markAll();
		await this.publisher.publish();
		return { records, pending: this.publisher.pending() };
	}

	/**
	 * Creates or replaces a server. A replacement keeps its generation; a new name gets a fresh one.
	 * Refuses a name a virtual server holds, since both are addressed as `/mcp/:name`. Nothing
	 * after the digest awaits, so no other call can run between the check and the write.
	 */
	async putServer(
		name: string,
		input: ServerInput,
	): Promise<{ server: ServerRecord; created: boolean } | { conflict: string }> {
		// Hashed before the checks: nothing below awaits, so checks and write stay atomic.
		const digest = await configDigest({
			url: input.url,
			headers: input.headers,
			timeoutSeconds: input.timeoutSeconds ?? null,
			protocol: input.protocol,
		});
		if (this.getVirtualServerRow(name)) {
			return { conflict: `'${name}' is already the name of a virtual server; servers and virtual servers share names` };
		}
		const now = Date.now();
		const existing = this.sql.exec<ServerRow>("SELECT * FROM servers WHERE name = ?", name).toArray()[0];
		const generation = existing?.generation ?? randomToken(12);
		this.sql.exec(
			`INSERT INTO servers (name, url, headers, timeout_seconds, protocol, generation, config_digest, created_at, updated_at)
			 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
			 ON CONFLICT(name) DO UPDATE SET url = excluded.url, headers = excluded.headers,
			   timeout_seconds = excluded.timeout_seconds, protocol = excluded.protocol,
			   config_digest = excluded.config_digest, updated_at = excluded.updated_at`,
			name,
			input.url,
			JSON.stringify(input.headers),
			input.timeoutSeconds ?? null,
			input.protocol,
			generation,
			digest,
			existing?.created_at ?? now,
			now,
		);
		this.publisher.markDirty(this.namesOfServer(name));
		const server = this.getServerRow(name);
		if (!server) throw new Error(`server ${name} vanished right after it was written`);
		await this.publisher.publish();
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

	async deleteServer(name: string): Promise<boolean> {
		const deleted = this.sql.exec("DELETE FROM servers WHERE name = ?", name).rowsWritten > 0;
		if (!deleted) return false;
		this.publisher.markDirty(this.namesOfServer(name));
		await this.publisher.publish();
		return true;
	}

	/**
	 * Creates or replaces a virtual server. A replacement keeps its generation, so live sessions
	 * survive an edit of the member list; a new name gets a fresh one. Every member must be an
	 * existing server: a typo would otherwise create an endpoint that silently lacks tools.
	 * Nothing awaits before the write, so the checks and the write are atomic.
	 */
	async putVirtualServer(
		name: string,
		input: VirtualServerInput,
	): Promise<{ virtualServer: VirtualServerRecord; created: boolean } | { conflict: string } | { invalid: string }> {
		if (this.getServerRow(name)) {
			return { conflict: `'${name}' is already the name of a server; servers and virtual servers share names` };
		}
		const known = new Set(this.existingServers(input.servers).map((server) => server.name));
		const unknown = input.servers.filter((server) => !known.has(server));
		if (unknown.length > 0) {
			const virtual = unknown.filter((member) => this.getVirtualServerRow(member) !== null);
			const missing = unknown.filter((member) => !virtual.includes(member));
			const problems: string[] = [];
			if (missing.length > 0) problems.push(`no server named ${quoteList(missing)}`);
			if (virtual.length > 0) problems.push(`members must be servers, not virtual servers: ${quoteList(virtual)}`);
			return { invalid: `servers: ${problems.join("; ")}` };
		}
		const now = Date.now();
		const existing = this.getVirtualServerRow(name);
		this.sql.exec(
			`INSERT INTO virtual_servers (name, servers, user_paths, generation, created_at, updated_at)
			 VALUES (?, ?, ?, ?, ?, ?)
			 ON CONFLICT(name) DO UPDATE SET servers = excluded.servers, user_paths = excluded.user_paths,
			   updated_at = excluded.updated_at`,
			name,
			JSON.stringify(input.servers),
			input.userPaths ? JSON.stringify(input.userPaths) : null,
			existing?.generation ?? randomToken(12),
			existing?.createdAt ?? now,
			now,
		);
		this.publisher.markDirty([KV_NAMES.endpoint(name)]);
		const virtualServer = this.getVirtualServerRow(name);
		if (!virtualServer) throw new Error(`virtual server ${name} vanished right after it was written`);
		await this.publisher.publish();
		return { virtualServer, created: existing === null };
	}

	getVirtualServer(name: string): VirtualServerRecord | null {
		this.reads++;
		return this.getVirtualServerRow(name);
	}

	listVirtualServers(): VirtualServerRecord[] {
		this.reads++;
		return this.sql
			.exec<VirtualServerRow>("SELECT * FROM virtual_servers ORDER BY name")
			.toArray()
			.map(toVirtualServerRecord);
	}

	async deleteVirtualServer(name: string): Promise<boolean> {
		const deleted = this.sql.exec("DELETE FROM virtual_servers WHERE name = ?", name).rowsWritten > 0;
		if (!deleted) return false;
		this.publisher.markDirty([KV_NAMES.endpoint(name)]);
		await this.publisher.publish();
		return true;
	}

	/** What `/mcp/:name` refers to, with a virtual server's existing members, in one read. */
	resolveEndpoint(name: string): ResolvedEndpoint | null {
		this.reads++;
		return this.resolveRow(name);
	}

	/**
	 * Whether a live session may go on, from the registry of record (tests and
	 * operators; sessions check the same way against KV, `checkSessionWith`).
	 */
	checkSession(input: SessionCheckInput): SessionCheckResult {
		this.reads++;
		const row = this.sql.exec<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = ?`, input.keyId).toArray()[0];
		const key = parsePrincipalId(input.keyId)
			? principalRecord(input.keyId, readAccessRules(this.sql))
			: row
				? toKeyRecord(row)
				: null;
		const endpoint = input.endpoint.kind === "aggregate" ? null : this.resolveRow(input.endpoint.name);
		const members = this.existingServers((input.members ?? []).map((member) => member.name));
		return checkSessionAgainst(
			{
				key,
				endpoint,
				servers: new Map(members.map((server) => [server.name, server])),
			},
			input,
		);
	}

	/**
	 * Creates a key and returns its secret, which is never stored or shown again. Every name in
	 * its `servers` must be a server or a virtual server now: a typo would otherwise make a key
	 * that reaches nothing. Nothing awaits between that check and the write.
	 */
	async createKey(input: KeyInput): Promise<{ record: ApiKeyRecord; key: string } | { invalid: string }> {
		const secret = settingsFrom(this.env).keySecret;
		if (!secret) {
			throw new GatewayError(
				"misconfigured",
				"The gateway is misconfigured: the KEY_SECRET secret is not set (at least 32 characters), so no API key can be issued.",
			);
		}
		const id = newKeyId();
		const key = await mintApiKey(secret, id);
		const digest = await sha256Hex(key);
		const invalid = this.unknownGrants(input.servers);
		if (invalid) return { invalid };
		const now = Date.now();
		this.sql.exec(
			"INSERT INTO api_keys (id, name, digest, user_path, servers, max_sessions, key_format, created_at) VALUES (?, ?, ?, ?, ?, ?, 2, ?)",
			id,
			input.name ?? null,
			digest,
			input.userPath,
			input.servers ? JSON.stringify(input.servers) : null,
			input.maxSessions ?? null,
			now,
		);
		this.publisher.markDirty([KV_NAMES.key(id)]);
		await this.publisher.publish();
		const record: ApiKeyRecord = {
			id,
			name: input.name ?? null,
			userPath: input.userPath,
			servers: input.servers ?? null,
			maxSessions: input.maxSessions ?? null,
			format: "self-verifying",
			createdAt: now,
		};
		return { record, key };
	}

	listKeys(): ApiKeyRecord[] {
		this.reads++;
		return this.sql
			.exec<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys ORDER BY created_at, id`)
			.toArray()
			.map(toKeyRecord);
	}

	async revokeKey(id: string): Promise<boolean> {
		const deleted = this.sql.exec("DELETE FROM api_keys WHERE id = ?", id).rowsWritten > 0;
		if (!deleted) return false;
		this.publisher.markDirty([KV_NAMES.key(id)]);
		await this.publisher.publish();
		return true;
	}

	/**
	 * Creates or replaces an access rule (see `writeAccessRule` for what a
	 * replacement keeps), and publishes the rules. Its `servers` are checked as
	 * a key's are; a refused rule leaves the existing one as it was.
	 */
	async putAccessRule(
		name: string,
		input: AccessRuleInput,
	): Promise<{ rule: AccessRuleRecord; created: boolean } | { invalid: string }> {
		const invalid = this.unknownGrants(input.servers);
		if (invalid) return { invalid };
		const written = writeAccessRule(this.sql, name, input, Date.now());
		this.publisher.markDirty([KV_NAMES.rules]);
		await this.publisher.publish();
		return written;
	}

	listAccessRules(): AccessRuleRecord[] {
		this.reads++;
		return readAccessRules(this.sql);
	}

	async deleteAccessRule(name: string): Promise<boolean> {
		const deleted = this.sql.exec("DELETE FROM access_rules WHERE name = ?", name).rowsWritten > 0;
		if (!deleted) return false;
		this.publisher.markDirty([KV_NAMES.rules]);
		await this.publisher.publish();
		return true;
	}

	/** A key's stored record with its digest (what is published as `key/<id>`); null if none. */
	storedKey(id: string): StoredKey | null {
		const row = this.sql
			.exec<KeyRow & { digest: string }>(`SELECT ${KEY_COLUMNS}, digest FROM api_keys WHERE id = ?`, id)
			.toArray()[0];
		return row ? { ...toKeyRecord(row), digest: row.digest } : null;
	}

	/** KV names a change of server `name` affects: its endpoint, the server list, virtual servers using it. */
	private namesOfServer(name: string): string[] {
		const virtual = this.sql
			.exec<{ name: string }>(
				"SELECT name FROM virtual_servers WHERE EXISTS (SELECT 1 FROM json_each(virtual_servers.servers) WHERE value = ?)",
				name,
			)
			.toArray()
			.map((row) => KV_NAMES.endpoint(row.name));
		return [KV_NAMES.endpoint(name), KV_NAMES.servers, ...virtual];
	}

	/** Every KV name the registry publishes now. */
	private publishedNames(): string[] {
		const endpoints = this.sql
			.exec<{ name: string }>("SELECT name FROM servers UNION SELECT name FROM virtual_servers")
			.toArray()
			.map((row) => KV_NAMES.endpoint(row.name));
		const keys = this.sql
			.exec<{ id: string }>("SELECT id FROM api_keys")
			.toArray()
			.map((row) => KV_NAMES.key(row.id));
		return [KV_NAMES.servers, KV_NAMES.rules, ...endpoints, ...keys];
	}

	/** What a KV name holds according to the registry of record now; null: it should not exist. */
	private publishedValue(name: string): unknown {
		if (name === KV_NAMES.rules) return readAccessRules(this.sql);
		if (name === KV_NAMES.servers) {
			return this.sql.exec<ServerRow>("SELECT * FROM servers ORDER BY name").toArray().map(toServerRecord);
		}
		const [kind, ...rest] = name.split("/");
		const id = rest.join("/");
		if (kind === "key") return this.storedKey(id);
		if (kind === "endpoint") return this.resolveRow(id);
		throw new Error(`registry: unknown KV name ${name}`);
	}

	private resolveRow(name: string): ResolvedEndpoint | null {
		const server = this.getServerRow(name);
		if (server) return { kind: "server", server };
		const virtualServer = this.getVirtualServerRow(name);
		if (!virtualServer) return null;
		return { kind: "virtual", virtualServer, members: this.existingServers(virtualServer.servers) };
	}

	private getServerRow(name: string): ServerRecord | null {
		const row = this.sql.exec<ServerRow>("SELECT * FROM servers WHERE name = ?", name).toArray()[0];
		return row ? toServerRecord(row) : null;
	}

	private getVirtualServerRow(name: string): VirtualServerRecord | null {
		const row = this.sql.exec<VirtualServerRow>("SELECT * FROM virtual_servers WHERE name = ?", name).toArray()[0];
		return row ? toVirtualServerRecord(row) : null;
	}

	/**
	 * Why a key's or rule's `servers` cannot be granted: the names that are neither a server nor
	 * a virtual server, in a sentence; null when every name exists (or there is no list).
	 */
	private unknownGrants(names: readonly string[] | undefined): string | null {
		if (!names || names.length === 0) return null;
		const known = new Set(
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
		const unknown = [...new Set(names.filter((name) => !known.has(name)))];
		return unknown.length === 0 ? null : `servers: no server or virtual server named ${quoteList(unknown)}`;
	}

	/** The named servers that exist, in the order of `names`, in one query. */
	private existingServers(names: string[]): ServerRecord[] {
		const byName = new Map(
			this.sql
				.exec<ServerRow>("SELECT * FROM servers WHERE name IN (SELECT value FROM json_each(?))", JSON.stringify(names))
				.toArray()
				.map((row) => [row.name, toServerRecord(row)] as const),
		);
		return names.flatMap((name) => byName.get(name) ?? []);
	}
}
