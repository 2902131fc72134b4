import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { keyMayUseVirtualServer, userPathAllowed } from "../src/registry/access.ts";
import { REGISTRY_NAME, type RegistryDO } from "../src/registry/registry-do.ts";
import type { SessionCheckInput } from "../src/registry/schemas.ts";
import { admin, createKey, openSession, postInitialize, readReply, rpc, uniqueName } from "./support/gateway.ts";
import { ENVELOPE, modernPost } from "./support/modern.ts";
import { instrumentSession } from "./support/session-object.ts";
import { upstreamUrl } from "./support/upstreams.ts";

interface VirtualServerBody {
	name: string;
	servers: string[];
	userPaths: string[] | null;
	generation: string;
	createdAt: string;
	updatedAt: string;
}

function registry() {
	return env.REGISTRY.get(env.REGISTRY.idFromName(REGISTRY_NAME));
}

async function putServer(name = uniqueName("member")): Promise<{ name: string; generation: string }> {
	const response = await admin("PUT", `/servers/${name}`, { url: upstreamUrl("beta") });
	if (response.status !== 201 && response.status !== 200) throw new Error(`server PUT failed: ${response.status}`);
	const { generation } = (await response.json()) as { generation: string };
	return { name, generation };
}

async function putVirtual(name: string, body: { servers: string[]; userPaths?: string[] }): Promise<VirtualServerBody> {
	const response = await admin("PUT", `/virtual-servers/${name}`, body);
	if (response.status !== 201 && response.status !== 200) {
		throw new Error(`virtual server PUT failed: ${response.status} ${await response.text()}`);
	}
	return (await response.json()) as VirtualServerBody;
}

async function errorMessage(response: Response): Promise<string> {
	return ((await response.json()) as { error: { message: string } }).error.message;
}

async function readsOf(stub: DurableObjectStub<RegistryDO>): Promise<number> {
	return runInDurableObject(stub, (instance: RegistryDO) => instance.reads);
}

