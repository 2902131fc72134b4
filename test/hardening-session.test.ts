import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { MAX_IN_FLIGHT, type SessionDO } from "../src/session/session-do.ts";
import { ClientStreams, MAX_CLIENT_STREAMS } from "../src/session/streams/client-streams.ts";
import { EventBuffer } from "../src/session/streams/event-buffer.ts";
import { eventually } from "./support/eventually.ts";
import {
	admin,
	createKey,
	gatewayFetch,
	mcpHeaders,
	openSession,
	readReply,
	rpc,
	uniqueName,
} from "./support/gateway.ts";
import { hostileBase, hostileLog, registerHostile } from "./support/hostile.ts";
import { ManualTimers } from "./support/manual-timers.ts";
import { ManualClock, sessionObject, upstreamSessionId } from "./support/session-object.ts";
import { registerServer, upstreamLog, upstreamUrl } from "./support/upstreams.ts";

const SECOND = 1_000;
const RECHECK = 30 * SECOND;
const DAY = 24 * 60 * 60 * SECOND;
const PING = { jsonrpc: "2.0", id: 1, method: "ping" };

/** A session whose Durable Object runs on a manual clock and manual timers. */
async function instrumented(path: string, key: string) {
	const sessionId = await openSession(path, key);
	const stub = await sessionObject(sessionId);
	const clock = new ManualClock(Date.now() + SECOND);
	const timers = new ManualTimers(clock);
	await runInDurableObject(stub, (instance: SessionDO) => {
		instance.clock = clock;
		instance.timers = timers;
	});
	const stored = () => runInDurableObject(stub, async (_i: SessionDO, state) => (await state.storage.list()).size);
	/** Runs the timers that came due, inside the Durable Object (as its own timers would). */
	const runTimers = () => runInDurableObject(stub, () => timers.runDue());
	return { sessionId, stub, clock, timers, stored, runTimers };
}

/** Opens a client GET stream and starts reading it; `ended` resolves when the gateway ends it. */
async function listen(path: string, key: string, sessionId: string) {
	const response = await gatewayFetch(path, {
		headers: mcpHeaders(key, sessionId, { accept: "text/event-stream" }),
	});
	expect(response.status).toBe(200);
	let ended = false;
	let text = "";
	let identified: (id: string) => void = () => {};
	const streamId = new Promise<string>((resolve) => {
		identified = resolve;
	});
	const reader = response.body?.getReader();
	const decoder = new TextDecoder();
	const reading = (async () => {
		for (;;) {
			const chunk = await reader?.read();
			if (!chunk || chunk.done) break;
			text += decoder.decode(chunk.value, { stream: true });
			const id = /^id: ([pg][\w-]{11})-\d+$/m.exec(text)?.[1];
			if (id) identified(id);
		}
		ended = true;
	})().catch(() => {
		ended = true;
	});
	/** The gateway's stream id from the first event (aggregate streams). */
	return { isEnded: () => ended, reading, streamId, text: () => text, close: () => reader?.cancel() };
}

/** A transparent endpoint on the hostile `gated` behaviour: its `wait` tool answers when the test releases it. */
async function gatedServer() {
	const gated = await registerHostile("gated");
	const release = () => fetch(`${hostileBase()}/_release?behaviour=gated&tag=${gated.tag}`, { method: "POST" });
	const waiting = async () =>
		((await (await fetch(`${hostileBase()}/_waiting?behaviour=gated`)).json()) as { waiting: number }).waiting;
	return { ...gated, path: `/mcp/${gated.name}`, release, waiting };
}

