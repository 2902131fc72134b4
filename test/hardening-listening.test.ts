import { env, listDurableObjectIds, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createApp } from "../src/edge/app.ts";
import { listenTime } from "../src/edge/listen-window.ts";
import { systemClock, systemTimers } from "../src/primitives/clock.ts";
import type { SessionDO } from "../src/session/session-do.ts";
import { MAX_OPEN_WINDOWS } from "../src/session/streams/listen-windows.ts";
import { eventually } from "./support/eventually.ts";
import { admin, createKey, gatewayFetch, mcpHeaders, messagesOf, openSession } from "./support/gateway.ts";
import { hostileLog, registerHostile } from "./support/hostile.ts";
import { ManualTimers } from "./support/manual-timers.ts";
import { ENVELOPE, modernRequest } from "./support/modern.ts";
import { ManualClock, sessionObject } from "./support/session-object.ts";

/** The hostile upstream's `retry`: above the gateway's own SSE_RETRY_MS (1 s), so the upstream's is what counts. */
const RETRY = 2_000;
/** How far the clocks move between two looks. */
const STEP = 500;
/** When the upstream's GETs arrive: its retry, then twice as long each time, up to one listening window (25 s). */
const PACED_ARRIVALS = [0, 2_000, 6_000, 14_000, 30_000];

type Stub = DurableObjectStub<SessionDO>;

// The edge's listening streams and the sessions' objects run on one manual clock; edge timers fire by hand.
let clock: ManualClock;
let timers: ManualTimers;
beforeEach(() => {
	clock = new ManualClock(Date.now() + 1_000);
	timers = new ManualTimers(clock);
	listenTime.clock = clock;
	listenTime.timers = timers;
});
afterEach(() => {
	listenTime.clock = systemClock;
	listenTime.timers = systemTimers;
});

/** Reads a response body as a client would, to its end or until cancelled, keeping the text. */
function reading(body: ReadableStream<Uint8Array> | null) {
	const reader = (body as ReadableStream<Uint8Array>).getReader();
	const decoder = new TextDecoder();
	let text = "";
	let ended = false;
	const done = (async () => {
		for (;;) {
			const chunk = await reader.read();
			if (chunk.done) break;
			text += decoder.decode(chunk.value, { stream: true });
		}
	})()
		.catch(() => undefined)
		.finally(() => {
			ended = true;
		});
	return {
		text: () => text,
		messages: () => messagesOf(text, "text/event-stream"),
		ended: () => ended,
		done,
		cancel: () => reader.cancel(),
	};
}

/** A stub whose method calls are counted by name; properties (`id`) read through. */
function countingStub(stub: object, calls: string[]): object {
	return new Proxy(stub, {
		get(target, property) {
			const value: unknown = Reflect.get(target, property);
			if (typeof value !== "function" || typeof property !== "string" || property === "then") return value;
			return (...args: unknown[]) => {
				calls.push(property);
				return Reflect.apply(value, target, args);
			};
		},
	});
}

/** The Worker env (with `overrides`), its SESSIONS namespace counting each call the edge makes on a session's object. */
function countingEnv(overrides: Record<string, unknown> = {}) {
	const calls: string[] = [];
	const sessions = new Proxy(env.SESSIONS, {
		get(target, property) {
			const value: unknown = Reflect.get(target, property);
			if (typeof value !== "function") return value;
			if (property !== "get") return value.bind(target);
			return (...args: unknown[]) => countingStub(Reflect.apply(value, target, args), calls);
		},
	});
	return { env: { ...env, SESSIONS: sessions, ...overrides }, calls };
}

/** A GET stream's request, as a 2025 client sends it. */
function listenGet(path: string, key: string, sessionId: string): Promise<Response> {
	return gatewayFetch(path, { headers: mcpHeaders(key, sessionId, { accept: "text/event-stream" }) });
}

/** A 2026-07-28 `subscriptions/listen` for list changes. */
function subscribe(path: string, key: string): Request {
	return modernRequest(path, key, {
		id: "sub-1",
		method: "subscriptions/listen",
		params: { _meta: ENVELOPE, notifications: { toolsListChanged: true } },
	});
}

/** The session object a request created (2026-07-28 sessions have no id the client sees). */
async function createdBy<T>(request: () => Promise<T>): Promise<{ result: T; stub: Stub }> {
	const known = new Set((await listDurableObjectIds(env.SESSIONS)).map((id) => id.toString()));
	const result = await request();
	const [created] = (await listDurableObjectIds(env.SESSIONS)).filter((id) => !known.has(id.toString()));
	if (!created) throw new Error("no session object was created");
	return { result, stub: env.SESSIONS.get(created) };
}

/** The session's object, on the tests' manual clock; how many windows it counts open; how long a member is paced. */
async function onManualClock(stub: Stub) {
	await runInDurableObject(stub, (instance: SessionDO) => {
		instance.clock = clock;
	});
	return {
		windows: () => runInDurableObject(stub, (instance: SessionDO) => instance.listening.openWindows),
		paced: (server: string) => runInDurableObject(stub, (instance: SessionDO) => instance.listening.paced(server)),
	};
}

