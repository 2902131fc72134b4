import { type VirtualServerRecord, VirtualServerRecordSchema } from "../schemas.ts";
import { JSON_TEXT, RecordTable } from "./record-rows.ts";
import type { TableSchema } from "./table-schema.ts";

/** The virtual servers, one row per name: a list of member servers and what of them it offers. */

const virtualServers = new RecordTable("virtual_servers", "name", VirtualServerRecordSchema, {
	servers: JSON_TEXT,
	userPaths: JSON_TEXT,
	tools: JSON_TEXT,
	prompts: JSON_TEXT,
	resources: JSON_TEXT,
	alwaysList: JSON_TEXT,
});

const added = (column: string, type: string) => ({ table: "virtual_servers", column, type });

export const VIRTUAL_SERVERS_SCHEMA: TableSchema = {
	create: `
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
	`,
	addedColumns: [
		added("tools", "TEXT"),
		added("prompts", "TEXT"),
		added("resources", "TEXT"),
		// Aggregates made before tool search list every tool, as they did.
		added("disclosure", "TEXT NOT NULL DEFAULT 'full'"),
		added("always_list", "TEXT NOT NULL DEFAULT '[]'"),
	],
};

export class VirtualServersTable {
	constructor(private readonly sql: SqlStorage) {}

	get(name: string): VirtualServerRecord | null {
		return virtualServers.get(this.sql, name);
	}

	/** Every virtual server, by name. */
	list(): VirtualServerRecord[] {
		return virtualServers.select(this.sql, "ORDER BY name");
	}

	/** Names of the virtual servers that list `member`. */
	withMember(member: string): string[] {
		return this.sql
			.exec<{ name: string }>(
				"SELECT name FROM virtual_servers WHERE EXISTS (SELECT 1 FROM json_each(virtual_servers.servers) WHERE value = ?)",
				member,
			)
			.toArray()
			.map((row) => row.name);
	}

	/** Every name, in order (for "did you mean" in refusals). */
	names(): string[] {
		return virtualServers.keys(this.sql);
	}

	put(virtualServer: VirtualServerRecord): VirtualServerRecord {
		return virtualServers.put(this.sql, virtualServer);
	}

	delete(name: string): boolean {
		return virtualServers.delete(this.sql, name);
	}
}
