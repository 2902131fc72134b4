import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionDO } from "../src/session/session-do.ts";
import { createKey, openSession, readReply, rpc } from "./support/gateway.ts";
import { ManualClock, sessionObject, upstreamSessionId } from "./support/session-object.ts";
import { registerServer, upstreamGate, upstreamSessionLog } from "./support/upstreams.ts";

const MINUTE = 60_000;
const IDLE = 30 * MINUTE;
const TOUCH = MINUTE;
const PING = { jsonrpc: "2.0", id: 1, method: "ping" };

/** Opens a session and gives its SessionDO a manual clock. */
async function openWithClock() {
	const server = await registerServer("alpha");
	const path = `/mcp/${server}`;
	const { key } = await createKey();
	const sessionId = await openSession(path, key);
	const stub = await sessionObject(sessionId);
	const clock = new ManualClock(Date.now() + 1_000);
	await runInDurableObject(stub, (instance: SessionDO) => {
		instance.clock = clock;
	});
	/** Sends a message and reads the whole reply, so the request is over when this resolves. */
	const send = async (message: unknown = PING) => {
		const response = await rpc(path, key, sessionId, message);
		const body = await response.text();
		return { status: response.status, body };
	};
	const writes = () => runInDurableObject(stub, (instance: SessionDO) => instance.store.writes);
	const stored = () =>
		runInDurableObject(stub, async (_instance: SessionDO, state) => (await state.storage.list()).size);
	return { server, path, key, sessionId, stub, clock, send, writes, stored };
}

describe("alarm-driven idle expiry", () => {
	it("a session expires one idle timeout after its last activity, not before", async () => {
		const { stub, clock, send, stored } = await openWithClock();
		clock.advance(10 * MINUTE);
		expect((await send()).status).toBe(200);

		clock.advance(IDLE - 1);
		await runDurableObjectAlarm(stub);
		expect(await stored()).toBeGreaterThan(0);
		expect(await runInDurableObject(stub, (instance: SessionDO) => instance.deadline())).toBe(clock.time + 1);

		clock.advance(1);
		expect(await runDurableObjectAlarm(stub)).toBe(true);
		expect(await stored()).toBe(0);
		const response = await send();
		expect(response.status).toBe(404);
		expect(response.body).toContain("session_not_found");
	});

	it("expiry deletes the upstream session (best effort) and all storage", async () => {
		const { server, sessionId, stub, clock, stored } = await openWithClock();
		const upstreamSession = await upstreamSessionId(sessionId, server);
		clock.advance(IDLE + 1);
		await runDurableObjectAlarm(stub);
		expect(await stored()).toBe(0);
		expect(await runInDurableObject(stub, async (_instance: SessionDO, state) => state.storage.getAlarm())).toBeNull();
		const deletes = (await upstreamSessionLog("alpha", upstreamSession)).filter((entry) => entry.method === "DELETE");
		expect(deletes).toHaveLength(1);
	});

	it("activity within a touch interval writes nothing; a touch after it writes once", async () => {
		const { clock, send, writes } = await openWithClock();
		clock.advance(TOUCH); // the first request after opening is due a touch
		expect((await send()).status).toBe(200);
		const base = await writes();
		for (let i = 0; i < 10; i++) {
			clock.advance(TOUCH / 20);
			expect((await send()).status).toBe(200);
		}
		expect(await writes()).toBe(base);
		clock.advance(TOUCH);
		expect((await send()).status).toBe(200);
		expect(await writes()).toBe(base + 1);
	});

	it("100 requests within one touch interval cause at most one storage write", async () => {
		const { clock, send, writes } = await openWithClock();
		const before = await writes();
		const responses = await Promise.all(
			Array.from({ length: 100 }, (_, i) => {
				clock.advance(i === 0 ? TOUCH : 100);
				return send({ jsonrpc: "2.0", id: i, method: "ping" });
			}),
		);
		expect(responses.every((response) => response.status === 200)).toBe(true);
		expect((await writes()) - before).toBeLessThanOrEqual(1);
	});

	it("a request in flight pauses expiry, and its end restarts the idle clock", async () => {
		const { stub, clock, send, stored } = await openWithClock();
		const gate = upstreamGate("alpha");
		const call = send(gate.call(9));
		await gate.arrived();
		clock.advance(IDLE * 2);
		await runDurableObjectAlarm(stub);
		expect(await stored()).toBeGreaterThan(0);

		await gate.release();
		const response = await call;
		expect(response.body).toContain(`gate ${gate.name} passed`);
		const ended = clock.time;
		clock.advance(IDLE - 1);
		await runDurableObjectAlarm(stub);
		expect(await stored()).toBeGreaterThan(0);
		expect(await runInDurableObject(stub, (instance: SessionDO) => instance.deadline())).toBe(ended + IDLE);
		clock.advance(1);
		await runDurableObjectAlarm(stub);
		expect(await stored()).toBe(0);
	});

	it("a Durable Object evicted mid-session carries on from storage", async () => {
		const { stub, path, key, sessionId } = await openWithClock();
		const listed = await rpc(path, key, sessionId, { jsonrpc: "2.0", id: 1, method: "tools/list" });
		expect((await readReply(listed)).result).toBeDefined();
		await evictDurableObject(stub);
		const response = await rpc(path, key, sessionId, {
			jsonrpc: "2.0",
			id: 2,
			method: "tools/call",
			params: { name: "echo", arguments: { text: "still here" } },
		});
		expect((await readReply(response)).result).toEqual({ content: [{ type: "text", text: "still here" }] });
		const reads = await runInDurableObject(stub, (instance: SessionDO) => instance.store.reads);
		expect(reads).toBe(1);
	});

	it("an evicted session is never expired early: unwritten activity is assumed up to one touch interval", async () => {
		const { stub, path, key, sessionId } = await openWithClock();
		await evictDurableObject(stub);
		const clock = new ManualClock(Date.now());
		// Load the binding into a fresh instance with a clock, without any request.
		const deadline = await runInDurableObject(stub, async (instance: SessionDO) => {
			instance.clock = clock;
			await instance.alarm();
			return instance.deadline();
		});
		const stored = await runInDurableObject(stub, async (_i: SessionDO, state) =>
			state.storage.get<{ lastActivity: number }>("binding"),
		);
		expect(deadline).toBe((stored?.lastActivity ?? 0) + TOUCH + IDLE);
		expect((await rpc(path, key, sessionId, PING)).status).toBe(200);
	});
});
