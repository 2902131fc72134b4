import { DurableObject } from "cloudflare:workers";
import { randomToken, sha256Hex } from "../crypto.ts";
import type { Env } from "../env.ts";
import { keyMayUseServer, userPathAllowed } from "./access.ts";
import {
	configDigest,
	createTables,
	KEY_COLUMNS,
	type KeyRow,
	migrate,
	type ServerRow,
	toKeyRecord,
	toServerRecord,
	toVirtualServerRecord,
	type VirtualServerRow,
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

/** The registry is one Durable Object instance under this name. */
export const REGISTRY_NAME = "registry";

/** Prefix that makes gateway API keys recognisable in secret scanners and logs. */
const API_KEY_PREFIX = "mcpgw_";

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
		createTables(this.sql);
		void ctx.blockConcurrencyWhile(() => migrate(this.sql));
	}

	/** Reads served so far (cost reports). */
	readCount(): number {
		return this.reads;
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
		});
		if (this.getVirtualServerRow(name)) {
			return { conflict: `'${name}' is already the name of a virtual server; servers and virtual servers share names` };
		}
		const now = Date.now();
		const existing = this.sql.exec<ServerRow>("SELECT * FROM servers WHERE name = ?", name).toArray()[0];
		const generation = existing?.generation ?? randomToken(12);
		this.sql.exec(
			`INSERT INTO servers (name, url, headers, timeout_seconds, generation, config_digest, created_at, updated_at)
			 VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			 ON CONFLICT(name) DO UPDATE SET url = excluded.url, headers = excluded.headers,
			   timeout_seconds = excluded.timeout_seconds, config_digest = excluded.config_digest,
			   updated_at = excluded.updated_at`,
			name,
			input.url,
			JSON.stringify(input.headers),
			input.timeoutSeconds ?? null,
			generation,
			digest,
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

	/**
	 * Creates or replaces a virtual server. A replacement keeps its generation, so live sessions
	 * survive an edit of the member list; a new name gets a fresh one. Every member must be an
	 * existing server: a typo would otherwise create an endpoint that silently lacks tools.
	 * The method never awaits, so the checks and the write are atomic.
	 */
	putVirtualServer(
		name: string,
		input: VirtualServerInput,
	): { virtualServer: VirtualServerRecord; created: boolean } | { conflict: string } | { invalid: string } {
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
		const virtualServer = this.getVirtualServerRow(name);
		if (!virtualServer) throw new Error(`virtual server ${name} vanished right after it was written`);
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

	deleteVirtualServer(name: string): boolean {
		return this.sql.exec("DELETE FROM virtual_servers WHERE name = ?", name).rowsWritten > 0;
	}

	/** What `/mcp/:name` refers to, with a virtual server's existing members, in one read. */
	resolveEndpoint(name: string): ResolvedEndpoint | null {
		this.reads++;
		const server = this.getServerRow(name);
		if (server) return { kind: "server", server };
		const virtualServer = this.getVirtualServerRow(name);
		if (!virtualServer) return null;
		return { kind: "virtual", virtualServer, members: this.existingServers(virtualServer.servers) };
	}

	/**
	 * Whether a live session may go on, in one read: its key still exists with the same user
	 * path, and its endpoint is the same incarnation (generation) and still open to the key.
	 */
	checkSession(input: SessionCheckInput): SessionCheckResult {
		this.reads++;
		const row = this.sql.exec<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = ?`, input.keyId).toArray()[0];
		if (!row) return { ok: false, reason: "the API key was revoked" };
		const key = toKeyRecord(row);
		if (key.userPath !== input.userPath) {
			return { ok: false, reason: "the API key's user path no longer matches the session's" };
		}
		const members = this.checkMembers(key, input.members ?? []);
		if (!members.ok) return members;
		const endpoint = input.endpoint;
		const ok = { ok: true as const, changed: members.changed };
		switch (endpoint.kind) {
			case "aggregate":
				return ok;
			case "server": {
				const server = this.getServerRow(endpoint.name);
				if (!server || server.generation !== endpoint.generation) {
					return { ok: false, reason: `server '${endpoint.name}' was deleted or recreated` };
				}
				if (!keyMayUseServer(key, endpoint.name)) {
					return { ok: false, reason: `the API key may not use server '${endpoint.name}'` };
				}
				return ok;
			}
			case "virtual": {
				const virtualServer = this.getVirtualServerRow(endpoint.name);
				if (!virtualServer || virtualServer.generation !== endpoint.generation) {
					return { ok: false, reason: `virtual server '${endpoint.name}' was deleted or recreated` };
				}
				if (!userPathAllowed(key.userPath, virtualServer.userPaths)) {
					return {
						ok: false,
						reason: `user path '${key.userPath}' may not use virtual server '${endpoint.name}'`,
					};
				}
				const denied = virtualServer.servers.filter((server) => !keyMayUseServer(key, server));
				if (denied.length > 0) {
					return {
						ok: false,
						reason: `the API key may not use ${quoteList(denied)}, members of virtual server '${endpoint.name}'`,
					};
				}
				return ok;
			}
		}
	}

	/** Creates a key and returns its secret, which is never stored or shown again. */
	async createKey(input: KeyInput): Promise<{ record: ApiKeyRecord; key: string }> {
		const key = API_KEY_PREFIX + randomToken(32);
		const id = `key_${randomToken(9)}`;
		const now = Date.now();
		this.sql.exec(
			"INSERT INTO api_keys (id, name, digest, user_path, servers, max_sessions, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
			id,
			input.name ?? null,
			await sha256Hex(key),
			input.userPath,
			input.servers ? JSON.stringify(input.servers) : null,
			input.maxSessions ?? null,
			now,
		);
		const record: ApiKeyRecord = {
			id,
			name: input.name ?? null,
			userPath: input.userPath,
			servers: input.servers ?? null,
			maxSessions: input.maxSessions ?? null,
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

	revokeKey(id: string): boolean {
		return this.sql.exec("DELETE FROM api_keys WHERE id = ?", id).rowsWritten > 0;
	}

	findKeyByDigest(digest: string): ApiKeyRecord | null {
		this.reads++;
		const row = this.sql.exec<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE digest = ?`, digest).toArray()[0];
		return row ? toKeyRecord(row) : null;
	}

	/**
	 * Every member still exists in the same incarnation and may be used by the key (one query);
	 * members whose configuration (URL, headers, timeout) changed since are returned as they are now.
	 */
	private checkMembers(
		key: ApiKeyRecord,
		members: NonNullable<SessionCheckInput["members"]>,
	): { ok: true; changed: ServerRecord[] } | { ok: false; reason: string } {
		if (members.length === 0) return { ok: true, changed: [] };
		const current = new Map(
			this.sql
				.exec<ServerRow>(
					"SELECT * FROM servers WHERE name IN (SELECT value FROM json_each(?))",
					JSON.stringify(members.map((member) => member.name)),
				)
				.toArray()
				.map((row) => [row.name, toServerRecord(row)] as const),
		);
		const changed: ServerRecord[] = [];
		for (const member of members) {
			const server = current.get(member.name);
			if (server?.generation !== member.generation) {
				return { ok: false, reason: `member server '${member.name}' was deleted or recreated` };
			}
			if (!keyMayUseServer(key, member.name)) {
				return { ok: false, reason: `the API key may not use member server '${member.name}'` };
			}
			if (server.configDigest !== member.configDigest) changed.push(server);
		}
		return { ok: true, changed };
	}

	private getServerRow(name: string): ServerRecord | null {
		const row = this.sql.exec<ServerRow>("SELECT * FROM servers WHERE name = ?", name).toArray()[0];
		return row ? toServerRecord(row) : null;
	}

	private getVirtualServerRow(name: string): VirtualServerRecord | null {
		const row = this.sql.exec<VirtualServerRow>("SELECT * FROM virtual_servers WHERE name = ?", name).toArray()[0];
		return row ? toVirtualServerRecord(row) : null;
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

function quoteList(names: string[]): string {
	return names.map((name) => `'${name}'`).join(", ");
}
