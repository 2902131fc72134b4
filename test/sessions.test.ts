import { createExecutionContext, env, listDurableObjectIds, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../src/edge/app.ts";
import type { SessionDO } from "../src/session/session-do.ts";
import { countingEnv } from "./support/counting-env.ts";
import {
	BASE,
	createKey,
	gatewayFetch,
	initializeBody,
	mcpHeaders,
	openSession,
	readReply,
	rpc,
} from "./support/gateway.ts";
import { sessionObject, upstreamSessionId } from "./support/session-object.ts";
import { registerServer, upstreamSessionLog } from "./support/upstreams.ts";

const TOOLS_LIST = { jsonrpc: "2.0", id: 2, method: "tools/list" };

async function setup() {
	const server = await registerServer("alpha");
	const path = `/mcp/${server}`;
	const owner = await createKey();
	const sessionId = await openSession(path, owner.key);
	return { server, path, owner, sessionId };
}

/**
 * The ID with one character in the middle of one of its parts (1: the random
 * part, 2: the MAC) changed. Never the MAC's last character: it carries two
 * unused bits, so changing it can spell the same MAC differently.
 */
function tamper(sessionId: string, part: 1 | 2): string {
	const parts = sessionId.split(".");
	const text = parts[part] ?? "";
	const middle = Math.floor(text.length / 2);
	parts[part] = text.slice(0, middle) + (text[middle] === "A" ? "B" : "A") + text.slice(middle + 1);
	return parts.join(".");
}

async function stillWorks(path: string, key: string, sessionId: string): Promise<boolean> {
	const response = await rpc(path, key, sessionId, TOOLS_LIST);
	return response.status === 200 && (await readReply(response)).result !== undefined;
}

describe("session IDs", () => {
	it("initialize mints a visible-ASCII session ID with at least 128 random bits and a MAC", async () => {
		const { sessionId } = await setup();
		expect(sessionId).toMatch(/^[\x21-\x7e]+$/);
		const [, random, mac] = sessionId.split(".");
		expect((random ?? "").length * 6).toBeGreaterThanOrEqual(128);
		expect((mac ?? "").length).toBeGreaterThanOrEqual(43);
	});

	it("later requests with the ID reach the same Durable Object", async () => {
		const { path, owner, sessionId } = await setup();
		for (let i = 0; i < 3; i++) expect(await stillWorks(path, owner.key, sessionId)).toBe(true);
		const stub = await sessionObject(sessionId);
		const bound = await runInDurableObject(stub, async (instance: SessionDO) => instance.store.readBinding());
		expect(bound?.keyId).toBe(owner.id);
	});

	it("a forged or malformed ID gets 404 from the Worker without waking a Durable Object", async () => {
		const { path, owner, sessionId } = await setup();
		const forgedRandom = tamper(sessionId, 1);
		const forgedMac = tamper(sessionId, 2);
		expect(forgedRandom).not.toBe(sessionId);
		expect(forgedMac).not.toBe(sessionId);
		// The edge as it runs, its bindings counted: any call on a Durable Object stub wakes that object.
		const app = createApp();
		const { counts, env: counted } = countingEnv();
		for (const bad of [forgedRandom, forgedMac, "not-a-session", `${sessionId}x`, "gw1.short.mac"]) {
			const request = new Request(`${BASE}${path}`, {
				method: "POST",
				headers: mcpHeaders(owner.key, bad),
				body: JSON.stringify(TOOLS_LIST),
			});
			const response = await app.fetch(request, counted, createExecutionContext());
			expect(response.status).toBe(404);
			expect((await readReply(response)).error?.data?.kind).toBe("session_not_found");
		}
		expect(counts.durableObjectCalls).toBe(0);
		expect(counts.durableObjects).toBe(0);
	});

	it("a non-initialize request without a session ID gets 400", async () => {
		const { path, owner } = await setup();
		const response = await gatewayFetch(path, {
			method: "POST",
			headers: mcpHeaders(owner.key),
			body: JSON.stringify(TOOLS_LIST),
		});
		expect(response.status).toBe(400);
		expect((await readReply(response)).error?.message).toMatch(/Mcp-Session-Id/);
	});

	it("an initialize that carries a session ID gets 400 and opens nothing", async () => {
		const { path, owner, sessionId } = await setup();
		const before = (await listDurableObjectIds(env.SESSIONS)).length;
		const { counts, env: counted } = countingEnv();
		const request = new Request(`${BASE}${path}`, {
			method: "POST",
			headers: mcpHeaders(owner.key, sessionId),
			body: JSON.stringify(initializeBody()),
		});
		const response = await createApp().fetch(request, counted, createExecutionContext());
		expect(response.status).toBe(400);
		expect(response.headers.get("mcp-session-id")).toBeNull();
		// Nothing woken (no call on any object's stub), and so nothing persisted either.
		expect(counts.durableObjectCalls).toBe(0);
		expect((await listDurableObjectIds(env.SESSIONS)).length).toBe(before);
	});
});

describe("a session belongs to its key, user path and endpoint", () => {
	it("another key gets 404 on POST, GET and DELETE, and the session still works for its owner", async () => {
		const { path, owner, sessionId } = await setup();
		const other = await createKey();
		expect((await rpc(path, other.key, sessionId, TOOLS_LIST)).status).toBe(404);
		expect(
			(
				await gatewayFetch(path, {
					method: "GET",
					headers: mcpHeaders(other.key, sessionId, { accept: "text/event-stream" }),
				})
			).status,
		).toBe(404);
		expect((await gatewayFetch(path, { method: "DELETE", headers: mcpHeaders(other.key, sessionId) })).status).toBe(
			404,
		);
		expect(await stillWorks(path, owner.key, sessionId)).toBe(true);
	});

	it("a key with another user path gets 404", async () => {
		const { path, owner, sessionId } = await setup();
		const sibling = await createKey({ userPath: "/other/team" });
		expect((await rpc(path, sibling.key, sessionId, TOOLS_LIST)).status).toBe(404);
		expect(await stillWorks(path, owner.key, sessionId)).toBe(true);
	});

	it("the same ID on another endpoint gets 404", async () => {
		const { path, owner, sessionId } = await setup();
		const otherServer = await registerServer("beta");
		expect((await rpc(`/mcp/${otherServer}`, owner.key, sessionId, TOOLS_LIST)).status).toBe(404);
		expect(
			(await gatewayFetch(`/mcp/${otherServer}`, { method: "DELETE", headers: mcpHeaders(owner.key, sessionId) }))
				.status,
		).toBe(404);
		expect(await stillWorks(path, owner.key, sessionId)).toBe(true);
	});

	it("a rejected request writes nothing to the session's storage", async () => {
		const { path, sessionId } = await setup();
		const stub = await sessionObject(sessionId);
		const writes = await runInDurableObject(stub, (instance: SessionDO) => instance.store.writes);
		const other = await createKey();
		expect((await rpc(path, other.key, sessionId, TOOLS_LIST)).status).toBe(404);
		const listen = mcpHeaders(other.key, sessionId, { accept: "text/event-stream" });
		expect((await gatewayFetch(path, { method: "GET", headers: listen })).status).toBe(404);
		expect((await gatewayFetch(path, { method: "DELETE", headers: mcpHeaders(other.key, sessionId) })).status).toBe(
			404,
		);
		expect(await runInDurableObject(stub, (instance: SessionDO) => instance.store.writes)).toBe(writes);
	});
});

describe("session storage", () => {
	it("holds the key id and binding but never the raw session ID", async () => {
		const { owner, sessionId, server } = await setup();
		const stub = await sessionObject(sessionId);
		const stored = await runInDurableObject(stub, async (_instance: SessionDO, state) =>
			JSON.stringify([...(await state.storage.list()).entries()]),
		);
		expect(stored).toContain(owner.id);
		expect(stored).toContain(server);
		expect(stored).not.toContain(sessionId);
		// Nor either secret part of it: the random bits or the MAC.
		for (const part of sessionId.split(".").slice(1)) expect(stored).not.toContain(part);
	});
});

describe("DELETE", () => {
	it("ends the session with 204, deletes the upstream session, clears storage; afterwards 404", async () => {
		const { server, path, owner, sessionId } = await setup();
		const stub = await sessionObject(sessionId);
		const upstreamSession = await upstreamSessionId(sessionId, server);
		const response = await gatewayFetch(path, { method: "DELETE", headers: mcpHeaders(owner.key, sessionId) });
		expect(response.status).toBe(204);
		const deletes = (await upstreamSessionLog("alpha", upstreamSession)).filter((entry) => entry.method === "DELETE");
		expect(deletes).toHaveLength(1);
		const keys = await runInDurableObject(stub, async (_instance: SessionDO, state) => [
			...(await state.storage.list()).keys(),
		]);
		expect(keys).toEqual([]);
		expect(await runInDurableObject(stub, async (_instance: SessionDO, state) => state.storage.getAlarm())).toBeNull();
		expect((await rpc(path, owner.key, sessionId, TOOLS_LIST)).status).toBe(404);
		expect((await gatewayFetch(path, { method: "DELETE", headers: mcpHeaders(owner.key, sessionId) })).status).toBe(
			404,
		);
	});
});

describe("MCP-Protocol-Version", () => {
	for (const version of ["2024-01-01", "banana"]) {
		it(`an unsupported version (${version}) gets 400 on POST and DELETE and the session stays intact`, async () => {
			const { path, owner, sessionId } = await setup();
			const post = await rpc(path, owner.key, sessionId, TOOLS_LIST, { "mcp-protocol-version": version });
			expect(post.status).toBe(400);
			expect((await readReply(post)).error?.data?.kind).toBe("unsupported_protocol_version");
			const del = await gatewayFetch(path, {
				method: "DELETE",
				headers: mcpHeaders(owner.key, sessionId, { "mcp-protocol-version": version }),
			});
			expect(del.status).toBe(400);
			expect(await stillWorks(path, owner.key, sessionId)).toBe(true);
			const other = await createKey();
			expect((await rpc(path, other.key, sessionId, TOOLS_LIST)).status).toBe(404);
		});
	}

	it("a request without MCP-Protocol-Version is accepted", async () => {
		const { path, owner, sessionId } = await setup();
		const response = await gatewayFetch(path, {
			method: "POST",
			headers: mcpHeaders(owner.key, sessionId),
			body: JSON.stringify(TOOLS_LIST),
		});
		expect(response.status).toBe(200);
	});

	it("a 2025-shaped request under a 2026-07-28 header is 400 -32602 (the envelope is missing), under 2099-01-01 400 -32022 (unknown version); DELETE with either is 405; the session is untouched", async () => {
		const { path, owner, sessionId } = await setup();
		for (const [version, code] of [
			["2026-07-28", -32602],
			["2099-01-01", -32022],
		] as const) {
			const refused = await rpc(path, owner.key, sessionId, TOOLS_LIST, { "mcp-protocol-version": version });
			expect(refused.status).toBe(400);
			expect((await readReply(refused)).error?.code).toBe(code);
		}
		for (const version of ["2026-07-28", "2099-01-01"]) {
			const del = await gatewayFetch(path, {
				method: "DELETE",
				headers: mcpHeaders(owner.key, sessionId, { "mcp-protocol-version": version }),
			});
			expect(del.status, version).toBe(405);
			expect(del.headers.get("allow"), version).toBe("POST");
			expect((await rpc(path, owner.key, sessionId, TOOLS_LIST)).status, version).toBe(200);
		}
	});

	it("every version in the SDK's SUPPORTED_PROTOCOL_VERSIONS is accepted", async () => {
		const { SUPPORTED_PROTOCOL_VERSIONS } = await import("@modelcontextprotocol/sdk/types.js");
		const { path, owner, sessionId } = await setup();
		for (const version of SUPPORTED_PROTOCOL_VERSIONS) {
			expect((await rpc(path, owner.key, sessionId, TOOLS_LIST, { "mcp-protocol-version": version })).status).toBe(200);
		}
	});
});