describe("client streams are bounded", () => {
	it(`an aggregate session keeps at most ${MAX_CLIENT_STREAMS} listening streams: opening one more ends the oldest`, async () => {
		// An upstream that accepts any number of GET streams (the SDK's server takes one per session).
		const { name: server } = await registerHostile("listen");
		const { key } = await createKey({ servers: [server] });
		const { sessionId, stub } = await instrumented("/mcp", key);
		const streams = [];
		for (let i = 0; i < MAX_CLIENT_STREAMS + 1; i++) streams.push(await listen("/mcp", key, sessionId));
		const ids = await Promise.all(streams.map((stream) => stream.streamId));
		const live = await runInDurableObject(stub, (instance: SessionDO) =>
			ids.map((id) => instance.streams.live(id) !== undefined),
		);
		expect(live).toEqual([false, true, true, true, true]);
		for (const stream of streams) await stream.close();
	});

	it("a client that stops reading is dropped once 1 MiB waits for it; its stream goes on and the rest can be resumed", async () => {
		// A Durable Object of its own, for its real storage.
		const stub = env.SESSIONS.get(env.SESSIONS.newUniqueId());
		const outcome = await runInDurableObject(stub, async (_instance: SessionDO, state) => {
			const buffer = new EventBuffer(
				state.storage,
				{ maxEvents: 1000, maxBytes: 8 * 1024 * 1024, maxAgeMs: 60_000 },
				() => ({ now: () => 0 }),
			);
			buffer.startEmpty();
			const streams = new ClientStreams(buffer, { retryMs: 1000, primes: () => true });
			const stream = await streams.open("g");
			let closed = 0;
			stream.connect(streams.priming(stream), () => closed++);
			const message = {
				jsonrpc: "2.0" as const,
				method: "notifications/message",
				params: { level: "info", data: "x".repeat(64 * 1024) },
			};
			for (let i = 0; i < 40; i++) stream.send(message);
			const resumed = await streams.resume(`${stream.id}-0`);
			return { closed, ended: stream.isEnded, resumedEvents: resumed?.missed.match(/^id: /gm)?.length };
		});
		expect(outcome).toEqual({ closed: 1, ended: false, resumedEvents: 40 });
	});

	it(`a session with ${MAX_IN_FLIGHT} requests running refuses one more with 429, and serves again once they end`, async () => {
		const gated = await gatedServer();
		const { key } = await createKey();
		const sessionId = await openSession(gated.path, key);
		const calls = Array.from({ length: MAX_IN_FLIGHT }, (_, i) =>
			rpc(gated.path, key, sessionId, {
				jsonrpc: "2.0",
				id: 100 + i,
				method: "tools/call",
				params: { name: "wait", arguments: {} },
			}),
		);
		await eventually(
			async () => (await hostileLog(gated.tag)).filter((e) => e.rpcMethod === "tools/call").length >= MAX_IN_FLIGHT,
		);
		const refused = await rpc(gated.path, key, sessionId, PING);
		expect(refused.status).toBe(429);
		expect((await readReply(refused)).error?.data?.kind).toBe("too_many_in_flight");
		await gated.release();
		for (const response of await Promise.all(calls)) expect(response.status).toBe(200);
		expect((await rpc(gated.path, key, sessionId, PING)).status).toBe(200);
	});

	it("a progress token already used by a running request is refused on an aggregate endpoint", async () => {
		const gated = await gatedServer();
		const name = uniqueName("vs");
		await admin("PUT", `/virtual-servers/${name}`, { servers: [gated.name] });
		const path = `/mcp/${name}`;
		const { key } = await createKey();
		const sessionId = await openSession(path, key);
		const call = (id: number) =>
			rpc(path, key, sessionId, {
				jsonrpc: "2.0",
				id,
				method: "tools/call",
				params: { name: `${gated.name}__wait`, arguments: {}, _meta: { progressToken: "shared" } },
			});
		const first = call(1);
		await eventually(async () => (await hostileLog(gated.tag)).some((e) => e.rpcMethod === "tools/call"));
		const second = await readReply(await call(2));
		expect(second.error?.message).toMatch(/progress token is already used by a running request/);
		await gated.release();
		expect((await first).status).toBe(200);
	});
});