async function upstreamGets(tag: string): Promise<number> {
	return (await hostileLog(tag)).filter((entry) => entry.httpMethod === "GET").length;
}

/** A 2026-07-28 listen sent with `fetch` to an upstream whose GET stream ends at once, read by a client. */
async function modernListener(fetch: (request: Request) => Response | Promise<Response>) {
	const upstream = await registerHostile("ends-at-once", { retry: String(RETRY) });
	const key = await createKey({ servers: [upstream.name] });
	const { result: response, stub } = await createdBy(async () => fetch(subscribe(`/mcp/${upstream.name}`, key.key)));
	expect(response.status).toBe(200);
	const session = await onManualClock(stub);
	const client = reading(response.body);
	await eventually(() => client.text().includes("notifications/subscriptions/acknowledged"));
	// Settled: the stream waits on one timer for its next window, and holds none open.
	const settled = async () => client.ended() || (timers.count === 1 && (await session.windows()) === 0);
	await eventually(settled, "the listen waiting for its next window");
	/** Moves the clocks one step, runs what came due, and waits until the stream is settled again. */
	const step = async () => {
		clock.advance(STEP);
		timers.runDue();
		await eventually(settled, "the listen waiting for its next window");
	};
	return { ...upstream, key, client, session, step };
}

describe("a listening stream whose upstream ends it at once is not reopened at once", () => {
	it("a 2026-07-28 listen: upstream GETs ≤ elapsed / retry + 2 (the retry, doubling while the stream keeps ending early), at most three calls to the session's object per window, and none once the client has gone", async () => {
		const app = createApp();
		const counted = countingEnv();
		const listener = await modernListener((request) => app.fetch(request, counted.env));
		const arrivals: number[] = [];
		for (let elapsed = 0; elapsed <= 32_000; elapsed += STEP) {
			const gets = await upstreamGets(listener.tag);
			while (arrivals.length < gets) arrivals.push(elapsed);
			expect(gets).toBeLessThanOrEqual(elapsed / RETRY + 2);
			await listener.step();
		}
		expect(arrivals).toEqual(PACED_ARRIVALS);
		// Per window: a plan answered "wait", the plan of the window, its end; and the listen's own call.
		expect(counted.calls.length).toBeLessThanOrEqual(3 * arrivals.length + 1);

		const logged = (await hostileLog(listener.tag)).length;
		await listener.client.cancel();
		await eventually(async () => timers.count === 0 && (await listener.session.windows()) === 0);
		clock.advance(10 * 60_000);
		expect(timers.runDue()).toBe(0);
		// The whole log of this upstream: nothing at all arrived once the client had gone.
		expect((await hostileLog(listener.tag)).length).toBe(logged);
	});

	it("a 2026-07-28 listen whose client disconnects (its request's signal aborts) opens no further window, even unread", async () => {
		const disconnect = new AbortController();
		const app = createApp();
		const listener = await modernListener((request) =>
			app.fetch(new Request(request, { signal: disconnect.signal }), env),
		);
		const logged = (await hostileLog(listener.tag)).length;
		disconnect.abort();
		await eventually(() => timers.count === 0, "the wait for the next window dropped");
		clock.advance(10 * 60_000);
		expect(timers.runDue()).toBe(0);
		expect(await listener.session.windows()).toBe(0);
		expect((await hostileLog(listener.tag)).length).toBe(logged);
	});

	it("revoking the key ends a 2026-07-28 listen at its next window with an authentication error; the upstream gets no further GET", async () => {
		const listener = await modernListener((request) => createApp().fetch(request, env));
		const gets = await upstreamGets(listener.tag);
		expect((await admin("DELETE", `/keys/${listener.key.id}`)).status).toBe(204);
		await listener.step();
		await listener.step();
		await listener.client.done;
		const last = listener.client.messages().at(-1) as { id?: unknown; error?: { data?: { kind?: string } } };
		expect(last.id).toBe("sub-1");
		expect(last.error?.data?.kind).toBe("unauthenticated");
		expect(await upstreamGets(listener.tag)).toBe(gets);
	});

	it("each window of a 2026-07-28 listen is counted against the key's rate limit, and a key over its limit ends the listen with rate_limited", async () => {
		const asked: string[] = [];
		const limiter = {
			limit: async ({ key }: { key: string }) => {
				asked.push(key);
				return { success: asked.length <= 3 };
			},
		};
		const app = createApp();
		const counted = countingEnv({ KEY_RATE_LIMITER: limiter });
		const listener = await modernListener((request) => app.fetch(request, counted.env));
		for (let i = 0; i < 40 && !listener.client.ended(); i++) await listener.step();
		await listener.client.done;
		const last = listener.client.messages().at(-1) as { id?: unknown; error?: { data?: { kind?: string } } };
		expect(last.id).toBe("sub-1");
		expect(last.error?.data?.kind).toBe("rate_limited");
		// The listen request itself, then every plan of a window after it, asked the limiter once, for this key.
		expect(asked.length).toBe(counted.calls.filter((call) => call === "listen").length);
		expect(new Set(asked)).toEqual(new Set([`key:${listener.key.id}`]));
	});

	it("a 2025 client reconnecting at once to a transparent endpoint: upstream GETs ≤ elapsed / retry + 2; meanwhile its GETs are answered with the retry to wait, and reach nothing", async () => {
		const { name, tag } = await registerHostile("ends-at-once", { retry: String(RETRY) });
		const { key } = await createKey({ servers: [name] });
		const path = `/mcp/${name}`;
		const sessionId = await openSession(path, key);
		await onManualClock(await sessionObject(sessionId));
		const arrivals: number[] = [];
		const retries: number[] = [];
		for (let elapsed = 0; elapsed <= 16_000; elapsed += STEP) {
			const response = await listenGet(path, key, sessionId);
			expect(response.status).toBe(200);
			const text = await response.text();
			const gets = await upstreamGets(tag);
			if (gets > arrivals.length) arrivals.push(elapsed);
			else retries.push(Number(/^retry: (\d+)$/m.exec(text)?.[1]));
			expect(gets).toBeLessThanOrEqual(elapsed / RETRY + 2);
			clock.advance(STEP);
		}
		expect(arrivals).toEqual(PACED_ARRIVALS.slice(0, 4));
		// Each paced answer names the rest of the wait: 1.5 s, 1 s, 0.5 s after the first window, and so on.
		expect(retries.slice(0, 3)).toEqual([1_500, 1_000, 500]);
		expect((await hostileLog(tag)).filter((entry) => entry.httpMethod === "GET").length).toBe(arrivals.length);
	});

	it("an aggregate member whose GET stream ends at once is opened at most elapsed / retry + 2 times, however often the client reconnects", async () => {
		const { name, tag } = await registerHostile("ends-at-once", { retry: String(RETRY) });
		const { key } = await createKey({ servers: [name] });
		const sessionId = await openSession("/mcp", key);
		const session = await onManualClock(await sessionObject(sessionId));
		// Each window is ended by its client; its own end stays on a real timer, as workerd would
		// otherwise take a quiet window held by a manual one for a request that hung.
		listenTime.timers = systemTimers;
		const arrivals: number[] = [];
		for (let elapsed = 0; elapsed <= 16_000; elapsed += STEP) {
			const listened = (await session.paced(name)) === 0;
			const before = await upstreamGets(tag);
			const response = await listenGet("/mcp", key, sessionId);
			expect(response.status).toBe(200);
			const client = reading(response.body);
			await eventually(() => client.text().includes("\n\n"), "the stream's priming");
			// A window that listens to the member: its GET arrives, ends, and the session hears of it.
			if (listened) await eventually(async () => (await upstreamGets(tag)) > before && (await session.paced(name)) > 0);
			await client.cancel();
			await eventually(async () => (await session.windows()) === 0, "the window given back");
			const gets = await upstreamGets(tag);
			expect(gets).toBe(listened ? before + 1 : before);
			if (listened) arrivals.push(elapsed);
			expect(gets).toBeLessThanOrEqual(elapsed / RETRY + 2);
			clock.advance(STEP);
		}
		expect(arrivals).toEqual(PACED_ARRIVALS.slice(0, 4));
	});
});

