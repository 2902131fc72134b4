import { runInDurableObject } from "cloudflare:test";
import { describe, expect, inject, it } from "vitest";
import type { SessionDO } from "../src/session/session-do.ts";
import { eventually } from "./support/eventually.ts";
import { newGate } from "./support/gates.ts";
import {
	admin,
	connectClient,
	createKey,
	gatewayFetch,
	mcpHeaders,
	openSession,
	readReply,
	rpc,
	uniqueName,
} from "./support/gateway.ts";
import { ManualClock, sessionObject, upstreamSessionId } from "./support/session-object.ts";
import { registerServer } from "./support/upstreams.ts";

const FAULT = () => `http://127.0.0.1:${inject("faultPort")}`;
const SUPERVISOR = () => `http://127.0.0.1:${inject("faultSupervisorPort")}`;
const ERROR_META = "mcp-edge-gateway/error";

interface LogEntry {
	pid: number;
	method: string;
	/** The request path: `/mcp/<server name>`, so it names the test that sent it (see `setup`). */
	path: string;
	sessionId: string | null;
	body: { method?: string; id?: unknown; params?: Record<string, unknown> } | null;
	status: number | null;
	/** Why the fixture answered as it did: mcp, auth401, expired, no-session, break-get, aborted. */
	reason: string | null;
	completed: boolean;
}
type ToolResult = {
	isError?: boolean;
	content: Array<{ type: string; text?: string }>;
	structuredContent?: unknown;
	_meta?: Record<string, { kind?: string; server?: string; details?: Record<string, string> }>;
};

/**
 * A request to the fault server's control API. After a restart the runtime may
 * still hold pooled connections to the old process: a lost connection is
 * tried again until one reaches the new process; any other error fails at once.
 */
async function faultFetch(url: string, init?: RequestInit): Promise<Response> {
	const outcome = await eventually(
		async () => {
			try {
				return { response: await fetch(url, init) };
			} catch (error) {
				if (error instanceof Error && /Network connection lost/.test(error.message)) return undefined;
				return { error };
			}
		},
		`a connection to the fault upstream for ${url}`,
		2_000,
	);
	if ("error" in outcome) throw outcome.error;
	return outcome.response;
}

async function control(path: string, body: unknown = {}): Promise<unknown> {
	const response = await faultFetch(`${FAULT()}${path}`, {
		method: "POST",
		headers: { "content-type": "application/json" },
		body: JSON.stringify(body),
	});
	return response.json();
}
const faultLog = async () => (await (await faultFetch(`${FAULT()}/_log`)).json()) as LogEntry[];
const faultStats = async () => (await (await faultFetch(`${FAULT()}/_stats`)).json()) as { pid: number };
async function supervise(action: "start" | "stop" | "restart"): Promise<{ running: boolean; pid: number | null }> {
	const response = await fetch(`${SUPERVISOR()}/${action}`, { method: "POST" });
	return (await response.json()) as { running: boolean; pid: number | null };
}
/** After a crash: waits until the supervisor has seen the process exit, then starts it again. */
async function startAfterCrash(): Promise<void> {
	await eventually(async () => {
		const status = (await (await fetch(`${SUPERVISOR()}/status`)).json()) as { running: boolean };
		return !status.running;
	}, "the supervisor seeing the crashed upstream exit");
	await supervise("start");
}
const toolCalls = (log: LogEntry[], tool: string) =>
	log.filter((entry) => entry.body?.method === "tools/call" && entry.body.params?.name === tool);
const initializes = (log: LogEntry[]) => log.filter((entry) => entry.body?.method === "initialize");
/** The tools/calls the fixture answered 404 because their upstream session had expired. */
const expiredToolCalls = (log: LogEntry[]) =>
	log.filter((entry) => entry.body?.method === "tools/call" && entry.reason === "expired" && entry.status === 404);

/**
 * Fault controls cleared, the fault server registered under a new name, and
 * an open session on it. The server's URL ends in its name, so every request
 * of this test's sessions carries it: `received()` is what they sent, never
 * another test's requests.
 */
