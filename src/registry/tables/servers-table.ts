import { configDigest } from "../config-digest.ts";
import { type ServerRecord, ServerRecordSchema } from "../schemas.ts";
import { DEFAULT_PINNING } from "../tool-pins.ts";
import { BOOLEAN_INTEGER, JSON_TEXT, RecordTable } from "./record-rows.ts";
import type { TableSchema } from "./table-schema.ts";

/** The upstream servers, one row per name. */

const servers = new RecordTable("servers", "name", ServerRecordSchema, {
	headers: JSON_TEXT,
	connector: JSON_TEXT,
	openapi: JSON_TEXT,
	auth: JSON_TEXT,
	tools: JSON_TEXT,
	prompts: JSON_TEXT,
	resources: JSON_TEXT,
	captureArguments: BOOLEAN_INTEGER,
	// NULL only in a registry older than digests, until the migration fills it in.
	configDigest: {
		toColumn: (value) => (typeof value === "string" ? value : null),
		fromColumn: (value) => value ?? "",
	},
});

/** What the migration needs of a server row to compute its digest. */
const undigested = new RecordTable(
	"servers",
	"name",
	ServerRecordSchema.pick({ name: true, url: true, headers: true, timeoutSeconds: true, protocol: true }),
	{ headers: JSON_TEXT },
);

const added = (column: string, type: string) => ({ table: "servers", column, type });

export const SERVERS_SCHEMA: TableSchema = {
	create: `
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
			connector TEXT, -- JSON {}: reached through connectors, url is its connector address; NULL: by url
			openapi TEXT, -- JSON: made from an OpenAPI document (openapi_apis holds it compiled); NULL: not
			generation TEXT NOT NULL,
			config_digest TEXT,
			created_at INTEGER NOT NULL,
			updated_at INTEGER NOT NULL
		);
	`,
	addedColumns: [
		added("config_digest", "TEXT"),
		// Servers registered before the field existed were discovered, never pinned.
		added("protocol", "TEXT NOT NULL DEFAULT 'auto'"),
		// Servers registered before auth modes carried the operator's headers, as they still do.
		added("auth", `TEXT NOT NULL DEFAULT '{"type":"operator"}'`),
		added("tools", "TEXT"),
		added("prompts", "TEXT"),
		added("resources", "TEXT"),
		// Servers registered before pinning are under the default mode.
		added("pinning", `TEXT NOT NULL DEFAULT '${DEFAULT_PINNING}'`),
		// Servers registered before argument capture never captured.
		added("capture_arguments", "INTEGER NOT NULL DEFAULT 0"),
		// Servers registered before connectors are reached by their URL.
		added("connector", "TEXT"),
		// Servers registered before OpenAPI documents are not made from one.
		added("openapi", "TEXT"),
	],
	backfill: fillConfigDigests,
};

/** Servers registered before config digests get theirs, before the first request is served. */
async function fillConfigDigests(sql: SqlStorage): Promise<void> {
	for (const server of undigested.select(sql, "WHERE config_digest IS NULL")) {
		sql.exec("UPDATE servers SET config_digest = ? WHERE name = ?", await configDigest(server), server.name);
	}
}

export class ServersTable {
	constructor(private readonly sql: SqlStorage) {}

	get(name: string): ServerRecord | null {
		return servers.get(this.sql, name);
	}

	/** Every server, by name. */
	list(): ServerRecord[] {
		return servers.select(this.sql, "ORDER BY name");
	}

	/** The named servers that exist, in the order of `names`, in one query. */
	named(names: readonly string[]): ServerRecord[] {
		const byName = new Map(
			servers
				.select(this.sql, "WHERE name IN (SELECT value FROM json_each(?))", JSON.stringify(names))
				.map((server) => [server.name, server] as const),
		);
		return names.flatMap((name) => byName.get(name) ?? []);
	}

	/** Every name, in order (for "did you mean" in refusals). */
	names(): string[] {
		return servers.keys(this.sql);
	}

	put(server: ServerRecord): ServerRecord {
		return servers.put(this.sql, server);
	}

	delete(name: string): boolean {
		return servers.delete(this.sql, name);
	}
}