describe("admin API virtual servers", () => {
	it("creates a virtual server with 201, replaces it with 200 and keeps its generation", async () => {
		const a = await putServer();
		const b = await putServer();
		const name = uniqueName("vs");
		const created = await admin("PUT", `/virtual-servers/${name}`, { servers: [a.name] });
		expect(created.status).toBe(201);
		const first = (await created.json()) as VirtualServerBody;
		expect(first).toMatchObject({ name, servers: [a.name], userPaths: null });
		expect(first.generation).toMatch(/^[A-Za-z0-9_-]{16}$/);
		expect(new Date(first.createdAt).toISOString()).toBe(first.createdAt);

		const replaced = await admin("PUT", `/virtual-servers/${name}`, {
			servers: [b.name, a.name],
			userPaths: ["/team"],
		});
		expect(replaced.status).toBe(200);
		const second = (await replaced.json()) as VirtualServerBody;
		expect(second).toMatchObject({
			servers: [b.name, a.name],
			userPaths: ["/team"],
			generation: first.generation,
			createdAt: first.createdAt,
		});
	});

	it("drops repeated members and keeps the listed order", async () => {
		const a = await putServer();
		const b = await putServer();
		const body = await putVirtual(uniqueName("vs"), { servers: [b.name, a.name, b.name] });
		expect(body.servers).toEqual([b.name, a.name]);
	});

	it("gives a virtual server deleted and created again a new generation", async () => {
		const a = await putServer();
		const name = uniqueName("vs");
		const first = await putVirtual(name, { servers: [a.name] });
		expect((await admin("DELETE", `/virtual-servers/${name}`)).status).toBe(204);
		const second = await putVirtual(name, { servers: [a.name] });
		expect(second.generation).not.toBe(first.generation);
	});

	it("refuses a virtual server under a server's name with 409 and changes nothing", async () => {
		const a = await putServer();
		const before = await (await admin("GET", `/servers/${a.name}`)).json();
		const clash = await admin("PUT", `/virtual-servers/${a.name}`, { servers: [a.name] });
		expect(clash.status).toBe(409);
		expect(await errorMessage(clash)).toMatch(/already the name of a server/);
		expect((await admin("GET", `/virtual-servers/${a.name}`)).status).toBe(404);
		expect(await (await admin("GET", `/servers/${a.name}`)).json()).toEqual(before);
	});

	it("refuses a server under a virtual server's name with 409 and changes nothing", async () => {
		const a = await putServer();
		const name = uniqueName("vs");
		const virtual = await putVirtual(name, { servers: [a.name] });
		const clash = await admin("PUT", `/servers/${name}`, { url: upstreamUrl("alpha") });
		expect(clash.status).toBe(409);
		expect(await errorMessage(clash)).toMatch(/already the name of a virtual server/);
		expect((await admin("GET", `/servers/${name}`)).status).toBe(404);
		expect(await (await admin("GET", `/virtual-servers/${name}`)).json()).toEqual(virtual);
	});

	it("rejects unknown members with 400 naming them, and creates nothing", async () => {
		const a = await putServer();
		const name = uniqueName("vs");
		const missing = uniqueName("typo");
		const response = await admin("PUT", `/virtual-servers/${name}`, { servers: [a.name, missing] });
		expect(response.status).toBe(400);
		const message = await errorMessage(response);
		expect(message).toContain(`no server named '${missing}'`);
		expect(message).not.toContain(`'${a.name}'`);
		expect((await admin("GET", `/virtual-servers/${name}`)).status).toBe(404);
	});

	it("rejects another virtual server as a member with 400", async () => {
		const a = await putServer();
		const inner = uniqueName("vs");
		await putVirtual(inner, { servers: [a.name] });
		const response = await admin("PUT", `/virtual-servers/${uniqueName("vs")}`, { servers: [inner] });
		expect(response.status).toBe(400);
		expect(await errorMessage(response)).toContain(`members must be servers, not virtual servers: '${inner}'`);
	});

	it("a PUT rejected for unknown members leaves the existing virtual server as it was", async () => {
		const a = await putServer();
		const name = uniqueName("vs");
		const before = await putVirtual(name, { servers: [a.name] });
		const rejected = await admin("PUT", `/virtual-servers/${name}`, { servers: [uniqueName("typo")] });
		expect(rejected.status).toBe(400);
		expect(await (await admin("GET", `/virtual-servers/${name}`)).json()).toEqual(before);
	});

	it("rejects bad names, an empty server list and bad user paths with 400 and the problem in words", async () => {
		const a = await putServer();

		const badName = await admin("PUT", "/virtual-servers/Bad_Name", { servers: [a.name] });
		expect(badName.status).toBe(400);
		expect(await errorMessage(badName)).toMatch(/virtual server name must be 1-32 characters/);

		const empty = await admin("PUT", `/virtual-servers/${uniqueName("vs")}`, { servers: [] });
		expect(empty.status).toBe(400);
		expect(await errorMessage(empty)).toMatch(/servers: /);

		const badMember = await admin("PUT", `/virtual-servers/${uniqueName("vs")}`, { servers: ["UPPER"] });
		expect(badMember.status).toBe(400);
		expect(await errorMessage(badMember)).toMatch(/servers\.0: must be 1-32 characters/);

		const badPath = await admin("PUT", `/virtual-servers/${uniqueName("vs")}`, {
			servers: [a.name],
			userPaths: ["no-slash"],
		});
		expect(badPath.status).toBe(400);
		expect(await errorMessage(badPath)).toMatch(/userPaths\.0: must be a path/);

		const noPaths = await admin("PUT", `/virtual-servers/${uniqueName("vs")}`, { servers: [a.name], userPaths: [] });
		expect(noPaths.status).toBe(400);
		expect(await errorMessage(noPaths)).toMatch(/userPaths: /);

		const extra = await admin("PUT", `/virtual-servers/${uniqueName("vs")}`, { servers: [a.name], url: "x" });
		expect(extra.status).toBe(400);
	});

	it("lists virtual servers and shows one; an unknown name is 404", async () => {
		const a = await putServer();
		const name = uniqueName("vs");
		const created = await putVirtual(name, { servers: [a.name], userPaths: ["/team/a"] });
		const listed = (await (await admin("GET", "/virtual-servers")).json()) as { virtualServers: VirtualServerBody[] };
		expect(listed.virtualServers.find((vs) => vs.name === name)).toEqual(created);
		const one = await admin("GET", `/virtual-servers/${name}`);
		expect(one.status).toBe(200);
		expect(await one.json()).toEqual(created);
		expect((await admin("GET", `/virtual-servers/${uniqueName("nope")}`)).status).toBe(404);
	});

	it("deletes a virtual server with 204, then answers 404 for it", async () => {
		const a = await putServer();
		const name = uniqueName("vs");
		await putVirtual(name, { servers: [a.name] });
		expect((await admin("DELETE", `/virtual-servers/${name}`)).status).toBe(204);
		expect((await admin("GET", `/virtual-servers/${name}`)).status).toBe(404);
		expect((await admin("DELETE", `/virtual-servers/${name}`)).status).toBe(404);
	});

	it("deleting a virtual server leaves its member servers in place", async () => {
		const a = await putServer();
		const name = uniqueName("vs");
		await putVirtual(name, { servers: [a.name] });
		await admin("DELETE", `/virtual-servers/${name}`);
		expect((await admin("GET", `/servers/${a.name}`)).status).toBe(200);
	});
});