async function setup(options: { timeoutSeconds?: number } = {}) {
	const status = (await (await fetch(`${SUPERVISOR()}/status`)).json()) as { running: boolean };
	if (!status.running) await supervise("start");
	await faultFetch(`${FAULT()}/_reset`, { method: "POST" });
	const server = uniqueName("fault");
	await admin("PUT", `/servers/${server}`, { url: `${FAULT()}/mcp/${server}`, ...options });
	const received = async () => (await faultLog()).filter((entry) => entry.path === `/mcp/${server}`);
	const path = `/mcp/${server}`;
	const { key } = await createKey();
	const sessionId = await openSession(path, key);
	let id = 100;
	const call = async (tool: string, args?: unknown, extra: Record<string, unknown> = {}) => {
		const params: Record<string, unknown> = { name: tool, ...extra };
		if (args !== undefined) params.arguments = args;
		const reply = await readReply(
			await rpc(path, key, sessionId, { jsonrpc: "2.0", id: id++, method: "tools/call", params }),
		);
		return reply;
	};
	return { server, path, key, sessionId, call, received };
}

describe("faithful requests", () => {
	it("tools/call carries arguments as an object: {} for none or null, nested empty objects unchanged", async () => {
		const { call, received } = await setup();
		await call("echo_args");
		await call("echo_args", null);
		await call("echo_args", {});
		const nested = await call("echo_args", { parameters: {} });
		expect((nested.result as ToolResult).content[0]?.text).toBe('{"parameters":{}}');
		const args = toolCalls(await received(), "echo_args").map((entry) => entry.body?.params?.arguments);
		expect(args).toEqual([{}, {}, {}, { parameters: {} }]);
	});

	it("no upstream request carries an empty or null params._meta; a non-empty one (progressToken) is kept", async () => {
		const { call, received } = await setup();
		await call("echo_args", {}, { _meta: {} });
		await call("echo_args", {}, { _meta: null });
		await call("echo_args", {}, { _meta: { progressToken: "keep-me" } });
		const log = await received();
		expect(log.length).toBeGreaterThan(3);
		for (const entry of log) {
			const params = entry.body?.params;
			if (params && "_meta" in params) {
				expect(params._meta).toBeTruthy();
				expect(Object.keys(params._meta as object).length).toBeGreaterThan(0);
			}
		}
		const metas = toolCalls(log, "echo_args").map((entry) => entry.body?.params?._meta);
		expect(metas).toEqual([undefined, undefined, { progressToken: "keep-me" }]);
	});
});

