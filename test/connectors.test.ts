import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { breakText, withBreaks } from "../src/connectors/broken-reply.ts";
import { type ConnectorDO, connectorObject, HELLO_TIMEOUT_MS } from "../src/connectors/connector-do.ts";
import { MAX_FRAME_BYTES, MAX_IN_FLIGHT_PER_CONNECTOR } from "../src/connectors/frames.ts";
import { SlotQueue } from "../src/connectors/slot-queue.ts";
import { connectorUrl, mintConnectorToken } from "../src/registry/connector-tokens.ts";
import { eventually } from "./support/eventually.ts";
import { connectorToken, dial, startConnector } from "./support/fake-connector.ts";
import { admin, connectClient, createKey, postInitialize, uniqueName } from "./support/gateway.ts";
import { ManualTimers } from "./support/manual-timers.ts";
import { ManualClock } from "./support/session-object.ts";
import { registerServer, toolCallsOf, upstreamUrl } from "./support/upstreams.ts";

/** A server reached through connectors (the check skipped: it would find none online yet). */
async function registerConnectorServer(headers: Record<string, string> = {}): Promise<string> {
	const name = uniqueName("conn");
	const response = await admin("PUT", `/servers/${name}?check=false`, { connector: {}, headers });
	if (response.status !== 201 && response.status !== 200) {
		throw new Error(`registering ${name} failed: ${response.status} ${await response.text()}`);
	}
	return name;
}

/** A socket admitted for a new connector server, before anything is said on it; `closed` when the object closes it. */
async function admittedSocket(): Promise<{ ws: WebSocket; closed: Promise<CloseEvent> }> {
	const server = await registerConnectorServer();
	const { token } = await connectorToken(server);
	const response = await dial(server, { authorization: `Bearer ${token}` });
	const ws = response.webSocket;
	if (!ws) throw new Error(`no socket: ${response.status}`);
	ws.accept();
	return { ws, closed: new Promise<CloseEvent>((resolve) => ws.addEventListener("close", resolve)) };
}

/** A connector server with one connector online, serving the beta upstream. */
async function servedServer() {
	const server = await registerConnectorServer();
	const { id, token } = await connectorToken(server);
	const connector = await startConnector(server, token, { upstream: upstreamUrl("beta") });
	return { server, tokenId: id, token, connector };
}

const initializes = (frames: Array<{ body?: string | undefined }>) =>
	frames.filter((frame) => frame.body?.includes('"method":"initialize"')).length;

