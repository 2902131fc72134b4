import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import type { InitializeRequest, JSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { mintSessionId } from "../src/edge/2025-11-25/session-id.ts";
import { REGISTRY_NAME } from "../src/registry/registry-do.ts";
import type { OpenSessionInput, SessionDO } from "../src/session/session-do.ts";
import { eventually } from "./support/eventually.ts";
import {
	admin,
	createKey,
	exchange,
	gatewayFetch,
	initializeBody,
	mcpHeaders,
	openSession,
	rpc,
	uniqueName,
} from "./support/gateway.ts";
import { parsedMessage } from "./support/messages.ts";
import { instrumentSession, sessionObject, upstreamSessionId } from "./support/session-object.ts";
import { registerServer, upstreamGate, upstreamSessionLog } from "./support/upstreams.ts";

const SECOND = 1_000;
const RECHECK = 30 * SECOND;
const TOUCH = 60 * SECOND;
const LIMIT = 300 * SECOND;
const IDLE = 30 * 60 * SECOND;
const PING = { jsonrpc: "2.0", id: 1, method: "ping" };

async function transparentSession() {
	const server = await registerServer("alpha");
	const path = `/mcp/${server}`;
	const owner = await createKey();
	const sessionId = await openSession(path, owner.key);
	const instruments = await instrumentSession(sessionId);
	const send = (message: unknown = PING) => exchange(path, owner.key, sessionId, message);
	return { server, path, owner, sessionId, send, ...instruments };
}

/**
 * Starts a call that waits at a gate of the upstream; resolves once the call
 * is there, with its reply to come when the test releases the gate.
 */
async function startLongCall(path: string, key: string, sessionId: string) {
	const gate = upstreamGate("alpha");
	const reply = exchange(path, key, sessionId, gate.call(9));
	await gate.arrived();
	return { gate, reply };
}

describe("recheck cost", () => {
	it("eight concurrent requests with a recheck due cause exactly 1 registry read and 1 storage write, and the other seven finish while the one recheck is held open", async () => {
		const { clock, registry, writes, send } = await transparentSession();
		const before = await writes();
		registry.hold();
		clock.advance(TOUCH + SECOND); // a touch and a recheck are both due
		let finished = 0;
		const requests = Array.from({ length: 8 }, (_, i) =>
			send({ jsonrpc: "2.0", id: i, method: "ping" }).then((reply) => {
				finished++;
				return reply;
			}),
		);
		await eventually(() => finished === 7, "seven of the eight requests finished");
		expect(registry.reads).toBe(1);
		registry.open();
		const replies = await Promise.all(requests);
		expect(replies.map((reply) => reply.status)).toEqual(Array(8).fill(200));
		expect(registry.reads).toBe(1);
		expect((await writes()) - before).toBe(1);
	});

	it("40 requests spread over 40 s cause one registry read: one per recheck interval", async () => {
		const { clock, registry, send } = await transparentSession();
		for (let i = 0; i < 40; i++) {
			clock.advance(SECOND);
			expect((await send()).status).toBe(200);
		}
		// 40 s of requests: one recheck at 30 s.
		expect(registry.reads).toBe(1);
	});
});

describe("deletion and revocation win", () => {
	it("a revoked key gets 401 at the edge without reaching its session: no recheck runs and its storage is untouched", async () => {
		const { clock, owner, send, stored, registry } = await transparentSession();
		expect((await admin("DELETE", `/keys/${owner.id}`)).status).toBe(204);
		clock.advance(RECHECK);
		// The edge refuses the revoked key outright; the session itself ends at its next recheck (next test).
		expect((await send()).status).toBe(401);
		expect(registry.reads).toBe(0);
		expect(await stored()).toBeGreaterThan(0);
	});

	it("a revoked key's session ends at the recheck even when the edge still knows the key", async () => {
		const { stub, clock, owner, stored } = await transparentSession();
		await admin("DELETE", `/keys/${owner.id}`);
		clock.advance(RECHECK);
		const ended = await runInDurableObject(stub, async (instance: SessionDO) => {
			const response = await instance.post(
				{ keyId: owner.id, userPath: "/", endpoint: (await instance.store.readBinding())?.endpoint ?? "" },
				parsedMessage({ jsonrpc: "2.0", id: 1, method: "ping" }),
			);
			return response.status;
		});
		expect(ended).toBe(404);
		expect(await stored()).toBe(0);
	});

	it("deleting a server ends its sessions; recreating it under the same name does not revive them", async () => {
		const { server, path, owner, clock, send, stored } = await transparentSession();
		expect((await admin("DELETE", `/servers/${server}`)).status).toBe(204);
		await registerServer("alpha", server);
		clock.advance(RECHECK);
		expect((await send()).status).toBe(404);
		expect(await stored()).toBe(0);
		expect((await send()).status).toBe(404);
		const fresh = await openSession(path, owner.key);
		expect((await exchange(path, owner.key, fresh, PING)).status).toBe(200);
	});

	it("deleting and recreating a member server ends the aggregate sessions that use it; a fresh session works", async () => {
		const a = await registerServer("alpha");
		const b = await registerServer("beta");
		const { key } = await createKey({ servers: [a, b] });
		const session = await openSession("/mcp", key);
		const { clock, stored } = await instrumentSession(session);
		expect((await admin("DELETE", `/servers/${b}`)).status).toBe(204);
		await registerServer("beta", b);
		clock.advance(RECHECK);
		expect((await exchange("/mcp", key, session, PING)).status).toBe(404);
		expect(await stored()).toBe(0);
		const fresh = await openSession("/mcp", key);
		expect((await exchange("/mcp", key, fresh, PING)).status).toBe(200);
	});

	it("a virtual server recreated while its delete is in progress keeps the sessions of the new incarnation; sessions opened on the deleted incarnation meanwhile end with it", async () => {
		const member = await registerServer("beta");
		const name = uniqueName("virt");
		const path = `/mcp/${name}`;
		await admin("PUT", `/virtual-servers/${name}`, { servers: [member] });
		const { key, id } = await createKey();
		const old = await openSession(path, key);

		// An edge resolved the endpoint just before the delete and is still opening its session.
		const registry = env.REGISTRY.get(env.REGISTRY.idFromName(REGISTRY_NAME));
		const resolved = await registry.resolveEndpoint(name);
		if (resolved?.kind !== "virtual") throw new Error("expected a virtual server");

		expect((await admin("DELETE", `/virtual-servers/${name}`)).status).toBe(204);
		expect((await admin("PUT", `/virtual-servers/${name}`, { servers: [member] })).status).toBe(201);
		const fresh = await openSession(path, key);

		const meanwhile = await mintSessionId("test-session-secret-0123456789abcdef");
		const stubMeanwhile = await sessionObject(meanwhile);
		const input: OpenSessionInput = {
			scope: { keyId: id, userPath: "/", endpoint: path },
			request: initializeBody() as JSONRPCRequest,
			params: initializeBody().params as InitializeRequest["params"],
			mode: "aggregate",
			endpointCheck: { kind: "virtual", name, generation: resolved.virtualServer.generation },
			members: resolved.members.map(({ name: member, url, headers, timeoutSeconds, generation }) => ({
				name: member,
				url,
				headers,
				timeoutSeconds,
				generation,
			})),
		};
		const opened = await runInDurableObject(stubMeanwhile, (instance: SessionDO) => instance.open(input));
		expect(opened.opened).toBe(true);

		for (const sessionId of [old, fresh, meanwhile]) {
			const { clock } = await instrumentSession(sessionId);
			clock.advance(RECHECK);
		}
		expect((await exchange(path, key, old, PING)).status).toBe(404);
		expect((await exchange(path, key, meanwhile, PING)).status).toBe(404);
		expect((await exchange(path, key, fresh, PING)).status).toBe(200);
	});
});

describe("registry outage", () => {
	it("a registry that fails reads: the session is served for half the unverified limit, ends at the limit, and is not written back when the registry recovers", async () => {
		const { clock, registry, send, stored } = await transparentSession();
		registry.failing = true;
		clock.advance(RECHECK);
		expect((await send()).status).toBe(200);
		clock.advance(LIMIT / 2 - RECHECK);
		expect((await send()).status).toBe(200);
		clock.advance(LIMIT / 2);
		expect((await send()).status).toBe(404);
		expect(await stored()).toBe(0);
		registry.failing = false;
		clock.advance(RECHECK);
		expect((await send()).status).toBe(404);
		expect(await stored()).toBe(0);
	});

	it("the unverified limit counts from the last successful recheck", async () => {
		const { clock, registry, send } = await transparentSession();
		clock.advance(100 * SECOND);
		expect((await send()).status).toBe(200); // verified at 100 s
		registry.failing = true;
		clock.advance(RECHECK);
		expect((await send()).status).toBe(200);
		clock.advance(LIMIT - RECHECK - SECOND); // 399 s: past 300 s from the start, not from 100 s
		expect((await send()).status).toBe(200);
		clock.advance(2 * SECOND);
		expect((await send()).status).toBe(404);
	});

	it("activity while unverified does not extend the session", async () => {
		const { clock, registry, send, writes, stub } = await transparentSession();
		registry.failing = true;
		clock.advance(RECHECK);
		const before = await writes();
		expect((await send()).status).toBe(200); // the recheck fails: unverified from now on
		clock.advance(TOUCH);
		expect((await send()).status).toBe(200);
		// Only the alarm for the limit was written, no touch.
		expect((await writes()) - before).toBe(1);
		const deadline = await runInDurableObject(stub, (instance: SessionDO) => instance.deadline());
		expect(deadline).toBeLessThanOrEqual(clock.time + LIMIT);
	});

	it("a later successful recheck keeps the session: the limit applies to the latest verification", async () => {
		const { stub, clock, registry, send, stored } = await transparentSession();
		const start = clock.time;
		registry.failing = true;
		clock.advance(RECHECK);
		expect((await send()).status).toBe(200); // unverified; the alarm is set for start + limit
		registry.failing = false;
		clock.advance(RECHECK);
		expect((await send()).status).toBe(200); // verified again
		clock.time = start + LIMIT + SECOND;
		await runDurableObjectAlarm(stub);
		expect(await stored()).toBeGreaterThan(0);
		expect((await send()).status).toBe(200);
	});

	it("the unverified limit ends the session also while a call is running: the call ends with an error saying why", async () => {
		const { stub, clock, registry, send, stored, path, owner, sessionId } = await transparentSession();
		registry.failing = true;
		clock.advance(RECHECK);
		expect((await send()).status).toBe(200);
		const { gate, reply: call } = await startLongCall(path, owner.key, sessionId);
		clock.advance(LIMIT);
		await runDurableObjectAlarm(stub);
		expect(await stored()).toBe(0);
		const ended = await call;
		expect(ended.status).toBe(200);
		expect(ended.body).toContain("The session ended while this request was running (unverified for too long)");
		await gate.release();
		expect(await stored()).toBe(0);
		expect((await send()).status).toBe(404);
	});
});

describe("long calls", () => {
	it("a long call keeps the session resumable past the idle timeout; its end restarts the timeout", async () => {
		const { stub, clock, path, owner, sessionId, send, stored } = await transparentSession();
		const { gate, reply: call } = await startLongCall(path, owner.key, sessionId);
		clock.advance(IDLE + 10 * SECOND);
		await runDurableObjectAlarm(stub);
		expect(await stored()).toBeGreaterThan(0);
		expect((await send()).status).toBe(200); // resumable while the call runs
		expect((await gate.status()).waiting).toBe(1);
		await gate.release();
		expect((await call).body).toContain(`gate ${gate.name} passed`);
		const ended = clock.time;
		expect(await runInDurableObject(stub, (instance: SessionDO) => instance.deadline())).toBe(ended + IDLE);
		clock.advance(IDLE - SECOND);
		expect((await send()).status).toBe(200);
	});

	it("a delete during a long call ends the call with an error saying the session ended, and is not undone by it", async () => {
		const { path, owner, sessionId, stored, send } = await transparentSession();
		const { gate, reply: call } = await startLongCall(path, owner.key, sessionId);
		const deleted = await gatewayFetch(path, { method: "DELETE", headers: mcpHeaders(owner.key, sessionId) });
		expect(deleted.status).toBe(204);
		const ended = await call;
		expect(ended.body).toContain("The session ended while this request was running (deleted by the client)");
		await gate.release();
		expect(await stored()).toBe(0);
		expect((await send()).status).toBe(404);
	});
});

describe("listening streams", () => {
	it("DELETE while the client's GET stream is open ends the stream and closes the upstream session at once", async () => {
		const { server, path, owner, sessionId, stored } = await transparentSession();
		const upstreamSession = await upstreamSessionId(sessionId, server);
		const listen = await gatewayFetch(path, {
			method: "GET",
			headers: mcpHeaders(owner.key, sessionId, { accept: "text/event-stream" }),
		});
		expect(listen.status).toBe(200);
		const reading = listen.text();
		expect((await gatewayFetch(path, { method: "DELETE", headers: mcpHeaders(owner.key, sessionId) })).status).toBe(
			204,
		);
		await reading; // the stream ended
		expect(await stored()).toBe(0);
		// Already there when the 204 came: the upstream session was closed at once, not when the stream drained.
		const deletes = (await upstreamSessionLog("alpha", upstreamSession)).filter((entry) => entry.method === "DELETE");
		expect(deletes).toHaveLength(1);
	});

	it("a session with only a GET stream open still expires at the idle timeout, and the stream ends", async () => {
		const { path, owner, sessionId, stub, clock, stored } = await transparentSession();
		const listen = await gatewayFetch(path, {
			method: "GET",
			headers: mcpHeaders(owner.key, sessionId, { accept: "text/event-stream" }),
		});
		const reading = listen.text();
		clock.advance(IDLE + SECOND);
		await runDurableObjectAlarm(stub);
		await reading;
		expect(await stored()).toBe(0);
	});
});

describe("DELETE and protocol versions", () => {
	it("a DELETE with an unsupported MCP-Protocol-Version gets 400 and leaves the session bound, stored, usable and still refused to other keys; a DELETE naming a per-request revision (2099-01-01) is 405 and changes nothing either; a DELETE with 2025-11-25 then succeeds", async () => {
		const { path, owner, sessionId, stored, send } = await transparentSession();
		const bad = await gatewayFetch(path, {
			method: "DELETE",
			headers: mcpHeaders(owner.key, sessionId, { "mcp-protocol-version": "2024-01-01" }),
		});
		expect(bad.status).toBe(400);
		expect(await stored()).toBeGreaterThan(0);
		expect((await send()).status).toBe(200);
		const other = await createKey();
		expect((await rpc(path, other.key, sessionId, PING)).status).toBe(404);
		const modern = await gatewayFetch(path, {
			method: "DELETE",
			headers: mcpHeaders(owner.key, sessionId, { "mcp-protocol-version": "2099-01-01" }),
		});
		expect(modern.status).toBe(405);
		expect(await stored()).toBeGreaterThan(0);
		const good = await gatewayFetch(path, {
			method: "DELETE",
			headers: mcpHeaders(owner.key, sessionId, { "mcp-protocol-version": "2025-11-25" }),
		});
		expect(good.status).toBe(204);
		expect(await stored()).toBe(0);
	});
});