describe("401 is an auth failure, and only that", () => {
	it("one 401: the first call is an auth-failure result naming the server; the second call succeeds on the same session", async () => {
		const { server, call, received } = await setup();
		await control("/_control/auth401", { count: 1 });
		const first = (await call("read_note")).result as ToolResult;
		expect(first.isError).toBe(true);
		expect(first._meta?.[ERROR_META]?.kind).toBe("upstream_auth_required");
		expect(first._meta?.[ERROR_META]?.server).toBe(server);
		expect(first._meta?.[ERROR_META]?.details?.wwwAuthenticate).toContain('error="invalid_token"');
		expect(first.content[0]?.text).toContain(`'${server}'`);
		expect(first.content[0]?.text).toMatch(/rejected the gateway's credentials/);
		const second = (await call("read_note")).result as ToolResult;
		expect(second.isError).toBeUndefined();
		const log = await received();
		const calls = toolCalls(log, "read_note");
		expect(calls.map((entry) => entry.status)).toEqual([401, 200]);
		expect(new Set(calls.map((entry) => entry.sessionId)).size).toBe(1);
		expect(initializes(log)).toHaveLength(1);
	});

	it("a 401 on another method is a JSON-RPC error with the same kind", async () => {
		const { path, key, sessionId } = await setup();
		await control("/_control/auth401", { count: 1 });
		const reply = await readReply(await rpc(path, key, sessionId, { jsonrpc: "2.0", id: 1, method: "tools/list" }));
		expect(reply.error?.data?.kind).toBe("upstream_auth_required");
	});
});

describe("expired upstream sessions", () => {
	it("two concurrent write calls on an expired session both fail as outcome_uncertain, neither is replayed, and the next call succeeds on one new session", async () => {
		const { call, received } = await setup();
		await control("/_control/expire", { hold: 2 });
		const [a, b] = await Promise.all([call("write_note", { text: "a" }), call("write_note", { text: "b" })]);
		for (const reply of [a, b]) {
			const result = reply.result as ToolResult;
			expect(result.isError).toBe(true);
			expect(result._meta?.[ERROR_META]?.kind).toBe("outcome_uncertain");
			expect(result.content[0]?.text).toMatch(/may or may not have taken effect/);
			expect(result.content[0]?.text).toMatch(/not retried/);
		}
		expect(expiredToolCalls(await received())).toHaveLength(2);
		const next = (await call("write_note", { text: "c" })).result as ToolResult;
		expect(next.content[0]?.text).toMatch(/^wrote c/);
		const log = await received();
		// Sent once each, never replayed; the next call went out on the one session opened since.
		const writes = toolCalls(log, "write_note");
		const text = (entry: LogEntry | undefined) =>
			(entry?.body?.params?.arguments as { text?: string } | undefined)?.text;
		expect(writes.map(text).sort()).toEqual(["a", "b", "c"]);
		expect(initializes(log)).toHaveLength(2);
		const expired = writes.find((entry) => text(entry) === "a")?.sessionId;
		expect(writes.find((entry) => text(entry) === "c")?.sessionId).not.toBe(expired);
	});

	it("a read-only call on an expired session is retried once on a fresh session and succeeds", async () => {
		const { call, received } = await setup();
		await control("/_control/expire");
		const result = (await call("read_note")).result as ToolResult;
		expect(result.content[0]?.text).toMatch(/^note from/);
		// One expired tools/call (the retired session's DELETE also meets a 404, which is fine), then one that answered.
		const log = await received();
		expect(expiredToolCalls(log)).toHaveLength(1);
		expect(toolCalls(log, "read_note").map((entry) => entry.status)).toEqual([404, 200]);
		expect(initializes(log)).toHaveLength(2);
	});
});

describe("at most once, by an allowlist of reads", () => {
	for (const method of ["completion/complete", "resources/subscribe", "custom/unknown-method"]) {
		it(`${method}, not on the read allowlist, is sent once on an expired session and fails as outcome_uncertain`, async () => {
			const { path, key, sessionId, received } = await setup();
			await control("/_control/expire");
			const reply = await readReply(
				await rpc(path, key, sessionId, {
					jsonrpc: "2.0",
					id: 7,
					method,
					params: { ref: { type: "ref/prompt", name: "p" }, argument: { name: "a", value: "" }, uri: "fault://doc" },
				}),
			);
			expect(reply.error?.data).toEqual({ kind: "outcome_uncertain", server: expect.any(String) });
			expect(reply.error?.message).toMatch(/was not repeated, because only reads are/);
			expect((await received()).filter((entry) => entry.body?.method === method)).toHaveLength(1);
		});
	}

	it("resources/read, on the read allowlist, is repeated once on a fresh session after its session expired", async () => {
		const { path, key, sessionId, received } = await setup();
		await control("/_control/expire");
		const reply = await readReply(
			await rpc(path, key, sessionId, {
				jsonrpc: "2.0",
				id: 8,
				method: "resources/read",
				params: { uri: "fault://doc" },
			}),
		);
		expect(reply.id).toBe(8);
		const reads = (await received()).filter((entry) => entry.body?.method === "resources/read");
		expect(reads.map((entry) => entry.status)).toEqual([404, 200]);
	});
});

describe("at most once, by the operator's annotations", () => {
	it("a write tool a virtual server's operator marks read-only is repeated once on a fresh session after its session expired", async () => {
		const { server, received } = await setup();
		const virtual = uniqueName("readonly");
		const put = await admin("PUT", `/virtual-servers/${virtual}`, {
			servers: [server],
			tools: { overrides: { [`${server}__write_note`]: { annotations: { readOnlyHint: true } } } },
		});
		expect(put.status).toBe(201);
		const { key } = await createKey();
		const path = `/mcp/${virtual}`;
		const sessionId = await openSession(path, key);
		await readReply(await rpc(path, key, sessionId, { jsonrpc: "2.0", id: 1, method: "tools/list" }));
		await control("/_control/expire");
		const reply = await readReply(
			await rpc(path, key, sessionId, {
				jsonrpc: "2.0",
				id: 2,
				method: "tools/call",
				params: { name: `${server}__write_note`, arguments: { text: "promised" } },
			}),
		);
		expect((reply.result as ToolResult).content[0]?.text).toMatch(/^wrote promised/);
		expect(toolCalls(await received(), "write_note").map((entry) => entry.status)).toEqual([404, 200]);
	});

	it("through call_tool (search mode) a write on an expired session is sent once and fails as outcome_uncertain, and a read is repeated once", async () => {
		const { server, received } = await setup();
		const { key } = await createKey({ servers: [server], disclosure: "search" });
		const sessionId = await openSession("/mcp", key);
		const send = async (id: number, name: string, args: Record<string, unknown>) =>
			readReply(
				await rpc("/mcp", key, sessionId, {
					jsonrpc: "2.0",
					id,
					method: "tools/call",
					params: { name, arguments: args },
				}),
			);
		// The search lists the member's tools (and opens its upstream session), as a direct tools/list would.
		expect((await send(1, "search_tools", { query: "note" })).result).toBeDefined();
		await control("/_control/expire");
		const write = (await send(2, "call_tool", { name: `${server}__write_note`, arguments: { text: "once" } }))
			.result as ToolResult;
		expect(write._meta?.[ERROR_META]?.kind).toBe("outcome_uncertain");
		expect(toolCalls(await received(), "write_note").map((entry) => entry.status)).toEqual([404]);
		await control("/_control/expire");
		const read = (await send(3, "call_tool", { name: `${server}__read_note` })).result as ToolResult;
		expect(read.content[0]?.text).toMatch(/^note from/);
		expect(toolCalls(await received(), "read_note").map((entry) => entry.status)).toEqual([404, 200]);
	});
});

describe("exact expiry detection", () => {
	it("an isError result triggers no reconnect: the upstream session stays the same", async () => {
		const { call, received } = await setup();
		expect(((await call("empty_error")).result as ToolResult).isError).toBe(true);
		expect(((await call("read_note")).result as ToolResult).isError).toBeUndefined();
		const log = await received();
		expect(initializes(log)).toHaveLength(1);
		const calls = log.filter((entry) => entry.body?.method === "tools/call");
		expect(calls).toHaveLength(2);
		expect(new Set(calls.map((entry) => entry.sessionId)).size).toBe(1);
	});
});

describe("crash and restart", () => {
	it("after a restart on the same port: a read-only call succeeds at once on a new upstream session, and a write after it is sent once and succeeds on the new process", async () => {
		const { call, received } = await setup();
		const before = (await faultStats()).pid;
		const restarted = await supervise("restart");
		expect(restarted.pid).not.toBe(before);
		const read = (await call("read_note")).result as ToolResult;
		expect(read.content[0]?.text).toBe(`note from ${restarted.pid}`);
		// The read opened the new process's session; the write rides it, with nothing left to be uncertain about.
		const write = (await call("write_note", { text: "x" })).result as ToolResult;
		expect(write.isError).toBeUndefined();
		expect(write.content[0]?.text).toBe(`wrote x in ${restarted.pid}`);
		const after = (await call("write_note", { text: "y" })).result as ToolResult;
		expect(after.content[0]?.text).toBe(`wrote y in ${restarted.pid}`);
		const writes = toolCalls(await received(), "write_note");
		expect(writes.map((entry) => entry.status)).toEqual([200, 200]);
	});

	it("a crash mid-call fails that call within a few seconds, and the call is logged exactly once", async () => {
		const { call, server, received } = await setup();
		const started = Date.now();
		const result = (await call("crash")).result as ToolResult;
		expect(Date.now() - started).toBeLessThan(5_000);
		expect(result.isError).toBe(true);
		expect(result._meta?.[ERROR_META]).toMatchObject({ kind: "outcome_uncertain", server });
		await startAfterCrash();
		expect(toolCalls(await received(), "crash")).toHaveLength(1);
		const next = (await call("read_note")).result as ToolResult;
		expect(next.content[0]?.text).toMatch(/^note from/);
	});

	it("a crash mid-task fails the task with the sentence the call gets, and the call is logged exactly once (never replayed)", async () => {
		const { path, server, received } = await setup();
		const { key } = await createKey();
		const sessionId = await openSession(path, key, {}, { tasks: {} });
		const send = async (message: unknown) => readReply(await rpc(path, key, sessionId, message));
		const created = await send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "crash", task: {} } });
		const taskId = String((created.result?.task as { taskId?: unknown } | undefined)?.taskId);
		const answered = (await send({ jsonrpc: "2.0", id: 2, method: "tasks/result", params: { taskId } }))
			.result as ToolResult;
		expect(answered.isError).toBe(true);
		expect(answered._meta?.[ERROR_META]).toMatchObject({ kind: "outcome_uncertain", server });
		expect(answered.content[0]?.text).toMatch(/The call to 'crash' .* may or may not have taken effect/);
		expect((await send({ jsonrpc: "2.0", id: 3, method: "tasks/get", params: { taskId } })).result).toMatchObject({
			status: "failed",
		});
		await startAfterCrash();
		expect(toolCalls(await received(), "crash")).toHaveLength(1);
	});

	it("one member crashing leaves the other members of an aggregate, and other sessions, unaffected", async () => {
		const { server, call } = await setup();
		const other = await registerServer("beta");
		const { key } = await createKey({ servers: [server, other] });
		const { client } = await connectClient("/mcp", key);
		const crashed = await client.callTool({ name: `${server}__crash`, arguments: {} });
		expect(crashed.isError).toBe(true);
		expect((await client.callTool({ name: `${other}__whoami`, arguments: {} })).content).toEqual([
			{ type: "text", text: "beta" },
		]);
		await client.close();
		await startAfterCrash();
		expect(((await call("read_note")).result as ToolResult).content[0]?.text).toMatch(/^note from/);
	});

	it("after repeated connection failures, requests fail fast with upstream_unavailable until the cool-down ends", async () => {
		const { call, sessionId } = await setup();
		const clock = new ManualClock();
		await runInDurableObject(await sessionObject(sessionId), (instance: SessionDO) => {
			instance.clock = clock;
		});
		await supervise("stop");
		let paused: ToolResult | undefined;
		for (let i = 0; i < 5 && !paused; i++) {
			const result = (await call("read_note")).result as ToolResult;
			// Sent and lost: uncertain (the catalog cannot be read to prove it read-only), or not sent at all.
			expect(["outcome_uncertain", "upstream_unavailable"]).toContain(result._meta?.[ERROR_META]?.kind);
			if (/pauses requests/.test(result.content[0]?.text ?? "")) paused = result;
		}
		expect(paused?._meta?.[ERROR_META]?.kind).toBe("upstream_unavailable");
		const stub = await sessionObject(sessionId);
		const sent = await runInDurableObject(stub, (instance: SessionDO) => instance.stats().upstreamRequests);
		// While paused, nothing is sent.
		const again = (await call("read_note")).result as ToolResult;
		expect(again.content[0]?.text).toMatch(/pauses requests/);
		expect(await runInDurableObject(stub, (instance: SessionDO) => instance.stats().upstreamRequests)).toBe(sent);
		await supervise("start");
		clock.advance(61_000);
		const back = (await call("read_note")).result as ToolResult;
		expect(back.content[0]?.text).toMatch(/^note from/);
	});
});