describe("connectors: carrying calls", () => {
	it("a tools/call through a connector reaches the upstream and answers (2025 client through a session)", async () => {
		const { server, connector } = await servedServer();
		const { key } = await createKey();
		const { client } = await connectClient(`/mcp/${server}`, key);
		const result = await client.callTool({ name: "echo", arguments: { text: "through a connector" } });
		expect(result.content).toEqual([{ type: "text", text: "through a connector" }]);
		expect(connector.requests().some((frame) => frame.body?.includes("through a connector"))).toBe(true);
		await client.close();
	});

	it("progress notifications of a call stream back through the connector before its answer", async () => {
		// alpha answers calls as SSE streams; the server's configured credential travels to it through the connector.
		const server = await registerConnectorServer({ Authorization: "Bearer ${UPSTREAM_ALPHA_TOKEN}" });
		const { token } = await connectorToken(server);
		await startConnector(server, token, { upstream: upstreamUrl("alpha") });
		const { key } = await createKey();
		const { client } = await connectClient(`/mcp/${server}`, key);
		const progress: number[] = [];
		const result = await client.callTool({ name: "progress", arguments: { steps: 3 } }, undefined, {
			onprogress: (update) => progress.push(update.progress),
		});
		expect(progress).toEqual([1, 2, 3]);
		expect(result.content).toEqual([{ type: "text", text: "done in 3 steps" }]);
		await client.close();
	});

	it("with no connector online, an initialize is answered at once with a sentence naming the server", async () => {
		const server = await registerConnectorServer();
		const { key } = await createKey();
		const response = await postInitialize(`/mcp/${server}`, key);
		const text = await response.text();
		expect(text).toContain(`No connector is online for server '${server}'`);
	});

	it("an aggregate leaves out a server with no connector online and says so in its instructions", async () => {
		const offline = await registerConnectorServer();
		const beta = await registerServer("beta");
		const { key } = await createKey({ servers: [offline, beta] });
		const { client } = await connectClient("/mcp", key);
		expect(client.getInstructions()).toContain(`No connector is online for these servers`);
		expect(client.getInstructions()).toContain(offline);
		const tools = (await client.listTools()).tools.map((tool) => tool.name);
		expect(tools).toContain(`${beta}__echo`);
		expect(tools.some((name) => name.startsWith(`${offline}__`))).toBe(false);
		await client.close();
	});

	it("a connector that closes mid-call fails that call at once, saying the connector went away and the call may have run, and the upstream received it once (not replayed)", async () => {
		const server = await registerConnectorServer();
		const { token } = await connectorToken(server);
		const text = uniqueName("sent-once");
		await startConnector(server, token, {
			upstream: upstreamUrl("beta"),
			dieAfterForwarding: (frame) => frame.body?.includes(text) === true,
		});
		const { key } = await createKey();
		const { client } = await connectClient(`/mcp/${server}`, key);
		const result = await client.callTool({ name: "echo", arguments: { text } });
		expect(result.isError).toBe(true);
		expect(JSON.stringify(result.content)).toContain("may or may not have taken effect");
		expect(JSON.stringify(result.content)).toContain("connector went away; the call may have run");
		expect(JSON.stringify(result.content)).toContain("It was not retried");
		expect(await toolCallsOf("beta", "echo", { text })).toHaveLength(1);
		await client.close();
	});

	it("new sessions go to the least busy connector, and keep working when one connector goes", async () => {
		const server = await registerConnectorServer();
		const { token } = await connectorToken(server);
		const first = await startConnector(server, token, { upstream: upstreamUrl("beta") });
		const second = await startConnector(server, token, { upstream: upstreamUrl("beta") });
		const { key } = await createKey();
		const a = await connectClient(`/mcp/${server}`, key);
		const b = await connectClient(`/mcp/${server}`, key);
		expect([initializes(first.requests()), initializes(second.requests())]).toEqual([1, 1]);
		first.close();
		await first.closed;
		await eventually(async () => (await connectorObject(env, server).online()).length === 1, "one connector left");
		const c = await connectClient(`/mcp/${server}`, key);
		const result = await c.client.callTool({ name: "echo", arguments: { text: "still served" } });
		expect(result.content).toEqual([{ type: "text", text: "still served" }]);
		// The session the gone connector held recovers on the other one for a read.
		const tools = await a.client.listTools();
		expect(tools.tools.map((tool) => tool.name)).toContain("echo");
		for (const { client } of [a, b, c]) await client.close();
	});

	it("a session's requests stay on the connector that answered its initialize", async () => {
		const server = await registerConnectorServer();
		const { token } = await connectorToken(server);
		const holder = await startConnector(server, token, { upstream: upstreamUrl("beta") });
		const { key } = await createKey();
		const { client } = await connectClient(`/mcp/${server}`, key);
		const other = await startConnector(server, token, { upstream: upstreamUrl("beta") });
		for (let i = 0; i < 3; i++) await client.callTool({ name: "echo", arguments: { text: `stay ${i}` } });
		expect(holder.requests().filter((frame) => frame.body?.includes("stay "))).toHaveLength(3);
		expect(other.requests()).toHaveLength(0);
		await client.close();
	});

	it("the client's API key never appears in any frame a connector receives", async () => {
		const { server, connector } = await servedServer();
		const { key } = await createKey();
		const { client } = await connectClient(`/mcp/${server}`, key);
		await client.listTools();
		await client.callTool({ name: "echo", arguments: { text: "private" } });
		await client.close();
		expect(connector.received.length).toBeGreaterThan(2);
		for (const frame of connector.received) expect(frame).not.toContain(key);
		for (const request of connector.requests()) {
			expect(request.headers.map(([name]) => name.toLowerCase())).not.toContain("authorization");
		}
	});
});