describe("RegistryDO.resolveEndpoint", () => {
	it("resolves a server name to the server", async () => {
		const a = await putServer();
		const resolved = await registry().resolveEndpoint(a.name);
		expect(resolved).toMatchObject({ kind: "server", server: { name: a.name, generation: a.generation } });
	});

	it("resolves a virtual server to its existing members in listed order, skipping deleted ones", async () => {
		const a = await putServer();
		const b = await putServer();
		const c = await putServer();
		const name = uniqueName("vs");
		const virtual = await putVirtual(name, { servers: [c.name, a.name, b.name] });
		await admin("DELETE", `/servers/${a.name}`);
		const resolved = await registry().resolveEndpoint(name);
		if (resolved?.kind !== "virtual") throw new Error(`expected a virtual server, got ${JSON.stringify(resolved)}`);
		expect(resolved.virtualServer).toMatchObject({
			name,
			servers: [c.name, a.name, b.name],
			generation: virtual.generation,
		});
		expect(resolved.members.map((member) => member.name)).toEqual([c.name, b.name]);
	});

	it("resolves an unknown name to null", async () => {
		expect(await registry().resolveEndpoint(uniqueName("nope"))).toBeNull();
	});

	it("counts one read per call", async () => {
		const a = await putServer();
		const name = uniqueName("vs");
		await putVirtual(name, { servers: [a.name] });
		const stub = registry();
		const before = await readsOf(stub);
		await stub.resolveEndpoint(name);
		expect(await readsOf(stub)).toBe(before + 1);
	});
});