describe("results pass through unchanged", () => {
	it("a rich result (text, image, audio, resource_link, embedded resource, structuredContent, _meta) and an empty isError result arrive unchanged, transparent and aggregated", async () => {
		const { server, key } = await setup();
		const direct = await connectClient(`/mcp/${server}`, key);
		const rich = (await direct.client.callTool({ name: "rich", arguments: {} })) as ToolResult;
		expect(rich.content.map((block: { type: string }) => block.type)).toEqual([
			"text",
			"image",
			"audio",
			"resource_link",
			"resource",
		]);
		expect(rich.structuredContent).toEqual({ ok: true, n: 1 });
		expect(rich._meta).toEqual({ "fixture/meta": "kept" });
		expect(await direct.client.callTool({ name: "empty_error", arguments: {} })).toEqual({
			content: [],
			isError: true,
		});
		await direct.client.close();

		const { key: aggregateKey } = await createKey({ servers: [server] });
		const aggregate = await connectClient("/mcp", aggregateKey);
		expect(await aggregate.client.callTool({ name: `${server}__rich`, arguments: {} })).toEqual(rich);
		expect(await aggregate.client.callTool({ name: `${server}__empty_error`, arguments: {} })).toEqual({
			content: [],
			isError: true,
		});
		await aggregate.client.close();
	});
});