describe("connectors: admission and operators", () => {
	it("a connector's connection records its token as seen, once, in the token list", async () => {
		const { server, tokenId } = await servedServer();
		const listed = await eventually(async () => {
			const response = await admin("GET", `/servers/${server}/connector-tokens`);
			const { connectorTokens } = (await response.json()) as {
				connectorTokens: Array<{ id: string; lastSeenAt: string | null }>;
			};
			return connectorTokens.find((entry) => entry.id === tokenId && entry.lastSeenAt !== null);
		}, "the token seen");
		expect(Date.parse(listed.lastSeenAt ?? "")).toBeGreaterThan(0);
	});

	it("online() lists a connector with its token, host, version and the sessions it holds", async () => {
		const { server, tokenId, connector } = await servedServer();
		const { key } = await createKey();
		const { client } = await connectClient(`/mcp/${server}`, key);
		const online = await connectorObject(env, server).online();
		expect(online).toEqual([
			expect.objectContaining({ id: connector.id, tokenId, host: "test-host", version: "test", sessions: 1 }),
		]);
		await client.close();
	});

	it("dropToken closes that token's connectors with 4001 and says how many", async () => {
		const { server, tokenId, connector } = await servedServer();
		expect(await connectorObject(env, server).dropToken(tokenId)).toBe(1);
		expect((await connector.closed).code).toBe(4001);
		expect(await connectorObject(env, server).online()).toEqual([]);
	});

	it("the server check reports no connector online, then reached through 1 connector", async () => {
		const server = await registerConnectorServer();
		const before = (await (await admin("GET", `/servers/${server}?check=true`)).json()) as {
			check: { detail: string };
		};
		expect(before.check.detail).toContain("No connector online");
		const { token } = await connectorToken(server);
		await startConnector(server, token, { upstream: upstreamUrl("beta") });
		const after = (await (await admin("GET", `/servers/${server}?check=true`)).json()) as {
			check: { detail: string; reachable: boolean };
		};
		expect(after.check.detail).toContain("Reached through 1 connector.");
		expect(after.check.reachable).toBe(true);
	});

	it("an unknown connector token is refused with 401 and a sentence", async () => {
		const server = await registerConnectorServer();
		const response = await dial(server, { authorization: `Bearer ${mintConnectorToken().token}` });
		expect(response.status).toBe(401);
		expect(await response.text()).toContain(`refused for server '${server}'`);
	});

	it("another server's connector token is refused with 401", async () => {
		const server = await registerConnectorServer();
		const elsewhere = await registerConnectorServer();
		const { token } = await connectorToken(elsewhere);
		expect((await dial(server, { authorization: `Bearer ${token}` })).status).toBe(401);
	});

	it("a browser's WebSocket (an Origin header) is refused with 403", async () => {
		const server = await registerConnectorServer();
		const { token } = await connectorToken(server);
		const response = await dial(server, { authorization: `Bearer ${token}`, origin: "https://evil.example" });
		expect(response.status).toBe(403);
	});

	it("a request that is not a WebSocket upgrade is refused with 400", async () => {
		const server = await registerConnectorServer();
		const { token } = await connectorToken(server);
		const response = await dial(server, { authorization: `Bearer ${token}`, upgrade: "h2c" });
		expect(response.status).toBe(400);
	});

	it("a first frame that is not hello closes the socket with 1008 and a sentence", async () => {
		const { ws, closed } = await admittedSocket();
		ws.send(JSON.stringify({ type: "draining" }));
		const event = await closed;
		expect(event.code).toBe(1008);
		expect(event.reason).toContain("the first frame must be hello");
	});

	it("a frame that does not parse closes the socket with 1008", async () => {
		const { ws, closed } = await admittedSocket();
		ws.send("{not json");
		expect((await closed).code).toBe(1008);
	});
});

/** A request the server's ConnectorDO carries, as the upstream fetch sends it (a new session: no session id). */
function carried(server: string, body: string): Promise<Response> {
	return connectorObject(env, server).fetch(
		new Request(connectorUrl(server), {
			method: "POST",
			headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
			body,
		}),
	);
}