describe("RegistryDO.checkSession", () => {
	async function check(input: SessionCheckInput) {
		return registry().checkSession(input);
	}

	it("accepts a live session on a server, a virtual server and the aggregate endpoint", async () => {
		const a = await putServer();
		const name = uniqueName("vs");
		const virtual = await putVirtual(name, { servers: [a.name], userPaths: ["/team"] });
		const key = await createKey({ userPath: "/team/a", servers: [a.name] });
		const base = { keyId: key.id, userPath: "/team/a" };
		const live = { ok: true, changed: [] };
		expect(await check({ ...base, endpoint: { kind: "server", name: a.name, generation: a.generation } })).toEqual(
			live,
		);
		expect(await check({ ...base, endpoint: { kind: "virtual", name, generation: virtual.generation } })).toEqual(live);
		expect(await check({ ...base, endpoint: { kind: "aggregate" } })).toEqual(live);
	});

	it("refuses every endpoint kind once the key is revoked", async () => {
		const a = await putServer();
		const key = await createKey();
		await admin("DELETE", `/keys/${key.id}`);
		const result = await check({
			keyId: key.id,
			userPath: key.userPath,
			endpoint: { kind: "server", name: a.name, generation: a.generation },
		});
		expect(result).toEqual({ ok: false, reason: "the API key was revoked" });
		const name = uniqueName("vs");
		const virtual = await putVirtual(name, { servers: [a.name] });
		const endpoint = { kind: "virtual", name, generation: virtual.generation } as const;
		expect(await check({ keyId: key.id, userPath: key.userPath, endpoint })).toMatchObject({ ok: false });
		expect(await check({ keyId: key.id, userPath: key.userPath, endpoint: { kind: "aggregate" } })).toMatchObject({
			ok: false,
		});
	});

	it("refuses a session whose user path differs from the key's", async () => {
		const key = await createKey({ userPath: "/team/a" });
		const result = await check({ keyId: key.id, userPath: "/team/b", endpoint: { kind: "aggregate" } });
		expect(result).toMatchObject({ ok: false, reason: expect.stringMatching(/user path/) });
	});

	it("refuses a server session after the server was deleted and created again", async () => {
		const a = await putServer();
		const key = await createKey();
		await admin("DELETE", `/servers/${a.name}`);
		const endpoint = { kind: "server", name: a.name, generation: a.generation } as const;
		expect(await check({ keyId: key.id, userPath: key.userPath, endpoint })).toEqual({
			ok: false,
			reason: `server '${a.name}' was deleted or recreated`,
		});
		const recreated = await putServer(a.name);
		expect(recreated.generation).not.toBe(a.generation);
		expect(await check({ keyId: key.id, userPath: key.userPath, endpoint })).toMatchObject({ ok: false });
	});

	it("refuses a server session for a key limited to other servers", async () => {
		const a = await putServer();
		const key = await createKey({ servers: [(await putServer()).name] });
		const result = await check({
			keyId: key.id,
			userPath: key.userPath,
			endpoint: { kind: "server", name: a.name, generation: a.generation },
		});
		expect(result).toMatchObject({ ok: false, reason: expect.stringMatching(new RegExp(`server '${a.name}'`)) });
	});

	it("refuses a virtual server session after the virtual server was deleted and created again", async () => {
		const a = await putServer();
		const name = uniqueName("vs");
		const first = await putVirtual(name, { servers: [a.name] });
		const key = await createKey();
		await admin("DELETE", `/virtual-servers/${name}`);
		await putVirtual(name, { servers: [a.name] });
		const result = await check({
			keyId: key.id,
			userPath: key.userPath,
			endpoint: { kind: "virtual", name, generation: first.generation },
		});
		expect(result).toEqual({ ok: false, reason: `virtual server '${name}' was deleted or recreated` });
	});

	it("refuses a virtual server session for a user path it does not allow", async () => {
		const a = await putServer();
		const name = uniqueName("vs");
		const virtual = await putVirtual(name, { servers: [a.name], userPaths: ["/team"] });
		const key = await createKey({ userPath: "/teamx" });
		const result = await check({
			keyId: key.id,
			userPath: "/teamx",
			endpoint: { kind: "virtual", name, generation: virtual.generation },
		});
		expect(result).toEqual({ ok: false, reason: `user path '/teamx' may not use virtual server '${name}'` });
	});

	it("refuses a virtual server session for a key that may not use every member", async () => {
		const a = await putServer();
		const b = await putServer();
		const name = uniqueName("vs");
		const virtual = await putVirtual(name, { servers: [a.name, b.name] });
		const key = await createKey({ servers: [a.name] });
		const result = await check({
			keyId: key.id,
			userPath: key.userPath,
			endpoint: { kind: "virtual", name, generation: virtual.generation },
		});
		expect(result).toMatchObject({ ok: false, reason: expect.stringContaining(`'${b.name}'`) });
	});

	it("counts exactly one read per call, whatever the endpoint kind and outcome", async () => {
		const a = await putServer();
		const name = uniqueName("vs");
		const virtual = await putVirtual(name, { servers: [a.name] });
		const key = await createKey();
		const stub = registry();
		const inputs: SessionCheckInput[] = [
			{ keyId: key.id, userPath: key.userPath, endpoint: { kind: "server", name: a.name, generation: a.generation } },
			{ keyId: key.id, userPath: key.userPath, endpoint: { kind: "virtual", name, generation: virtual.generation } },
			{ keyId: key.id, userPath: key.userPath, endpoint: { kind: "aggregate" } },
			{ keyId: "key_missing", userPath: "/", endpoint: { kind: "aggregate" } },
		];
		for (const input of inputs) {
			const before = await readsOf(stub);
			await stub.checkSession(input);
			expect(await readsOf(stub)).toBe(before + 1);
		}
	});
});

describe("userPathAllowed", () => {
	it("allows every user path when the list is null", () => {
		expect(userPathAllowed("/", null)).toBe(true);
		expect(userPathAllowed("/any/where", null)).toBe(true);
	});

	it("allows an entry itself and paths below it, segment by segment", () => {
		expect(userPathAllowed("/team", ["/team"])).toBe(true);
		expect(userPathAllowed("/team/a", ["/team"])).toBe(true);
		expect(userPathAllowed("/team/a/b", ["/team"])).toBe(true);
		expect(userPathAllowed("/teamx", ["/team"])).toBe(false);
		expect(userPathAllowed("/", ["/team"])).toBe(false);
		expect(userPathAllowed("/other", ["/team"])).toBe(false);
	});

	it("allows every user path under the root entry", () => {
		expect(userPathAllowed("/", ["/"])).toBe(true);
		expect(userPathAllowed("/team/a", ["/"])).toBe(true);
	});

	it("allows a path matching any one of several entries", () => {
		expect(userPathAllowed("/ops/x", ["/team", "/ops"])).toBe(true);
		expect(userPathAllowed("/sales", ["/team", "/ops"])).toBe(false);
	});
});