describe("timeouts and cancellation", () => {
	it("a call past the server's timeout gets upstream_timeout, and the upstream gets notifications/cancelled for it, which ends the call there", async () => {
		const { call, server, received } = await setup({ timeoutSeconds: 1 });
		// A call held at a gate the test never releases: it cannot answer within the 1 s timeout.
		const gate = newGate(FAULT(), faultFetch);
		const result = (await call("gate", { name: gate.name })).result as ToolResult;
		expect(result._meta?.[ERROR_META]).toEqual({ kind: "upstream_timeout", server });
		const id = toolCalls(await received(), "gate")[0]?.body?.id;
		expect(id).toBeDefined();
		const cancelled = await eventually(
			async () => (await received()).find((entry) => entry.body?.method === "notifications/cancelled"),
			"notifications/cancelled at the upstream",
		);
		expect(cancelled.body?.params?.requestId).toBe(id);
		await eventually(async () => (await gate.status()).cancelled === 1, "the call cancelled at the gate");
		expect(await gate.status()).toMatchObject({ waiting: 0, passed: 0 });
	});

	it("a client's notifications/cancelled reaches the upstream that holds the request (aggregate), which ends the call there", async () => {
		const { server, received } = await setup();
		const { key } = await createKey({ servers: [server] });
		const sessionId = await openSession("/mcp", key);
		const gate = newGate(FAULT(), faultFetch);
		const pending = rpc("/mcp", key, sessionId, gate.call("gated-1", `${server}__gate`));
		await gate.arrived();
		const cancel = await rpc("/mcp", key, sessionId, {
			jsonrpc: "2.0",
			method: "notifications/cancelled",
			params: { requestId: "gated-1", reason: "user" },
		});
		expect(cancel.status).toBe(202);
		await (await pending).text();
		const cancelled = (await received()).filter((entry) => entry.body?.method === "notifications/cancelled");
		expect(cancelled.map((entry) => entry.body?.params?.requestId)).toEqual(["gated-1"]);
		await eventually(async () => (await gate.status()).cancelled === 1, "the call cancelled at the gate");
		expect(await gate.status()).toMatchObject({ waiting: 0, passed: 0 });
	});
});