/** A connector server whose one connector holds every request unanswered, its object on a manual clock and timers. */
async function busyServer() {
	const server = await registerConnectorServer();
	const { token } = await connectorToken(server);
	const clock = new ManualClock();
	const timers = new ManualTimers(clock);
	const stub = connectorObject(env, server);
	await runInDurableObject(stub, (instance: ConnectorDO) => {
		instance.clock = clock;
		instance.timers = timers;
	});
	const connector = await startConnector(server, token, { upstream: upstreamUrl("beta"), hold: () => true });
	const waiting = () => runInDurableObject(stub, (instance: ConnectorDO) => instance.slots.waitersOf(connector.id));
	const answers = Array.from({ length: MAX_IN_FLIGHT_PER_CONNECTOR }, (_, i) => carried(server, `{"held":${i}}`));
	await eventually(() => connector.held().length === MAX_IN_FLIGHT_PER_CONNECTOR, "64 requests held");
	return { server, connector, stub, clock, timers, waiting, answers };
}

const bodies = (frames: Array<{ body?: string | undefined }>) => frames.map((frame) => frame.body);

describe("connectors: bounds", () => {
	it("with 64 requests unanswered, the next requests wait and are sent in arrival order as slots free", async () => {
		const { connector, server, waiting, answers } = await busyServer();
		const first = carried(server, '{"waiter":1}');
		await eventually(async () => (await waiting()) === 1, "the first waiter queued");
		const second = carried(server, '{"waiter":2}');
		await eventually(async () => (await waiting()) === 2, "the second waiter queued");
		expect(connector.requests()).toHaveLength(MAX_IN_FLIGHT_PER_CONNECTOR);
		connector.releaseOne();
		await eventually(() => connector.requests().length === MAX_IN_FLIGHT_PER_CONNECTOR + 1, "the first waiter sent");
		expect(bodies(connector.requests()).at(-1)).toBe('{"waiter":1}');
		connector.releaseOne();
		await eventually(() => connector.requests().length === MAX_IN_FLIGHT_PER_CONNECTOR + 2, "the second waiter sent");
		expect(bodies(connector.requests()).at(-1)).toBe('{"waiter":2}');
		while (connector.held().length > 0) connector.releaseOne();
		for (const response of await Promise.all([...answers, first, second])) expect(response.status).toBe(200);
	});

	it("a request that finds no slot for 5 s is refused with 503 and a sentence, and never reaches the connector", async () => {
		const { connector, server, stub, clock, timers, waiting } = await busyServer();
		const late = carried(server, '{"late":true}');
		await eventually(async () => (await waiting()) === 1, "the request queued");
		clock.advance(4_999);
		expect(await runInDurableObject(stub, () => timers.runDue())).toBe(0);
		clock.advance(1);
		expect(await runInDurableObject(stub, () => timers.runDue())).toBe(1);
		const response = await late;
		expect(response.status).toBe(503);
		expect(await response.text()).toContain(
			`Every connector of server '${server}' had 64 requests in flight, its limit, for 5 s; the request was not sent.`,
		);
		expect(bodies(connector.requests())).not.toContain('{"late":true}');
		expect(await waiting()).toBe(0);
	});

	it("a caller that goes away while waiting leaves the queue, and the freed slot goes to the next waiter", async () => {
		// The queue itself: a caller's abort reaches the object as its request's signal.
		const clock = new ManualClock();
		const slots = new SlotQueue(() => new ManualTimers(clock));
		const abort = new AbortController();
		const gone = slots.wait("cn_a", abort.signal);
		const next = slots.wait("cn_a", new AbortController().signal);
		expect(slots.waitersOf("cn_a")).toBe(2);
		abort.abort();
		expect(await gone).toBe("aborted");
		expect(slots.waitersOf("cn_a")).toBe(1);
		slots.freed("cn_a");
		expect(await next).toBe("ready");
		expect(slots.reservedFor("cn_a")).toBe(1);
		slots.take("cn_a");
		expect([slots.waitersOf("cn_a"), slots.reservedFor("cn_a")]).toEqual([0, 0]);
	});

	it("waiters of a connector that goes away are told so, and their reserved slots forgotten", async () => {
		const slots = new SlotQueue(() => new ManualTimers(new ManualClock()));
		const waiter = slots.wait("cn_b", new AbortController().signal);
		slots.gone("cn_b");
		expect(await waiter).toBe("gone");
		expect([slots.waitersOf("cn_b"), slots.reservedFor("cn_b")]).toEqual([0, 0]);
	});

	it("a request larger than a frame (in UTF-8 bytes, even under the cap in characters) is refused with 413 before anything is sent", async () => {
		const { server, connector } = await servedServer();
		const ascii = JSON.stringify({ text: "a".repeat(MAX_FRAME_BYTES) });
		// 0.6 M characters, 1.2 MB of UTF-8: only the bytes tell it does not fit.
		const accented = JSON.stringify({ text: "é".repeat(600_000) });
		for (const body of [ascii, accented]) {
			const response = await carried(server, body);
			expect(response.status).toBe(413);
			expect(await response.text()).toBe(
				`The request is larger than a connector frame (${MAX_FRAME_BYTES} bytes), so it was not sent to '${server}'.`,
			);
		}
		expect(connector.requests()).toEqual([]);
	});

	it("a connector that never says hello is closed with 1008 by the object's alarm 10 s after connecting; one that said hello stays", async () => {
		const server = await registerConnectorServer();
		const { token } = await connectorToken(server);
		const stub = connectorObject(env, server);
		const clock = new ManualClock();
		await runInDurableObject(stub, (instance: ConnectorDO) => {
			instance.clock = clock;
		});
		const silent = await startConnector(server, token, { upstream: upstreamUrl("beta"), silent: true });
		const greeted = await startConnector(server, token, { upstream: upstreamUrl("beta") });
		clock.advance(HELLO_TIMEOUT_MS - 1);
		expect(await runDurableObjectAlarm(stub)).toBe(true);
		expect(silent.ws.readyState).toBe(WebSocket.OPEN);
		clock.advance(1);
		expect(await runDurableObjectAlarm(stub)).toBe(true);
		const closed = await silent.closed;
		expect(closed).toEqual({ code: 1008, reason: "no hello within 10 s of connecting" });
		expect((await stub.online()).map(({ id }) => id)).toEqual([greeted.id]);
		// Nothing awaits a hello any more: no alarm is left to wake the object.
		expect(await runDurableObjectAlarm(stub)).toBe(false);
	});
});