describe("listening windows are bounded per session", () => {
	it(`a session holds at most ${MAX_OPEN_WINDOWS} listening windows: one more GET gets 429 with Retry-After, and a place comes back when a client leaves`, async () => {
		const { name } = await registerHostile("listen");
		const { key } = await createKey({ servers: [name] });
		const path = `/mcp/${name}`;
		const sessionId = await openSession(path, key);
		const session = await onManualClock(await sessionObject(sessionId));
		const clients: Array<ReturnType<typeof reading>> = [];
		try {
			for (let i = 0; i < MAX_OPEN_WINDOWS; i++) {
				const response = await listenGet(path, key, sessionId);
				expect(response.status).toBe(200);
				clients.push(reading(response.body));
			}
			const refused = await listenGet(path, key, sessionId);
			expect(refused.status).toBe(429);
			expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
			const body = (await refused.json()) as { error: { message: string; data: { kind: string } } };
			expect(body.error.data.kind).toBe("too_many_in_flight");
			expect(body.error.message).toMatch(/listening streams open/);
			await clients[0]?.cancel();
			await eventually(async () => (await session.windows()) === MAX_OPEN_WINDOWS - 1, "the window given back");
			const again = await listenGet(path, key, sessionId);
			expect(again.status).toBe(200);
			clients.push(reading(again.body));
		} finally {
			await Promise.all(clients.map((client) => client.cancel()));
		}
		await eventually(async () => (await session.windows()) === 0, "every window given back");
	});
});