describe("edits reach live sessions", () => {
	it("replacing a server's URL: the listening window on the old URL ends at the next recheck, which moves the session to the new URL; the old URL gets nothing more", async () => {
		const name = await registerServer("beta");
		const path = `/mcp/${name}`;
		const { key } = await createKey();
		const { sessionId, clock, stub } = await instrumented(path, key);
		const whoami = async (id: number) => {
			const reply = await readReply(
				await rpc(path, key, sessionId, { jsonrpc: "2.0", id, method: "tools/call", params: { name: "whoami" } }),
			);
			return (reply.result?.content as Array<{ text: string }> | undefined)?.[0]?.text;
		};
		expect(await whoami(1)).toBe("beta");
		const betaSession = await upstreamSessionId(sessionId, name);
		// The next recheck is about a second away: a listening window never lasts past it.
		clock.advance(RECHECK - 2 * SECOND);
		const stream = await listen(path, key, sessionId);
		const replaced = await admin("PUT", `/servers/${name}`, {
			url: upstreamUrl("alpha"),
			headers: { Authorization: "Bearer ${UPSTREAM_ALPHA_TOKEN}" },
		});
		expect(replaced.status).toBe(200);
		// The recheck comes due; the window ends, and the edge's call at its end runs that recheck.
		clock.advance(2 * SECOND);
		await stream.reading;
		expect(stream.isEnded()).toBe(true);
		await eventually(async () => {
			const binding = await runInDurableObject(stub, (instance: SessionDO) => instance.store.readBinding());
			return binding?.members[0]?.url === upstreamUrl("alpha");
		}, "the window's end moving the session to the new URL");
		expect(await whoami(2)).toBe("alpha");
		const alphaSession = await upstreamSessionId(sessionId, name);
		expect(alphaSession).not.toBe(betaSession);
		expect(
			(await upstreamLog("alpha")).some((e) => e.sessionId === alphaSession && e.body?.method === "tools/call"),
		).toBe(true);
		// The old upstream was told nothing more: not even a DELETE carrying the new credentials.
		const afterChange = (await upstreamLog("beta")).filter((e) => e.sessionId === betaSession);
		expect(afterChange.map((e) => e.method)).not.toContain("DELETE");
		expect(afterChange.filter((e) => e.body?.method === "tools/call")).toHaveLength(1);
	});

	it("replacing a server's settings on the same URL: the old upstream session is closed there and a new one opened", async () => {
		const name = await registerServer("alpha");
		const path = `/mcp/${name}`;
		const { key } = await createKey();
		const { sessionId, clock } = await instrumented(path, key);
		expect((await rpc(path, key, sessionId, PING)).status).toBe(200);
		const before = await upstreamSessionId(sessionId, name);
		await admin("PUT", `/servers/${name}`, {
			url: upstreamUrl("alpha"),
			headers: { Authorization: "Bearer ${UPSTREAM_ALPHA_TOKEN}" },
			timeoutSeconds: 30,
		});
		clock.advance(RECHECK);
		expect((await rpc(path, key, sessionId, PING)).status).toBe(200);
		const after = await upstreamSessionId(sessionId, name);
		expect(after).toBeTruthy();
		expect(after).not.toBe(before);
		await eventually(async () =>
			(await upstreamLog("alpha")).some((e) => e.sessionId === before && e.method === "DELETE"),
		);
	});

	it("a session ends at MAX_SESSION_AGE_SECONDS even while a call is running", async () => {
		const gated = await gatedServer();
		const { key } = await createKey();
		const { sessionId, stub, clock, stored } = await instrumented(gated.path, key);
		const call = rpc(gated.path, key, sessionId, {
			jsonrpc: "2.0",
			id: 7,
			method: "tools/call",
			params: { name: "wait", arguments: {} },
		});
		await eventually(async () => (await hostileLog(gated.tag)).some((e) => e.rpcMethod === "tools/call"));
		clock.advance(DAY);
		await runDurableObjectAlarm(stub);
		expect(await stored()).toBe(0);
		const ended = await readReply(await call);
		expect(ended.result?.isError).toBe(true);
		expect(JSON.stringify(ended.result)).toContain("reached its maximum age");
		expect((await rpc(gated.path, key, sessionId, PING)).status).toBe(404);
	});
});

describe("revocation reaches open streams and long calls within one recheck interval", () => {
	for (const kind of ["transparent", "aggregate"] as const) {
		it(`revoking a key: a ${kind} listening window ends at the next recheck time, holding no timer in the object, and that recheck ends the session`, async () => {
			const server = await registerServer("alpha");
			const path = kind === "transparent" ? `/mcp/${server}` : "/mcp";
			const owner = await createKey({ servers: [server] });
			const { sessionId, clock, timers, stored } = await instrumented(path, owner.key);
			clock.advance(RECHECK - 2 * SECOND);
			const stream = await listen(path, owner.key, sessionId);
			expect(timers.count).toBe(0);
			expect((await admin("DELETE", `/keys/${owner.id}`)).status).toBe(204);
			clock.advance(2 * SECOND);
			await stream.reading;
			expect(stream.isEnded()).toBe(true);
			await eventually(async () => (await stored()) === 0, "the session's storage cleared");
		});
	}

	it("revoking a key ends a long call at the next recheck time with an error saying the session ended", async () => {
		const gated = await gatedServer();
		const owner = await createKey();
		const { sessionId, clock, stored, runTimers } = await instrumented(gated.path, owner.key);
		const call = rpc(gated.path, owner.key, sessionId, {
			jsonrpc: "2.0",
			id: 7,
			method: "tools/call",
			params: { name: "wait", arguments: {} },
		});
		await eventually(async () => (await hostileLog(gated.tag)).some((e) => e.rpcMethod === "tools/call"));
		await admin("DELETE", `/keys/${owner.id}`);
		clock.advance(RECHECK);
		expect(await runTimers()).toBe(1);
		const ended = await readReply(await call);
		expect(ended.result?.isError).toBe(true);
		expect(JSON.stringify(ended.result)).toContain("the API key was revoked");
		await eventually(async () => (await stored()) === 0, "the session's storage cleared");
	});

	it("an idle session sets no recheck timer, so it costs nothing between requests", async () => {
		const server = await registerServer("beta");
		const path = `/mcp/${server}`;
		const { key } = await createKey();
		const { sessionId, timers } = await instrumented(path, key);
		expect((await readReply(await rpc(path, key, sessionId, PING))).result).toEqual({});
		expect(timers.count).toBe(0);
	});
});