/** `pieces` as a body, one chunk each, read through `withBreaks` for `token`: what came through, and the error if any. */
async function readThroughBreaks(pieces: string[], token: string): Promise<{ text: string; error: string | null }> {
	const encoder = new TextEncoder();
	const body = new ReadableStream<Uint8Array>({
		start(controller) {
			for (const piece of pieces) controller.enqueue(encoder.encode(piece));
			controller.close();
		},
	});
	const reader = withBreaks(body, token, (sentence) => new Error(sentence)).getReader();
	const decoder = new TextDecoder();
	let text = "";
	for (;;) {
		try {
			const { done, value } = await reader.read();
			if (done) return { text, error: null };
			text += decoder.decode(value, { stream: true });
		} catch (error) {
			return { text, error: error instanceof Error ? error.message : String(error) };
		}
	}
}

describe("connectors: a reply that breaks off", () => {
	it("a body ended by its break mark, even split across chunks, errors with the object's sentence after what came before", async () => {
		const mark = breakText("tok123", "connector went away; the call may have run");
		const event = "event: message\ndata: {}\n\n";
		const whole = `${event}${mark}`;
		const split = [
			whole.slice(0, event.length + 3),
			whole.slice(event.length + 3, event.length + 9),
			whole.slice(event.length + 9),
		];
		expect(await readThroughBreaks(split, "tok123")).toEqual({
			text: event,
			error: "connector went away; the call may have run",
		});
	});

	it("a body with another token's mark, or a NUL of its own, passes through unchanged and ends normally", async () => {
		const other = `data: 1\n\n${breakText("other", "not ours")}`;
		expect(await readThroughBreaks([other], "tok123")).toEqual({ text: other, error: null });
		expect(await readThroughBreaks(["a\u0000", "b"], "tok123")).toEqual({ text: "a\u0000b", error: null });
	});
});
