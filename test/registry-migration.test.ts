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