describe("terminal notification streams", () => {
	it("a member's GET stream answering 404 retires its expired upstream session; the next need opens a fresh one, which the client's DELETE deletes, ending the client's stream", async () => {
		const { server, received } = await setup();
		const { key } = await createKey({ servers: [server] });
		const sessionId = await openSession("/mcp", key);
		const first = await upstreamSessionId(sessionId, server);
		expect(first).toBeTruthy();
		const listen = () =>
			gatewayFetch("/mcp", { method: "GET", headers: mcpHeaders(key, sessionId, { accept: "text/event-stream" }) });
		const gets = async (upstreamSession: string | null | undefined) =>
			(await received()).filter((entry) => entry.method === "GET" && entry.sessionId === upstreamSession);

		await control("/_control/expire");
		const afterExpiry = await listen();
		expect(afterExpiry.status).toBe(200);
		// Retired: gone, or (on a loaded machine, when the listening window asked again first) already replaced.
		await eventually(
			async () => (await upstreamSessionId(sessionId, server)) !== first,
			"the member's upstream session retired",
		);
		expect((await gets(first)).some((entry) => entry.status === 404)).toBe(true);
		await afterExpiry.body?.cancel();

		const tools = await readReply(await rpc("/mcp", key, sessionId, { jsonrpc: "2.0", id: 2, method: "tools/list" }));
		expect(((tools.result?.tools ?? []) as unknown[]).length).toBeGreaterThan(0);
		const second = await upstreamSessionId(sessionId, server);
		expect(second).toBeTruthy();
		expect(second).not.toBe(first);
		const inSecond = (await received()).filter((entry) => entry.sessionId === second);
		expect(inSecond.some((entry) => entry.body?.method === "tools/list")).toBe(true);

		const listening = await listen();
		await eventually(async () => (await gets(second)).length > 0, "the edge listening on the member's new session");
		expect((await gatewayFetch("/mcp", { method: "DELETE", headers: mcpHeaders(key, sessionId) })).status).toBe(204);
		await listening.text(); // the client's stream ended with its session
		const deletes = (await received()).filter((entry) => entry.method === "DELETE" && entry.sessionId === second);
		expect(deletes.map((entry) => entry.status)).toEqual([200]);
	});
});
