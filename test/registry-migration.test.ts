import { env, evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { RegistryDO } from "../src/registry/registry-do.ts";

/** The tables as earlier versions created them: no config digests, no per-key session caps, no rate classes. */
const PREVIOUS_SCHEMA = `
	DROP TABLE IF EXISTS servers;
	DROP TABLE IF EXISTS api_keys;
	DROP TABLE IF EXISTS meta;
	DROP TABLE IF EXISTS kv_outbox;
	DROP TABLE IF EXISTS access_rules;
	CREATE TABLE servers (
		name TEXT PRIMARY KEY, url TEXT NOT NULL, headers TEXT NOT NULL, timeout_seconds INTEGER,
		generation TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL
	);
	CREATE TABLE api_keys (
		id TEXT PRIMARY KEY, name TEXT, digest TEXT NOT NULL UNIQUE, user_path TEXT NOT NULL,
		servers TEXT, created_at INTEGER NOT NULL
	);
	CREATE TABLE access_rules (
		name TEXT PRIMARY KEY, match TEXT NOT NULL, servers TEXT, user_path TEXT NOT NULL, max_sessions INTEGER,
		priority INTEGER NOT NULL, generation TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL
	);
	INSERT INTO servers VALUES ('old', 'https://old.example.com/mcp', '{}', NULL, 'gen-old', 1, 1);
	INSERT INTO access_rules VALUES ('old-rule', '{"subject":"alice"}', NULL, '/', NULL, 100, 'gen-rule', 1, 1);
	INSERT INTO api_keys VALUES ('key_old', NULL, 'digest-old', '/', NULL, 1);
`;

describe("registry migration", () => {
	it("a registry created by an earlier version gains config digests, key session caps, key formats, rate classes (standard, as they were counted) and disclosure modes (full, as they listed) before it serves, and publishes everything to KV", async () => {
		// A registry instance of its own, so the suite's registry is untouched.
		const stub = env.REGISTRY.get(env.REGISTRY.idFromName("migration-test"));
		await runInDurableObject(stub, (_instance: RegistryDO, state) => {
			state.storage.sql.exec(PREVIOUS_SCHEMA);
		});
		await evictDurableObject(stub);
		const server = await stub.getServer("old");
		expect(server?.configDigest).toMatch(/^[0-9a-f]{64}$/);
		expect(server?.generation).toBe("gen-old");
		expect(server?.protocol).toBe("auto");
		const key = await stub.storedKey("key_old");
		expect(key).toMatchObject({
			id: "key_old",
			maxSessions: null,
			format: "legacy",
			rateClass: "standard",
			disclosure: "full",
			alwaysList: [],
			digest: "digest-old",
		});
		expect(await stub.listAccessRules()).toMatchObject([
			{ name: "old-rule", rateClass: "standard", disclosure: "full", alwaysList: [] },
		]);
		// The new columns exist: a class is kept for a rule replaced and a key issued on the migrated tables.
		const replaced = await stub.putAccessRule("old-rule", {
			match: { subject: "alice" },
			userPath: "/",
			priority: 100,
			rateClass: "high",
			admin: false,
			approver: false,
			disclosure: "search",
			alwaysList: ["old__*"],
		});
		expect(replaced).toMatchObject({
			rule: { rateClass: "high", disclosure: "search", alwaysList: ["old__*"], generation: "gen-rule" },
			created: false,
		});
		const issued = await stub.createKey({
			userPath: "/",
			rateClass: "unlimited",
			disclosure: "search",
			alwaysList: [],
		});
		if (!("record" in issued)) throw new Error(`no key: ${issued.invalid}`);
		expect(await stub.storedKey(issued.record.id)).toMatchObject({ rateClass: "unlimited", disclosure: "search" });
		// A session opened before the digests existed is told its server's configuration, once.
		const check = await stub.checkSession({
			keyId: "key_old",
			userPath: "/",
			endpoint: { kind: "server", name: "old", generation: "gen-old" },
			members: [{ name: "old", generation: "gen-old" }],
		});
		expect(check).toMatchObject({ ok: true, changed: [{ name: "old", url: "https://old.example.com/mcp" }] });
		// Its first start of this version published every record (by alarm).
		await runDurableObjectAlarm(stub);
		expect(await env.REGISTRY_KV.get("endpoint/old", "json")).toMatchObject({
			kind: "server",
			server: { name: "old" },
		});
		expect(await env.REGISTRY_KV.get("key/key_old", "json")).toMatchObject({
			id: "key_old",
			format: "legacy",
			rateClass: "standard",
		});
	});
});

/** Older still: the virtual servers before shaping and tool search, and none of the tables later versions added. */
const OLDER_VIRTUAL_SERVERS = `
	DROP TABLE IF EXISTS virtual_servers;
	DROP TABLE IF EXISTS connections;
	DROP TABLE IF EXISTS policies;
	DROP TABLE IF EXISTS tool_pins;
	DROP TABLE IF EXISTS pinned_servers;
	DROP TABLE IF EXISTS observed_tools;
	CREATE TABLE virtual_servers (
		name TEXT PRIMARY KEY, servers TEXT NOT NULL, user_paths TEXT,
		generation TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL
	);
	INSERT INTO virtual_servers VALUES ('old-virtual', '["old"]', NULL, 'gen-virtual', 1, 1);
`;

/**
 * The registry's own tables as SQLite keeps their definitions, by name: what CREATE wrote, and
 * every column ALTER TABLE appended since, in order (comments and spacing left out).
 */
function schemaOf(state: DurableObjectState): string[] {
	return state.storage.sql
		.exec<{ name: string; sql: string }>(
			"SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '_cf_%' AND name NOT LIKE 'sqlite_%' ORDER BY name",
		)
		.toArray()
		.map(
			({ name, sql }) =>
				`${name}: ${sql
					.replace(/--[^\n]*/g, "")
					.replace(/\s+/g, " ")
					.replace(/ ,/g, ",")}`,
		);
}

/** The tables a new registry creates, as this version has always created them (golden). */
const NEW_REGISTRY_SCHEMA = [
	"access_rules: CREATE TABLE access_rules ( name TEXT PRIMARY KEY, match TEXT NOT NULL, servers TEXT, user_path TEXT NOT NULL, max_sessions INTEGER, rate_class TEXT NOT NULL DEFAULT 'standard', priority INTEGER NOT NULL, admin INTEGER NOT NULL DEFAULT 0, approver INTEGER NOT NULL DEFAULT 0, disclosure TEXT NOT NULL DEFAULT 'full', always_list TEXT NOT NULL DEFAULT '[]', generation TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL )",
	"api_keys: CREATE TABLE api_keys ( id TEXT PRIMARY KEY, name TEXT, digest TEXT NOT NULL UNIQUE, user_path TEXT NOT NULL, servers TEXT, max_sessions INTEGER, rate_class TEXT NOT NULL DEFAULT 'standard', disclosure TEXT NOT NULL DEFAULT 'full', always_list TEXT NOT NULL DEFAULT '[]', key_format INTEGER NOT NULL DEFAULT 2, created_at INTEGER NOT NULL )",
	"connections: CREATE TABLE connections ( id TEXT PRIMARY KEY, server TEXT NOT NULL, vault TEXT NOT NULL, issuer TEXT, subject TEXT, key_id TEXT, label TEXT NOT NULL, rule TEXT, connected_at INTEGER NOT NULL )",
	"connector_tokens: CREATE TABLE connector_tokens ( id TEXT PRIMARY KEY, server TEXT NOT NULL, digest TEXT NOT NULL UNIQUE, created_at INTEGER NOT NULL, last_seen_at INTEGER )",
	"guards: CREATE TABLE guards ( name TEXT PRIMARY KEY, stage TEXT NOT NULL, applies TEXT, detect TEXT NOT NULL, action TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, webhook TEXT )",
	"kv_outbox: CREATE TABLE kv_outbox ( name TEXT PRIMARY KEY, version INTEGER NOT NULL )",
	"meta: CREATE TABLE meta ( key TEXT PRIMARY KEY, value TEXT NOT NULL )",
	"observed_tools: CREATE TABLE observed_tools ( server TEXT PRIMARY KEY, generation TEXT NOT NULL, observed_at INTEGER NOT NULL, tools TEXT NOT NULL )",
	"openapi_apis: CREATE TABLE openapi_apis ( server TEXT PRIMARY KEY, digest TEXT NOT NULL, api TEXT NOT NULL, credentials TEXT NOT NULL, personal INTEGER NOT NULL, document TEXT )",
	"pinned_servers: CREATE TABLE pinned_servers ( server TEXT PRIMARY KEY, generation TEXT NOT NULL, recorded_at INTEGER NOT NULL )",
	"policies: CREATE TABLE policies ( name TEXT PRIMARY KEY, expression TEXT NOT NULL, effect TEXT NOT NULL, applies TEXT, priority INTEGER NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, approval_timeout_seconds INTEGER, approval_webhook TEXT )",
	`servers: CREATE TABLE servers ( name TEXT PRIMARY KEY, url TEXT NOT NULL, headers TEXT NOT NULL, timeout_seconds INTEGER, protocol TEXT NOT NULL DEFAULT 'auto', auth TEXT NOT NULL DEFAULT '{"type":"operator"}', tools TEXT, prompts TEXT, resources TEXT, pinning TEXT NOT NULL DEFAULT 'warn', capture_arguments INTEGER NOT NULL DEFAULT 0, connector TEXT, openapi TEXT, generation TEXT NOT NULL, config_digest TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL )`,
	"tool_pins: CREATE TABLE tool_pins ( server TEXT NOT NULL, tool TEXT NOT NULL, digest TEXT NOT NULL, definition TEXT NOT NULL, approved_at INTEGER NOT NULL, PRIMARY KEY (server, tool) )",
	"virtual_servers: CREATE TABLE virtual_servers ( name TEXT PRIMARY KEY, servers TEXT NOT NULL, user_paths TEXT, tools TEXT, prompts TEXT, resources TEXT, disclosure TEXT NOT NULL DEFAULT 'full', always_list TEXT NOT NULL DEFAULT '[]', generation TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL )",
];

/**
 * The tables of a registry made from PREVIOUS_SCHEMA and OLDER_VIRTUAL_SERVERS once migrated, as the
 * migrations have always left them (golden): each added column after the older ones, in the order
 * the versions added them; the tables it lacked created as new.
 */
const MIGRATED_SCHEMA = [
	"access_rules: CREATE TABLE access_rules ( name TEXT PRIMARY KEY, match TEXT NOT NULL, servers TEXT, user_path TEXT NOT NULL, max_sessions INTEGER, priority INTEGER NOT NULL, generation TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, rate_class TEXT NOT NULL DEFAULT 'standard', admin INTEGER NOT NULL DEFAULT 0, disclosure TEXT NOT NULL DEFAULT 'full', always_list TEXT NOT NULL DEFAULT '[]', approver INTEGER NOT NULL DEFAULT 0)",
	"api_keys: CREATE TABLE api_keys ( id TEXT PRIMARY KEY, name TEXT, digest TEXT NOT NULL UNIQUE, user_path TEXT NOT NULL, servers TEXT, created_at INTEGER NOT NULL, max_sessions INTEGER, key_format INTEGER NOT NULL DEFAULT 1, rate_class TEXT NOT NULL DEFAULT 'standard', disclosure TEXT NOT NULL DEFAULT 'full', always_list TEXT NOT NULL DEFAULT '[]')",
	"connections: CREATE TABLE connections ( id TEXT PRIMARY KEY, server TEXT NOT NULL, vault TEXT NOT NULL, issuer TEXT, subject TEXT, key_id TEXT, label TEXT NOT NULL, rule TEXT, connected_at INTEGER NOT NULL )",
	"connector_tokens: CREATE TABLE connector_tokens ( id TEXT PRIMARY KEY, server TEXT NOT NULL, digest TEXT NOT NULL UNIQUE, created_at INTEGER NOT NULL, last_seen_at INTEGER )",
	"guards: CREATE TABLE guards ( name TEXT PRIMARY KEY, stage TEXT NOT NULL, applies TEXT, detect TEXT NOT NULL, action TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, webhook TEXT )",
	"kv_outbox: CREATE TABLE kv_outbox ( name TEXT PRIMARY KEY, version INTEGER NOT NULL )",
	"meta: CREATE TABLE meta ( key TEXT PRIMARY KEY, value TEXT NOT NULL )",
	"observed_tools: CREATE TABLE observed_tools ( server TEXT PRIMARY KEY, generation TEXT NOT NULL, observed_at INTEGER NOT NULL, tools TEXT NOT NULL )",
	"openapi_apis: CREATE TABLE openapi_apis ( server TEXT PRIMARY KEY, digest TEXT NOT NULL, api TEXT NOT NULL, credentials TEXT NOT NULL, personal INTEGER NOT NULL, document TEXT )",
	"pinned_servers: CREATE TABLE pinned_servers ( server TEXT PRIMARY KEY, generation TEXT NOT NULL, recorded_at INTEGER NOT NULL )",
	"policies: CREATE TABLE policies ( name TEXT PRIMARY KEY, expression TEXT NOT NULL, effect TEXT NOT NULL, applies TEXT, priority INTEGER NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, approval_timeout_seconds INTEGER, approval_webhook TEXT )",
	`servers: CREATE TABLE servers ( name TEXT PRIMARY KEY, url TEXT NOT NULL, headers TEXT NOT NULL, timeout_seconds INTEGER, generation TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, config_digest TEXT, protocol TEXT NOT NULL DEFAULT 'auto', auth TEXT NOT NULL DEFAULT '{"type":"operator"}', tools TEXT, prompts TEXT, resources TEXT, pinning TEXT NOT NULL DEFAULT 'warn', capture_arguments INTEGER NOT NULL DEFAULT 0, connector TEXT, openapi TEXT)`,
	"tool_pins: CREATE TABLE tool_pins ( server TEXT NOT NULL, tool TEXT NOT NULL, digest TEXT NOT NULL, definition TEXT NOT NULL, approved_at INTEGER NOT NULL, PRIMARY KEY (server, tool) )",
	"virtual_servers: CREATE TABLE virtual_servers ( name TEXT PRIMARY KEY, servers TEXT NOT NULL, user_paths TEXT, generation TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, tools TEXT, prompts TEXT, resources TEXT, disclosure TEXT NOT NULL DEFAULT 'full', always_list TEXT NOT NULL DEFAULT '[]')",
];

describe("registry schema", () => {
	it("a new registry creates exactly the tables, columns, types, defaults and column order this version has always created", async () => {
		const stub = env.REGISTRY.get(env.REGISTRY.idFromName("schema-new-test"));
		await stub.listServers();
		expect(await runInDurableObject(stub, (_i: RegistryDO, state) => schemaOf(state))).toEqual(NEW_REGISTRY_SCHEMA);
	});

	it("an older registry ends with exactly the columns its migrations have always given it, added columns after the older ones in the order they were added, and its virtual servers read back with the defaults", async () => {
		const stub = env.REGISTRY.get(env.REGISTRY.idFromName("schema-migrated-test"));
		await runInDurableObject(stub, (_instance: RegistryDO, state) => {
			state.storage.sql.exec(PREVIOUS_SCHEMA);
			state.storage.sql.exec(OLDER_VIRTUAL_SERVERS);
		});
		await evictDurableObject(stub);
		expect(await stub.getVirtualServer("old-virtual")).toEqual({
			name: "old-virtual",
			servers: ["old"],
			userPaths: null,
			tools: null,
			prompts: null,
			resources: null,
			disclosure: "full",
			alwaysList: [],
			generation: "gen-virtual",
			createdAt: 1,
			updatedAt: 1,
		});
		expect(await runInDurableObject(stub, (_i: RegistryDO, state) => schemaOf(state))).toEqual(MIGRATED_SCHEMA);
	});
});