describe("keyMayUseVirtualServer", () => {
	it("requires an allowed user path, and the virtual server's own name or every member", () => {
		const virtualServer = { name: "tools", servers: ["a", "b"], userPaths: ["/team"] };
		expect(keyMayUseVirtualServer({ userPath: "/team/x", servers: null }, virtualServer)).toBe(true);
		expect(keyMayUseVirtualServer({ userPath: "/team/x", servers: ["a", "b", "c"] }, virtualServer)).toBe(true);
		expect(keyMayUseVirtualServer({ userPath: "/team/x", servers: ["a"] }, virtualServer)).toBe(false);
		expect(keyMayUseVirtualServer({ userPath: "/team/x", servers: ["tools"] }, virtualServer)).toBe(true);
		expect(keyMayUseVirtualServer({ userPath: "/ops", servers: null }, virtualServer)).toBe(false);
		expect(keyMayUseVirtualServer({ userPath: "/ops", servers: ["tools"] }, virtualServer)).toBe(false);
	});
});

describe("a key limited to a virtual server", () => {
	/** A virtual server of two beta members, and a key that names only the virtual server. */
	async function limitedKey() {
		const a = await putServer();
		const b = await putServer();
		const name = uniqueName("vs");
		const virtual = await putVirtual(name, { servers: [a.name, b.name] });
		const key = await createKey({ servers: [name] });
		return { a, b, name, virtual, key };
	}

	const toolsList = { jsonrpc: "2.0", id: 2, method: "tools/list" };
	const PING = { jsonrpc: "2.0", id: 3, method: "ping" };
	/** The test Worker's recheck interval (RECHECK_INTERVAL_SECONDS' default). */
	const RECHECK = 30_000;

	it("reaches the virtual server's endpoint, with every member's tools", async () => {
		const { a, b, name, key } = await limitedKey();
		const sessionId = await openSession(`/mcp/${name}`, key.key);
		const reply = await readReply(await rpc(`/mcp/${name}`, key.key, sessionId, toolsList));
		const tools = ((reply.result?.tools ?? []) as Array<{ name: string }>).map((tool) => tool.name);
		expect(tools).toContain(`${a.name}__echo`);
		expect(tools).toContain(`${b.name}__echo`);
	});

	it("reaches nothing else: its members at /mcp/<member> and /mcp are 404 in both eras, and open no session", async () => {
		const { a, b, key } = await limitedKey();
		for (const path of [`/mcp/${a.name}`, `/mcp/${b.name}`, "/mcp"]) {
			const legacy = await postInitialize(path, key.key);
			expect(legacy.status).toBe(404);
			expect(legacy.headers.get("mcp-session-id")).toBeNull();
			expect((await readReply(legacy)).error?.data?.kind).toBe("not_found");
			const modern = await modernPost(path, key.key, { id: 1, method: "tools/list", params: { _meta: ENVELOPE } });
			expect(modern.status).toBe(404);
			expect((await readReply(modern)).error?.data?.kind).toBe("not_found");
		}
	});

	it("its session goes on while the members are the virtual server's, and ends at the recheck after one is removed from it", async () => {
		const { a, name, key } = await limitedKey();
		const path = `/mcp/${name}`;
		const sessionId = await openSession(path, key.key);
		const { clock } = await instrumentSession(sessionId);
		clock.advance(RECHECK);
		expect((await readReply(await rpc(path, key.key, sessionId, PING))).result).toEqual({});
		await putVirtual(name, { servers: [a.name] });
		clock.advance(RECHECK);
		expect((await rpc(path, key.key, sessionId, PING)).status).toBe(404);
	});

	it("once the virtual server is deleted the key reaches nothing, and its session ends at the recheck even when the virtual server is made again", async () => {
		const { a, b, name, virtual, key } = await limitedKey();
		const path = `/mcp/${name}`;
		const sessionId = await openSession(path, key.key);
		const { clock } = await instrumentSession(sessionId);
		expect((await admin("DELETE", `/virtual-servers/${name}`)).status).toBe(204);
		for (const where of [path, `/mcp/${a.name}`, "/mcp"])
			expect((await postInitialize(where, key.key)).status).toBe(404);

		// Made again under the same name: a new incarnation, which the key's list still names, so new
		// sessions open there; the old session does not resume on it.
		const again = await putVirtual(name, { servers: [a.name, b.name] });
		expect(again.generation).not.toBe(virtual.generation);
		clock.advance(RECHECK);
		expect((await rpc(path, key.key, sessionId, PING)).status).toBe(404);
		await expect(openSession(path, key.key)).resolves.toMatch(/^gw1\./);
	});
});
