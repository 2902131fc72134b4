import { env, evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { RegistryDO } from "../src/registry/registry-do.ts";

/** The tables as the previous version created them: no config digests, no per-key session caps. */
const PREVIOUS_SCHEMA = `
	DROP TABLE IF EXISTS servers;
	DROP TABLE IF EXISTS api_keys;
	DROP TABLE IF EXISTS meta;
	DROP TABLE IF EXISTS kv_outbox;
	CREATE TABLE servers (
		name TEXT PRIMARY KEY, url TEXT NOT NULL, headers TEXT NOT NULL, timeout_seconds INTEGER,
		generation TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL
	);
	CREATE TABLE api_keys (
		id TEXT PRIMARY KEY, name TEXT, digest TEXT NOT NULL UNIQUE, user_path TEXT NOT NULL,
		servers TEXT, created_at INTEGER NOT NULL
	);
	INSERT INTO servers VALUES ('old', 'https://old.example.com/mcp', '{}', NULL, 'gen-old', 1, 1);
	INSERT INTO api_keys VALUES ('key_old', NULL, 'digest-old', '/', NULL, 1);
`;

describe("registry migration", () => {
	it("a registry created by the previous version gains config digests, key session caps and key formats before it serves, and publishes everything to KV", async () => {
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
		expect(key).toMatchObject({ id: "key_old", maxSessions: null, format: "legacy", digest: "digest-old" });
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
		expect(await env.REGISTRY_KV.get("key/key_old", "json")).toMatchObject({ id: "key_old", format: "legacy" });
	});
});
