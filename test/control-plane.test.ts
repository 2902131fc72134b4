import { env, listDurableObjectIds, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../src/edge/app.ts";
import { forgetIsolateCaches } from "../src/primitives/expiring-map.ts";
import type { KvWriter } from "../src/registry/kv-publisher.ts";
import type { StoredKey } from "../src/registry/kv-records.ts";
import { REGISTRY_NAME, type RegistryDO } from "../src/registry/registry-do.ts";
import { checkSessionWith, kvRegistryReader, type RegistryReader } from "../src/registry/registry-reader.ts";
import type { SessionDO } from "../src/session/session-do.ts";
import { countingEnv } from "./support/counting-env.ts";
import { eventually } from "./support/eventually.ts";
import {
	admin,
	BASE,
	createKey,
	initializeBody,
	mcpHeaders,
	openSession,
	readReply,
	rpc,
	uniqueName,
} from "./support/gateway.ts";
import { parsedMessage } from "./support/messages.ts";
import { ENVELOPE, modernRequest } from "./support/modern.ts";
import { instrumentSession, ManualClock, sessionObject } from "./support/session-object.ts";
import { registerServer, toolCallsOf, upstreamUrl } from "./support/upstreams.ts";

const RECHECK = 30_000;
const PING = { jsonrpc: "2.0", id: 1, method: "ping" };
const INVALID_KEY = "Invalid API key: it is unknown, malformed or has been revoked.";

const registry = () => env.REGISTRY.get(env.REGISTRY.idFromName(REGISTRY_NAME));

/** A raw initialize POST with this bearer, as a Request for `createApp().fetch`. */
function initializeRequest(path: string, bearer: string): Request {
	return new Request(`${BASE}${path}`, {
		method: "POST",
		headers: mcpHeaders(bearer),
		body: JSON.stringify(initializeBody()),
	});
}

/** One character in the middle of the key's MAC changed. */
function tamperMac(key: string): string {
	const at = key.lastIndexOf(".") + 20;
	return key.slice(0, at) + (key[at] === "A" ? "B" : "A") + key.slice(at + 1);
}

describe("keys verify themselves at the edge", () => {
	it("garbage, truncated, wrong-prefix, MAC-invalid and old-format keys get 401 with the same sentence, touching no Durable Object and no KV read", async () => {
		const server = await registerServer("beta");
		const { key } = await createKey();
		const app = createApp();
		const { counts, env: counted } = countingEnv();
		const bad = [
			"garbage",
			key.slice(0, -5),
			key.replace("mcpgw2_", "mcpgw3_"),
			tamperMac(key),
			`mcpgw_${"A".repeat(43)}`,
			`${key}x`,
		];
		for (const bearer of bad) {
			const response = await app.fetch(initializeRequest(`/mcp/${server}`, bearer), counted);
			expect(response.status).toBe(401);
			expect((await readReply(response)).error?.message).toBe(INVALID_KEY);
		}
		expect(counts).toEqual({ durableObjects: 0, durableObjectCalls: 0, kvReads: 0 });
	});

	it("an initialize with a valid key reads KV twice (key, endpoint) and sends no request to the registry Durable Object", async () => {
		const server = await registerServer("beta");
		const { key } = await createKey();
		const before = (await (await admin("GET", "/registry-stats")).json()) as { reads: number };
		const { counts, env: counted } = countingEnv();
		const response = await createApp().fetch(initializeRequest(`/mcp/${server}`, key), counted);
		expect(response.status).toBe(200);
		await response.body?.cancel();
		// The key record, then the endpoint record: KV only.
		expect(counts.kvReads).toBe(2);
		const after = (await (await admin("GET", "/registry-stats")).json()) as { reads: number };
		expect(after.reads).toBe(before.reads);
	});

	it("a session reads policies through the same reader as its rechecks, so its cost report counts both", async () => {
		const server = await registerServer("beta");
		const path = `/mcp/${server}`;
		const policy = uniqueName("policy");
		const put = await admin("PUT", `/policies/${policy}`, {
			expression: 'principal.kind == "key"',
			effect: "allow",
			applies: { servers: [server] },
		});
		expect(put.status).toBe(201);
		const { key } = await createKey();
		const sessionId = await openSession(path, key);
		const { stub, clock } = await instrumentSession(sessionId);
		forgetIsolateCaches();
		const list = { jsonrpc: "2.0", id: 2, method: "tools/list" };
		expect((await readReply(await rpc(path, key, sessionId, list))).result).toHaveProperty("tools");
		const listed = await stub.stats();
		// No recheck was due: what the report counts is the governed list's reading of the policies (and of the
		// server's pins; the tests keep nothing in the isolate's caches, so each decision reads them again).
		expect(listed.registryReads).toBe(0);
		expect(listed.kvReads).toBeGreaterThan(0);
		clock.advance(RECHECK);
		expect((await readReply(await rpc(path, key, sessionId, PING))).result).toEqual({});
		const rechecked = await stub.stats();
		// The recheck's key and endpoint records, counted by the same reader on top.
		expect(rechecked.registryReads).toBe(1);
		expect(rechecked.kvReads).toBe(listed.kvReads + 2);
	});

	it("a cached key costs no KV read; a forged key naming a cached id still gets 401 and leaves the cache alone", async () => {
		const server = await registerServer("beta");
		const { key } = await createKey();
		const app = createApp();
		const { counts, env: counted } = countingEnv();
		// The edge's key cache is on in this env (the test Worker's own setting turns it off).
		const cachingEnv = { ...counted, KEY_CACHE_TTL_SECONDS: "60" };
		const send = (bearer: string) =>
			app.fetch(
				new Request(`${BASE}/mcp/${server}`, { method: "DELETE", headers: { authorization: `Bearer ${bearer}` } }),
				cachingEnv,
			);
		expect((await send(key)).status).toBe(400);
		expect(counts.kvReads).toBe(1);
		const forged = await send(tamperMac(key));
		expect(forged.status).toBe(401);
		expect((await readReply(forged)).error?.message).toBe(INVALID_KEY);
		expect((await send(key)).status).toBe(400);
		expect(counts).toEqual({ durableObjects: 0, durableObjectCalls: 0, kvReads: 1 });
	});

	it("ten 2026-07-28 requests to a 2026-07-28 server, with the edge caches on, cost five KV reads (key, endpoint, tool policies, content guards, pins), no session, and one registry call (its first list recorded)", async () => {
		const server = await registerServer("modern");
		const { key } = await createKey();
		const app = createApp();
		const { counts, env: counted } = countingEnv();
		const cachingEnv = { ...counted, KEY_CACHE_TTL_SECONDS: "60", ENDPOINT_CACHE_TTL_SECONDS: "60" };
		for (let id = 1; id <= 10; id++) {
			const body = { id, method: "tools/list", params: { _meta: ENVELOPE } };
			const response = await app.fetch(modernRequest(`/mcp/${server}`, key, body), cachingEnv);
			expect(response.status).toBe(200);
			await response.body?.cancel();
		}
		// The first list is recorded in the background, once; the lists after it find the pins in the isolate.
		await eventually(() => counts.durableObjectCalls > 0, "the first list recorded");
		expect(counts).toEqual({ durableObjects: 1, durableObjectCalls: 1, kvReads: 5 });
	});

	it("ten 2026-07-28 requests to a governed 2026-07-28 server (an alias, a policy for it), caches on, cost the same five KV reads and no session: lists shaped and filtered, the denied call refused", async () => {
		const server = uniqueName("governed-stateless");
		const tools = { overrides: { echo: { name: "say_back" } } };
		expect((await admin("PUT", `/servers/${server}`, { url: upstreamUrl("modern"), tools })).status).toBe(201);
		const policy = uniqueName("policy");
		const denying = { expression: 'tool.name == "add"', effect: "deny", applies: { servers: [server] } };
		expect((await admin("PUT", `/policies/${policy}`, denying)).status).toBe(201);
		try {
			// The test before kept the policies for a minute in this isolate: a fresh one reads them, with this one.
			forgetIsolateCaches();
			const { key } = await createKey();
			const app = createApp();
			const { counts, env: counted } = countingEnv();
			// The dashboard's call counts reach their own object in batches, apart from what a request costs.
			const cachingEnv = {
				...counted,
				CALL_COUNTS: env.CALL_COUNTS,
				KEY_CACHE_TTL_SECONDS: "60",
				ENDPOINT_CACHE_TTL_SECONDS: "60",
			};
			const send = async (id: number, method: string, params: Record<string, unknown> = {}) => {
				const body = { id, method, params: { ...params, _meta: ENVELOPE } };
				return readReply(await app.fetch(modernRequest(`/mcp/${server}`, key, body), cachingEnv));
			};
			for (let id = 1; id <= 8; id++) {
				const listed = (await send(id, "tools/list")).result?.tools as Array<{ name: string }> | undefined;
				const names = (listed ?? []).map((tool) => tool.name);
				expect(names).toContain("say_back");
				expect(names).not.toContain("echo");
				expect(names).not.toContain("add");
			}
			expect((await send(9, "tools/call", { name: "add", arguments: { a: 1, b: 2 } })).error?.data?.kind).toBe(
				"forbidden",
			);
			expect(
				(await send(10, "tools/call", { name: "say_back", arguments: { text: "governed" } })).result,
			).toMatchObject({ content: [{ type: "text", text: "governed" }] });
			// The first list is recorded in the background, once; nothing else reaches a Durable Object.
			await eventually(() => counts.durableObjectCalls > 0, "the first list recorded");
			expect(counts).toEqual({ durableObjects: 1, durableObjectCalls: 1, kvReads: 5 });
		} finally {
			await admin("DELETE", `/policies/${policy}`);
		}
	});

	it("a revoked key gets 401 with the same sentence once its record is gone from KV", async () => {
		const server = await registerServer("beta");
		const { id, key } = await createKey();
		expect((await admin("DELETE", `/keys/${id}`)).status).toBe(204);
		const response = await createApp().fetch(initializeRequest(`/mcp/${server}`, key), env);
		expect(response.status).toBe(401);
		expect((await readReply(response)).error?.message).toBe(INVALID_KEY);
	});
});

describe("the registry writes through to Workers KV", () => {
	it("servers, virtual servers and keys reach KV with their generation and config digest; deletes remove them", async () => {
		const name = uniqueName("kv");
		const put = (await (await admin("PUT", `/servers/${name}`, { url: upstreamUrl("beta") })).json()) as {
			generation: string;
		};
		const endpoint = (await env.REGISTRY_KV.get(`endpoint/${name}`, "json")) as {
			kind: string;
			server: { generation: string; configDigest: string; url: string };
		};
		expect(endpoint.kind).toBe("server");
		expect(endpoint.server.generation).toBe(put.generation);
		expect(endpoint.server.configDigest).toMatch(/^[0-9a-f]{64}$/);
		const list = (await env.REGISTRY_KV.get("servers", "json")) as Array<{ name: string }>;
		expect(list.some((server) => server.name === name)).toBe(true);
		const vs = uniqueName("kv-vs");
		await admin("PUT", `/virtual-servers/${vs}`, { servers: [name] });
		expect(await env.REGISTRY_KV.get(`endpoint/${vs}`, "json")).toMatchObject({
			kind: "virtual",
			members: [{ name, generation: put.generation }],
		});
		// A member's edit reaches the virtual server's record too.
		await admin("PUT", `/servers/${name}`, { url: upstreamUrl("alpha") });
		expect(await env.REGISTRY_KV.get(`endpoint/${vs}`, "json")).toMatchObject({
			members: [{ name, url: upstreamUrl("alpha") }],
		});
		const { id } = await createKey();
		expect(await env.REGISTRY_KV.get(`key/${id}`, "json")).toMatchObject({ id, format: "self-verifying" });
		await admin("DELETE", `/keys/${id}`);
		await admin("DELETE", `/virtual-servers/${vs}`);
		await admin("DELETE", `/servers/${name}`);
		expect(await env.REGISTRY_KV.get(`key/${id}`)).toBeNull();
		expect(await env.REGISTRY_KV.get(`endpoint/${vs}`)).toBeNull();
		expect(await env.REGISTRY_KV.get(`endpoint/${name}`)).toBeNull();
	});

	it("a write whose KV publish fails is committed in the registry, and the alarm retries until it lands", async () => {
		const stub = registry();
		const failing: KvWriter = {
			put: () => Promise.reject(new Error("KV unavailable (test)")),
			delete: () => Promise.reject(new Error("KV unavailable (test)")),
		};
		await runInDurableObject(stub, (instance: RegistryDO) => {
			instance.publisher.kv = failing;
		});
		const name = uniqueName("retry");
		expect((await admin("PUT", `/servers/${name}`, { url: upstreamUrl("beta") })).status).toBe(201);
		expect((await admin("GET", `/servers/${name}`)).status).toBe(200);
		expect(await env.REGISTRY_KV.get(`endpoint/${name}`)).toBeNull();
		expect(await runInDurableObject(stub, (_i: RegistryDO, state) => state.storage.getAlarm())).not.toBeNull();
		// Still failing: the alarm leaves it waiting.
		await runDurableObjectAlarm(stub);
		expect(await env.REGISTRY_KV.get(`endpoint/${name}`)).toBeNull();
		await runInDurableObject(stub, (instance: RegistryDO) => {
			instance.publisher.kv = env.REGISTRY_KV;
		});
		await runDurableObjectAlarm(stub);
		expect(await env.REGISTRY_KV.get(`endpoint/${name}`, "json")).toMatchObject({ server: { name } });
		expect(await runInDurableObject(stub, (instance: RegistryDO) => instance.publisher.pending())).toBe(0);
	});

	it("two concurrent replacements of one server: the later write is what KV keeps", async () => {
		const stub = registry();
		const name = uniqueName("race");
		await admin("PUT", `/servers/${name}`, { url: upstreamUrl("beta") });
		let release = () => {};
		const held = new Promise<void>((resolve) => {
			release = resolve;
		});
		let puts = 0;
		await runInDurableObject(stub, (instance: RegistryDO) => {
			const real = env.REGISTRY_KV;
			instance.publisher.kv = {
				put: async (...args: Parameters<KVNamespace["put"]>) => {
					puts++;
					// The first publish is slow: the second write commits while it is under way.
					if (puts === 1) await held;
					return real.put(...args);
				},
				delete: (key: string) => real.delete(key),
			};
		});
		const first = admin("PUT", `/servers/${name}`, { url: `${upstreamUrl("beta")}?first` });
		await eventually(() => puts >= 1, "the first publish started");
		const second = admin("PUT", `/servers/${name}`, { url: `${upstreamUrl("beta")}?second` });
		// The second write has committed (it marked the name again) while the first publish is held.
		await eventually(async () => {
			const version = await runInDurableObject(
				stub,
				(_i: RegistryDO, state) =>
					state.storage.sql
						.exec<{ version: number }>("SELECT version FROM kv_outbox WHERE name = ?", `endpoint/${name}`)
						.toArray()[0]?.version ?? 0,
			);
			return version >= 2;
		}, "the second write committed");
		release();
		expect((await first).status).toBe(200);
		expect((await second).status).toBe(200);
		const published = (await env.REGISTRY_KV.get(`endpoint/${name}`, "json")) as { server: { url: string } };
		expect(published.server.url).toBe(`${upstreamUrl("beta")}?second`);
		await runInDurableObject(stub, (instance: RegistryDO) => {
			instance.publisher.kv = env.REGISTRY_KV;
		});
	});

	it("POST /admin/sync republishes every record", async () => {
		const name = await registerServer("beta");
		await env.REGISTRY_KV.delete(`endpoint/${name}`);
		const response = await admin("POST", "/sync");
		expect(response.status).toBe(200);
		const result = (await response.json()) as { records: number; pending: number };
		expect(result.pending).toBe(0);
		expect(result.records).toBeGreaterThan(0);
		expect(await env.REGISTRY_KV.get(`endpoint/${name}`, "json")).toMatchObject({ server: { name } });
	});
});

describe("sessions recheck from KV", () => {
	it("a session's rechecks read KV and send no request to the registry Durable Object", async () => {
		const server = await registerServer("beta");
		const path = `/mcp/${server}`;
		const { key } = await createKey();
		const sessionId = await openSession(path, key);
		const { stub, clock } = await instrumentSession(sessionId);
		const before = (await (await admin("GET", "/registry-stats")).json()) as { reads: number };
		for (let i = 0; i < 3; i++) {
			clock.advance(RECHECK);
			expect((await readReply(await rpc(path, key, sessionId, PING))).result).toEqual({});
		}
		const stats = await stub.stats();
		expect(stats.registryReads).toBe(3);
		// Each recheck reads the key record and the endpoint record.
		expect(stats.kvReads).toBe(6);
		const after = (await (await admin("GET", "/registry-stats")).json()) as { reads: number };
		expect(after.reads).toBe(before.reads);
	});

	it("a stale KV read keeps a revoked key's session going only until the fresh record is read, then it ends", async () => {
		const server = await registerServer("beta");
		const path = `/mcp/${server}`;
		const owner = await createKey();
		const sessionId = await openSession(path, owner.key);
		const stale = (await registry().storedKey(owner.id)) as StoredKey;
		expect((await admin("DELETE", `/keys/${owner.id}`)).status).toBe(204);
		const stub = await sessionObject(sessionId);
		const clock = new ManualClock(Date.now() + 1_000);
		await runInDurableObject(stub, (instance: SessionDO) => {
			instance.clock = clock;
			// KV at this location still serves the record it cached before the revocation, once.
			const fresh = kvRegistryReader(env.REGISTRY_KV, 0);
			let served = false;
			const reader: RegistryReader = {
				key: async (id) => {
					if (served) return fresh.key(id);
					served = true;
					return stale;
				},
				endpoint: (name) => fresh.endpoint(name),
				servers: () => fresh.servers(),
				rules: () => fresh.rules(),
				policies: () => fresh.policies(),
				guards: () => fresh.guards(),
				pins: (server) => fresh.pins(server),
			};
			instance.registry = { checkSession: (input) => checkSessionWith(reader, input), kvReads: 0 };
		});
		// Straight to the session, as an edge that still had the key cached would send it.
		const scope = { keyId: owner.id, userPath: "/", endpoint: path };
		const ping = () => stub.post(scope, parsedMessage({ jsonrpc: "2.0", id: 1, method: "ping" }));
		clock.advance(RECHECK);
		expect((await readReply(await ping())).result).toEqual({});
		clock.advance(RECHECK);
		expect((await ping()).status).toBe(404);
		expect(await runInDurableObject(stub, async (_i: SessionDO, state) => (await state.storage.list()).size)).toBe(0);
	});
});

describe("an unreadable KV", () => {
	const failing: RegistryReader = {
		key: () => Promise.reject(new Error("KV read failed (test)")),
		endpoint: () => Promise.reject(new Error("KV read failed (test)")),
		servers: () => Promise.reject(new Error("KV read failed (test)")),
		rules: () => Promise.reject(new Error("KV read failed (test)")),
		policies: () => Promise.reject(new Error("KV read failed (test)")),
		guards: () => Promise.reject(new Error("KV read failed (test)")),
		pins: () => Promise.reject(new Error("KV read failed (test)")),
	};

	it("initialize fails with a 503 that names nothing internal, and opens nothing", async () => {
		const server = await registerServer("beta");
		const { key } = await createKey();
		const before = (await listDurableObjectIds(env.SESSIONS)).length;
		for (const reader of [
			failing,
			// Keys readable, endpoints not.
			{ ...kvRegistryReader(env.REGISTRY_KV, 0), endpoint: failing.endpoint, servers: failing.servers },
		]) {
			for (const path of [`/mcp/${server}`, "/mcp"]) {
				const response = await createApp({ reader: () => reader }).fetch(initializeRequest(path, key), env);
				expect(response.status).toBe(503);
				expect(response.headers.get("retry-after")).toBe("5");
				const reply = await readReply(response);
				expect(reply.error?.data?.kind).toBe("registry_unavailable");
				expect(reply.error?.message).toBe(
					"Service Unavailable: the gateway cannot read its configuration right now. Try again shortly.",
				);
			}
		}
		expect((await listDurableObjectIds(env.SESSIONS)).length).toBe(before);
	});

	it("a KV that does not answer is treated as unreadable: initialize gets the same 503 once the read times out", async () => {
		const server = await registerServer("beta");
		const { key } = await createKey();
		const silent = { get: () => new Promise<never>(() => {}) } as unknown as KVNamespace;
		const fresh = kvRegistryReader(env.REGISTRY_KV, 0);
		const slow = kvRegistryReader(silent, 0, 50);
		const reader: RegistryReader = {
			key: (id) => fresh.key(id),
			endpoint: slow.endpoint,
			servers: slow.servers,
			rules: slow.rules,
			policies: slow.policies,
			guards: slow.guards,
			pins: slow.pins,
		};
		const response = await createApp({ reader: () => reader }).fetch(initializeRequest(`/mcp/${server}`, key), env);
		expect(response.status).toBe(503);
		expect((await readReply(response)).error?.data?.kind).toBe("registry_unavailable");
	});

	it("a live session whose recheck cannot read KV is served on unverified, as when the registry cannot be read", async () => {
		const server = await registerServer("beta");
		const path = `/mcp/${server}`;
		const { key } = await createKey();
		const sessionId = await openSession(path, key);
		const stub = await sessionObject(sessionId);
		const clock = new ManualClock(Date.now() + 1_000);
		await runInDurableObject(stub, (instance: SessionDO) => {
			instance.clock = clock;
			const broken = { get: () => Promise.reject(new Error("KV unavailable (test)")) } as unknown as KVNamespace;
			const reader = kvRegistryReader(broken, 0);
			instance.registry = { checkSession: (input) => checkSessionWith(reader, input), kvReads: 0 };
		});
		clock.advance(RECHECK);
		expect((await readReply(await rpc(path, key, sessionId, PING))).result).toEqual({});
		// Not extended while unverified: the session now ends at the unverified limit, not an idle timeout away.
		const deadline = await runInDurableObject(stub, (instance: SessionDO) => instance.deadline());
		expect(deadline).toBeLessThanOrEqual(clock.now() + 300_000);
	});
});

describe("the edge reads the registry through the request's reader only", () => {
	/** A reader of the real KV that counts what it is asked, method by method. */
	function countingReader(overrides: Partial<RegistryReader> = {}) {
		const kv = kvRegistryReader(env.REGISTRY_KV, 0);
		const asked = { key: 0, endpoint: 0, servers: 0, rules: 0, policies: 0, guards: 0, pins: 0 };
		const counted =
			<A extends unknown[], R>(name: keyof typeof asked, read: (...args: A) => R) =>
			(...args: A): R => {
				asked[name]++;
				return read(...args);
			};
		const reader: RegistryReader = {
			key: counted("key", overrides.key ?? kv.key),
			endpoint: counted("endpoint", overrides.endpoint ?? kv.endpoint),
			servers: counted("servers", overrides.servers ?? kv.servers),
			rules: counted("rules", overrides.rules ?? kv.rules),
			policies: counted("policies", overrides.policies ?? kv.policies),
			guards: counted("guards", overrides.guards ?? kv.guards),
			pins: counted("pins", overrides.pins ?? kv.pins),
		};
		return { reader, asked };
	}

	it("a stateless 2026-07-28 tools/list reads the key, the endpoint, the tool policies, the content guards and the pins through the injected reader, each once", async () => {
		const server = await registerServer("modern");
		const { key } = await createKey();
		// Nothing kept from other tests: every record is read for this request.
		forgetIsolateCaches();
		const { reader, asked } = countingReader();
		const body = { id: 1, method: "tools/list", params: { _meta: ENVELOPE } };
		const response = await createApp({ reader: () => reader }).fetch(modernRequest(`/mcp/${server}`, key, body), env);
		expect(response.status).toBe(200);
		expect(((await readReply(response)).result?.tools as unknown[] | undefined)?.length).toBeGreaterThan(0);
		expect(asked).toEqual({ key: 1, endpoint: 1, servers: 0, rules: 0, policies: 1, guards: 1, pins: 1 });
	});

	it("a stateless 2026-07-28 call whose tool policies cannot be read is answered 503 registry_unavailable under its id, and the call never reaches the upstream", async () => {
		const server = await registerServer("modern");
		const { key } = await createKey();
		forgetIsolateCaches();
		const { reader, asked } = countingReader({ policies: () => Promise.reject(new Error("KV read failed (test)")) });
		const args = { text: `unread-policies-${crypto.randomUUID()}` };
		const body = { id: 7, method: "tools/call", params: { name: "echo", arguments: args, _meta: ENVELOPE } };
		const response = await createApp({ reader: () => reader }).fetch(modernRequest(`/mcp/${server}`, key, body), env);
		expect(response.status).toBe(503);
		expect(response.headers.get("retry-after")).toBe("5");
		const reply = await readReply(response);
		expect(reply.id).toBe(7);
		expect(reply.error?.data?.kind).toBe("registry_unavailable");
		expect(reply.error?.message).toBe(
			"Service Unavailable: the gateway cannot read its configuration right now. Try again shortly.",
		);
		expect(asked.policies).toBe(1);
		expect(await toolCallsOf("modern", "echo", args)).toEqual([]);
	});
});
