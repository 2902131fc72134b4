import { env, listDurableObjectIds, runInDurableObject } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { describe, expect, it } from "vitest";
import type { SessionDO } from "../src/session/session-do.ts";
import { eventually } from "./support/eventually.ts";
import { admin, BASE, createKey, gatewayFetch, readReply, uniqueName } from "./support/gateway.ts";
import { ENVELOPE, MODERN, modernPost, modernRequest, textOf } from "./support/modern.ts";
import { objectMadeBy } from "./support/session-object.ts";
import { eventReader } from "./support/sse-events.ts";
import { registerServer, toolCallsOf, upstreamLog, upstreamUrl } from "./support/upstreams.ts";

/** An SDK v2 client pinned to 2026-07-28, through the gateway (no fallback to 2025: it fails if not offered). */
async function modernClient(path: string, key: string, capabilities: Record<string, unknown> = {}) {
	const transport = new StreamableHTTPClientTransport(new URL(`${BASE}${path}`), {
		fetch: (url, init) => exports.default.fetch(new Request(url, init)),
		requestInit: { headers: { authorization: `Bearer ${key}` } },
	});
	const client = new Client(
		{ name: "modern-test", version: "1.0.0" },
		{ capabilities, versionNegotiation: { mode: { pin: MODERN } } },
	);
	return { client, transport, connect: () => client.connect(transport) };
}

describe("2026-07-28 clients over 2025 upstreams", () => {
	it("an SDK v2 client pinned to 2026-07-28 connects to a 2025 server's endpoint, lists and calls its tools", async () => {
		const server = await registerServer("delta");
		const { key } = await createKey({ servers: [server] });
		const { client, connect } = await modernClient(`/mcp/${server}`, key);
		await connect();
		const tools = await client.listTools();
		expect(tools.tools.map((tool) => tool.name)).toContain("ask_user");
		const result = await client.callTool({ name: "client_capabilities", arguments: {} });
		expect(textOf(result)).toBeDefined();
		await client.close();
	});

	it("an elicitation from a 2025 upstream reaches a 2026-07-28 client as input_required, and its retry answers the upstream", async () => {
		const server = await registerServer("delta");
		const { key } = await createKey({ servers: [server] });
		const { client, connect } = await modernClient(`/mcp/${server}`, key, { elicitation: { form: {} } });
		client.setRequestHandler("elicitation/create", async (request) => ({
			action: "accept",
			content: { answer: `yes to ${request.params.message}` },
		}));
		await connect();
		const result = await client.callTool({ name: "ask_user", arguments: {} });
		expect(textOf(result)).toBe(`delta got accept: yes to delta needs an answer`);
		await client.close();
	});

	it("sampling from a 2025 member of /mcp reaches a 2026-07-28 client as input_required under the namespaced tool", async () => {
		const delta = await registerServer("delta");
		const epsilon = await registerServer("epsilon");
		const { key } = await createKey({ servers: [delta, epsilon] });
		const { client, connect } = await modernClient("/mcp", key, { sampling: {} });
		client.setRequestHandler("sampling/createMessage", async () => ({
			role: "assistant",
			model: "test-model",
			content: { type: "text", text: "forty-two" },
		}));
		await connect();
		const tools = await client.listTools();
		expect(tools.tools.map((tool) => tool.name)).toContain(`${epsilon}__ask_model`);
		const result = await client.callTool({ name: `${epsilon}__ask_model`, arguments: {} });
		expect(textOf(result)).toBe("epsilon heard: forty-two");
		await client.close();
	});

	it("server/discover on an aggregate endpoint answers with the merged capabilities and the gateway's identity", async () => {
		const delta = await registerServer("delta");
		const { key } = await createKey({ servers: [delta] });
		const response = await modernPost("/mcp", key, {
			id: "d1",
			method: "server/discover",
			params: { _meta: ENVELOPE },
		});
		expect(response.status).toBe(200);
		const reply = (await response.json()) as { id: string; result: Record<string, unknown> };
		expect(reply.id).toBe("d1");
		expect(reply.result.resultType).toBe("complete");
		expect(reply.result.supportedVersions).toEqual([MODERN]);
		expect(reply.result.capabilities).toHaveProperty("tools");
		expect(reply.result.cacheScope).toBe("private");
	});
});

describe("per-request log levels over 2025 upstreams", () => {
	it("a request's _meta logLevel is set on the 2025 upstream with logging/setLevel once per change", async () => {
		const server = await registerServer("delta");
		const { key } = await createKey({ servers: [server] });
		const before = (await upstreamLog("delta")).length;
		const withLevel = (id: number, level: string) =>
			modernPost(`/mcp/${server}`, key, {
				id,
				method: "tools/list",
				params: { _meta: { ...ENVELOPE, "io.modelcontextprotocol/logLevel": level } },
			});
		for (const [id, level] of [
			[1, "notice"],
			[2, "notice"],
			[3, "critical"],
		] as const) {
			expect((await withLevel(id, level)).status).toBe(200);
		}
		const levels = (await upstreamLog("delta"))
			.slice(before)
			.filter((entry) => entry.body?.method === "logging/setLevel")
			.map((entry) => entry.body?.params?.level)
			// Other files' sessions on this upstream set other levels; these two are this test's.
			.filter((level) => level === "notice" || level === "critical");
		expect(levels).toEqual(["notice", "critical"]);
	});
});

describe("2026-07-28 requests that are refused", () => {
	// SEP-2575: what 2026-07-28 removed is a method this era does not have, whatever its params say.
	const removed: Array<[string, Record<string, unknown>]> = [
		["initialize", { protocolVersion: "2026-07-28", capabilities: {}, clientInfo: { name: "c", version: "1" } }],
		["ping", {}],
		["logging/setLevel", { level: "info" }],
		["resources/subscribe", { uri: "demo://readme" }],
		["resources/unsubscribe", { uri: "demo://readme" }],
		["tasks/list", {}],
		["tasks/result", { taskId: "t" }],
	];
	for (const [method, params] of removed) {
		it(`${method}, removed in 2026-07-28, is 404 with -32601 and the request's id, and reaches no upstream`, async () => {
			const server = await registerServer("modern");
			const { key } = await createKey({ servers: [server] });
			const id = `removed-${crypto.randomUUID()}`;
			const response = await modernPost(`/mcp/${server}`, key, { id, method, params: { ...params, _meta: ENVELOPE } });
			expect(response.status).toBe(404);
			const reply = (await response.json()) as { id: unknown; error: { code: number; message: string } };
			expect(reply.id).toBe(id);
			expect(reply.error.code).toBe(-32601);
			expect(reply.error.message).toBe(`Method not found: ${method} is not a method of MCP 2026-07-28.`);
			expect((await upstreamLog("modern")).filter((entry) => entry.body?.id === id)).toEqual([]);
		});
	}

	it("an Mcp-Name header that disagrees with the body is 400 with -32020 and the request's id, and reaches no upstream", async () => {
		const server = await registerServer("beta");
		const { key } = await createKey({ servers: [server] });
		// Arguments of this test alone: the shared upstream's log is searched for them, whatever other tests send.
		const args = { text: `mcp-name-mismatch-${crypto.randomUUID()}` };
		const response = await modernPost(
			`/mcp/${server}`,
			key,
			{ id: 7, method: "tools/call", params: { name: "echo", arguments: args, _meta: ENVELOPE } },
			{ "mcp-name": "other" },
		);
		expect(response.status).toBe(400);
		const reply = (await response.json()) as { id: unknown; error: { code: number; message: string } };
		expect(reply.id).toBe(7);
		expect(reply.error.code).toBe(-32020);
		expect(reply.error.message).toMatch(/Mcp-Name/);
		expect(await toolCallsOf("beta", "echo", args)).toEqual([]);
	});

	it("an Mcp-Method header that disagrees with the body is 400 with -32020", async () => {
		const server = await registerServer("beta");
		const { key } = await createKey({ servers: [server] });
		const response = await modernPost(
			`/mcp/${server}`,
			key,
			{ id: 8, method: "tools/list", params: { _meta: ENVELOPE } },
			{ "mcp-method": "prompts/list" },
		);
		expect(response.status).toBe(400);
		expect(((await response.json()) as { error: { code: number } }).error.code).toBe(-32020);
	});

	it("a malformed _meta envelope is 400 with -32602 naming the missing key", async () => {
		const server = await registerServer("beta");
		const { key } = await createKey({ servers: [server] });
		const response = await modernPost(`/mcp/${server}`, key, {
			id: 9,
			method: "tools/list",
			params: { _meta: { "io.modelcontextprotocol/protocolVersion": MODERN } },
		});
		expect(response.status).toBe(400);
		const reply = (await response.json()) as { id: unknown; error: { code: number; message: string } };
		expect(reply.id).toBe(9);
		expect(reply.error.code).toBe(-32602);
		expect(reply.error.message).toMatch(/clientCapabilities/);
	});

	it("a 2026-07-28 version header on a body without the envelope is 400 with -32602", async () => {
		const server = await registerServer("beta");
		const { key } = await createKey({ servers: [server] });
		const response = await modernPost(`/mcp/${server}`, key, { id: 10, method: "tools/list", params: {} });
		expect(response.status).toBe(400);
		expect(((await response.json()) as { error: { code: number } }).error.code).toBe(-32602);
	});

	it("an unsupported version is 400 with -32022 listing the per-request versions the gateway speaks (as server/discover does)", async () => {
		const server = await registerServer("beta");
		const { key } = await createKey({ servers: [server] });
		const envelope = { ...ENVELOPE, "io.modelcontextprotocol/protocolVersion": "2099-01-01" };
		const response = await modernPost(
			`/mcp/${server}`,
			key,
			{ id: 11, method: "tools/list", params: { _meta: envelope } },
			{ "mcp-protocol-version": "2099-01-01" },
		);
		expect(response.status).toBe(400);
		const reply = (await response.json()) as { id: unknown; error: { code: number; data: Record<string, unknown> } };
		expect(reply.id).toBe(11);
		expect(reply.error.code).toBe(-32022);
		expect(reply.error.data.supported).toEqual([MODERN]);
		expect(reply.error.data.requested).toBe("2099-01-01");
	});

	it("a POST refused for its Accept header still answers with the request's id (either era)", async () => {
		const server = await registerServer("beta");
		const { key } = await createKey({ servers: [server] });
		const response = await modernPost(
			`/mcp/${server}`,
			key,
			{ id: 13, method: "tools/list", params: { _meta: ENVELOPE } },
			{ accept: "application/json" },
		);
		expect(response.status).toBe(406);
		expect(((await response.json()) as { id: unknown }).id).toBe(13);
	});

	it("GET and DELETE with a 2026-07-28 version header are 405", async () => {
		const server = await registerServer("beta");
		const { key } = await createKey({ servers: [server] });
		for (const method of ["GET", "DELETE"]) {
			const response = await gatewayFetch(`/mcp/${server}`, {
				method,
				headers: { authorization: `Bearer ${key}`, accept: "text/event-stream", "mcp-protocol-version": MODERN },
			});
			expect(response.status).toBe(405);
			expect(response.headers.get("allow")).toBe("POST");
		}
	});

	it("a forged requestState is refused with -32602 and nothing is answered upstream", async () => {
		// The shared upstream's log holds every file's requests: this server's carry a header of its own.
		const server = uniqueName("delta");
		const tag = `Bearer forged-state-${crypto.randomUUID()}`;
		const registered = await admin("PUT", `/servers/${server}`, {
			url: upstreamUrl("delta"),
			headers: { Authorization: tag },
		});
		expect(registered.status).toBe(201);
		const { key } = await createKey({ servers: [server] });
		const response = await modernPost(`/mcp/${server}`, key, {
			id: 12,
			method: "tools/call",
			params: {
				name: "ask_user",
				arguments: {},
				requestState: "forged.9999999999999.AAAA",
				inputResponses: { "input-1": { action: "accept", content: { answer: "x" } } },
				_meta: { ...ENVELOPE, "io.modelcontextprotocol/clientCapabilities": { elicitation: {} } },
			},
		});
		const reply = (await response.json()) as { id: unknown; error: { code: number; message: string } };
		expect(reply.id).toBe(12);
		expect(reply.error.code).toBe(-32602);
		expect(reply.error.message).toMatch(/requestState/);
		const sent = (await upstreamLog("delta")).filter((entry) => entry.authorization === tag);
		// The filter sees this server's requests (its session was opened upstream), so "none" below means none.
		expect(sent.some((entry) => entry.body?.method === "initialize")).toBe(true);
		// Opening the session (and the era probe) may reach the upstream; no answer to any request does.
		const opening = new Set(["server/discover", "initialize", "notifications/initialized"]);
		const calls = sent.filter((entry) => entry.method === "POST" && !opening.has(entry.body?.method ?? ""));
		expect(calls.map((entry) => entry.body?.method ?? `response to ${String(entry.body?.id)}`)).toEqual([]);
	});
});

/**
 * Each invalid case of the conformance suite's `http-header-validation`
 * (SEP-2243), and the Base64 and task cases of the same rule, against a
 * 2026-07-28 upstream behind a server endpoint: the path where the gateway
 * forwards without a Durable Object, and may answer tools/list from its cache.
 */
describe("invalid routing headers are refused before anything is forwarded", () => {
	interface HeaderCase {
		body: { method: string; params?: Record<string, unknown> };
		/** Headers set over the ones the body implies; null removes one. */
		headers: Record<string, string | null>;
		/** What the refusal says. */
		says: RegExp;
	}
	const listTools = { method: "tools/list" };
	const callEcho = { method: "tools/call", params: { name: "echo", arguments: { text: "hi" } } };
	const invalid: Record<string, HeaderCase> = {
		"an Mcp-Method that names another method": {
			body: listTools,
			headers: { "mcp-method": "prompts/list" },
			says: /Mcp-Method/,
		},
		"a missing Mcp-Method": { body: listTools, headers: { "mcp-method": null }, says: /Mcp-Method header is absent/ },
		"an Mcp-Method in other case (TOOLS/LIST)": {
			body: listTools,
			headers: { "mcp-method": "TOOLS/LIST" },
			says: /TOOLS\/LIST/,
		},
		"a missing MCP-Protocol-Version": {
			body: listTools,
			headers: { "mcp-protocol-version": null },
			says: /MCP-Protocol-Version header is missing/,
		},
		"an Mcp-Name that names another tool": {
			body: callEcho,
			headers: { "mcp-name": "wrong_tool_name" },
			says: /Mcp-Name header names 'wrong_tool_name'/,
		},
		"a missing Mcp-Name on tools/call": {
			body: callEcho,
			headers: { "mcp-name": null },
			says: /Mcp-Name header is absent/,
		},
		"an Mcp-Name whose Base64 has no padding": {
			body: callEcho,
			headers: { "mcp-name": "=?base64?ZWNobw?=" },
			says: /invalid Base64/,
		},
		"an Mcp-Name whose Base64 has characters outside the alphabet": {
			body: callEcho,
			headers: { "mcp-name": "=?base64?ZW!!obw==?=" },
			says: /invalid Base64/,
		},
		"a missing Mcp-Name on tasks/get, which names its task": {
			body: { method: "tasks/get", params: { taskId: "task-1" } },
			headers: {},
			says: /taskId 'task-1' but the required Mcp-Name header is absent/,
		},
	};

	async function send(server: string, key: string, id: string, { body, headers }: HeaderCase): Promise<Response> {
		const request = modernRequest(`/mcp/${server}`, key, {
			id,
			method: body.method,
			params: { ...body.params, _meta: ENVELOPE },
		});
		for (const [name, value] of Object.entries(headers)) {
			if (value === null) request.headers.delete(name);
			else request.headers.set(name, value);
		}
		return exports.default.fetch(request);
	}

	for (const [name, refused] of Object.entries(invalid)) {
		it(`${name} is refused with 400 and -32020 answering the request's id, and reaches no upstream`, async () => {
			const server = await registerServer("modern");
			const { key } = await createKey({ servers: [server] });
			if (refused.body.method === "tools/list") {
				// Answered validly first, so a cached list is there to be (wrongly) served.
				const valid = await send(server, key, `valid-${crypto.randomUUID()}`, { ...refused, headers: {} });
				expect(valid.status).toBe(200);
				await valid.body?.cancel();
			}
			const id = `refused-${crypto.randomUUID()}`;
			const response = await send(server, key, id, refused);
			expect(response.status).toBe(400);
			const reply = (await response.json()) as { id: unknown; error: { code: number; message: string } };
			expect(reply.id).toBe(id);
			expect(reply.error.code).toBe(-32020);
			expect(reply.error.message).toMatch(refused.says);
			expect((await upstreamLog("modern")).filter((entry) => entry.body?.id === id)).toEqual([]);
		});
	}

	it("valid variants pass: header names in any case, whitespace around Mcp-Name, and Mcp-Name in canonical Base64", async () => {
		const server = await registerServer("modern");
		const { key } = await createKey({ servers: [server] });
		const variants: HeaderCase[] = [
			{ body: listTools, headers: { "mcp-method": null, "MCP-METHOD": "tools/list" }, says: /./ },
			{ body: callEcho, headers: { "mcp-name": "  echo  " }, says: /./ },
			{ body: callEcho, headers: { "mcp-name": `=?base64?${btoa("echo")}?=` }, says: /./ },
		];
		for (const [index, variant] of variants.entries()) {
			const reply = await readReply(await send(server, key, `variant-${index}`, variant));
			expect(reply.error).toBeUndefined();
			expect(reply.result).toBeDefined();
		}
	});
});

describe("input rounds bridged from 2025 upstreams", () => {
	const ASKING = { ...ENVELOPE, "io.modelcontextprotocol/clientCapabilities": { elicitation: { form: {} } } };
	const call = (id: number, extra: Record<string, unknown> = {}) => ({
		id,
		method: "tools/call",
		params: { name: "ask_user", arguments: {}, _meta: ASKING, ...extra },
	});

	/** Calls delta's ask_user raw and returns the input_required round it ends with. */
	async function openRound() {
		const server = await registerServer("delta");
		const { key } = await createKey({ servers: [server] });
		const first = await readReply(await modernPost(`/mcp/${server}`, key, call(1)));
		const result = first.result as {
			resultType: string;
			inputRequests: Record<string, { method: string }>;
			requestState: string;
		};
		return { server, key, result };
	}
	const accept = { action: "accept", content: { answer: "forty-two" } };

	it("a call whose upstream asks the client ends with input_required naming the elicitation and an opaque requestState", async () => {
		const { result } = await openRound();
		expect(result.resultType).toBe("input_required");
		expect(Object.values(result.inputRequests).map((request) => request.method)).toEqual(["elicitation/create"]);
		expect(typeof result.requestState).toBe("string");
	});

	it("a round is answered once: replaying its requestState is refused with -32602", async () => {
		const { server, key, result } = await openRound();
		const [input] = Object.keys(result.inputRequests);
		const retry = call(2, { requestState: result.requestState, inputResponses: { [String(input)]: accept } });
		const answered = await readReply(await modernPost(`/mcp/${server}`, key, retry));
		expect(answered.result?.resultType).toBe("complete");
		expect(textOf(answered.result ?? {})).toBe("delta got accept: forty-two");
		const replay = await readReply(await modernPost(`/mcp/${server}`, key, { ...retry, id: 3 }));
		expect(replay.id).toBe(3);
		expect(replay.error?.code).toBe(-32602);
	});

	it("two concurrent retries of one round that both pass the state check: exactly one answers the upstream, the other is refused with -32602", async () => {
		const server = await registerServer("delta");
		const { key } = await createKey({ servers: [server] });
		const known = new Set((await listDurableObjectIds(env.SESSIONS)).map((id) => id.toString()));
		const first = await readReply(await modernPost(`/mcp/${server}`, key, call(1)));
		const state = (first.result as { requestState: string }).requestState;
		const [created] = (await listDurableObjectIds(env.SESSIONS)).filter((id) => !known.has(id.toString()));
		if (!created) throw new Error("no session object was created");
		const stub = env.SESSIONS.get(created);
		// A gate after the state check: neither retry goes on until both have passed it.
		await runInDurableObject(stub, (instance: SessionDO) => {
			const bridge = instance.bridge as unknown as { verify: (...args: unknown[]) => Promise<unknown> };
			const verify = bridge.verify.bind(bridge);
			let passed = 0;
			let open = () => {};
			const gate = new Promise<void>((resolve) => {
				open = resolve;
			});
			bridge.verify = async (...args) => {
				const round = await verify(...args);
				if (round !== undefined && ++passed === 2) open();
				await gate;
				return round;
			};
		});
		const logged = (await upstreamLog("delta")).length;
		const retry = (id: number) =>
			modernPost(`/mcp/${server}`, key, call(id, { requestState: state, inputResponses: { "input-1": accept } }));
		const replies = await Promise.all([retry(2), retry(3)].map(async (response) => readReply(await response)));
		const answered = replies.filter((reply) => reply.result?.resultType === "complete");
		const refused = replies.filter((reply) => reply.error !== undefined);
		expect(answered.map((reply) => textOf(reply.result ?? {}))).toEqual(["delta got accept: forty-two"]);
		expect(refused.map((reply) => reply.error?.code)).toEqual([-32602]);
		expect(refused[0]?.error?.message).toMatch(/already answered/);
		// Everything this session's upstream session received since the round opened: one answer, no second.
		const binding = await runInDurableObject(stub, (instance: SessionDO) => instance.store.readBinding());
		const upstreamSession = binding?.upstreams[server]?.sessionId;
		expect(upstreamSession).toBeTruthy();
		const answers = (await upstreamLog("delta"))
			.slice(logged)
			.filter((entry) => entry.sessionId === upstreamSession)
			.filter((entry) => entry.method === "POST" && entry.body?.method === undefined && entry.body?.id !== undefined);
		expect(answers).toHaveLength(1);
	});

	it("a requestState presented by another key is refused and the round stays open for its owner", async () => {
		const { server, key, result } = await openRound();
		const [input] = Object.keys(result.inputRequests);
		const other = await createKey({ servers: [server] });
		const retry = call(2, { requestState: result.requestState, inputResponses: { [String(input)]: accept } });
		const stolen = await readReply(await modernPost(`/mcp/${server}`, other.key, retry));
		expect(stolen.error?.code).toBe(-32602);
		const owned = await readReply(await modernPost(`/mcp/${server}`, key, { ...retry, id: 3 }));
		expect(textOf(owned.result ?? {})).toBe("delta got accept: forty-two");
	});

	it("a retry whose answer is not a valid elicitation result is refused with -32602 and can be retried correctly", async () => {
		const { server, key, result } = await openRound();
		const [input] = Object.keys(result.inputRequests);
		const bad = call(2, {
			requestState: result.requestState,
			inputResponses: { [String(input)]: { action: "maybe" } },
		});
		const refused = await readReply(await modernPost(`/mcp/${server}`, key, bad));
		expect(refused.error?.code).toBe(-32602);
		expect(refused.error?.message).toMatch(/elicitation\/create/);
		const good = call(3, { requestState: result.requestState, inputResponses: { [String(input)]: accept } });
		const answered = await readReply(await modernPost(`/mcp/${server}`, key, good));
		expect(textOf(answered.result ?? {})).toBe("delta got accept: forty-two");
	});

	it("a retry that leaves out an answer is asked for it again (input_required), not refused", async () => {
		const { server, key, result } = await openRound();
		const retry = call(2, { requestState: result.requestState, inputResponses: {} });
		const again = await readReply(await modernPost(`/mcp/${server}`, key, retry));
		expect(again.result?.resultType).toBe("input_required");
		expect(Object.keys(again.result?.inputRequests as object)).toEqual(Object.keys(result.inputRequests));
	});

	it("a round the client never answers is abandoned when its time is up: the upstream is told, and a late retry is refused", async () => {
		const server = await registerServer("delta");
		const { key } = await createKey({ servers: [server] });
		// The first request opens the session's object; its timers are then swapped for manual ones.
		const { stub, clock, timers } = await objectMadeBy(async () =>
			(await modernPost(`/mcp/${server}`, key, { id: 1, method: "server/discover", params: { _meta: ASKING } })).text(),
		);
		const logged = (await upstreamLog("delta")).length;
		const first = await readReply(await modernPost(`/mcp/${server}`, key, call(2)));
		const state = (first.result as { requestState: string }).requestState;
		expect(await runInDurableObject(stub, (instance: SessionDO) => instance.bridge.waiting)).toBe(1);
		clock.advance(10 * 60_000);
		expect(timers.runDue()).toBeGreaterThan(0);
		await eventually(
			async () => (await runInDurableObject(stub, (instance: SessionDO) => instance.bridge.waiting)) === 0,
		);
		// The upstream's elicitation was answered (with an error), so its call does not hang.
		await eventually(async () =>
			(await upstreamLog("delta"))
				.slice(logged)
				.some((entry) => entry.method === "POST" && entry.body?.method === undefined && entry.body?.id !== undefined),
		);
		const late = call(3, { requestState: state, inputResponses: { "input-1": accept } });
		const refused = await readReply(await modernPost(`/mcp/${server}`, key, late));
		expect(refused.error?.code).toBe(-32602);
	});

	it("a requestState sent with a different tool name is refused", async () => {
		const { server, key, result } = await openRound();
		const [input] = Object.keys(result.inputRequests);
		const retry = {
			id: 2,
			method: "tools/call",
			params: {
				name: "list_roots",
				arguments: {},
				_meta: ASKING,
				requestState: result.requestState,
				inputResponses: { [String(input)]: accept },
			},
		};
		const refused = await readReply(await modernPost(`/mcp/${server}`, key, retry));
		expect(refused.error?.code).toBe(-32602);
	});
});

describe("subscriptions/listen over 2025 upstreams", () => {
	it("acknowledges first, then delivers only the opted-in resource update, tagged with the subscription id", async () => {
		const server = await registerServer("delta");
		const { key } = await createKey({ servers: [server] });
		const uri = `file:///watched/${server}`;
		const gets = async () => (await upstreamLog("delta")).filter((entry) => entry.method === "GET").length;
		const before = await gets();
		const listen = await modernPost(`/mcp/${server}`, key, {
			id: "sub-1",
			method: "subscriptions/listen",
			params: { _meta: ENVELOPE, notifications: { resourceSubscriptions: [uri] } },
		});
		expect(listen.status).toBe(200);
		expect(listen.headers.get("content-type")).toContain("text/event-stream");
		const stream = eventReader(listen.body as ReadableStream<Uint8Array>);
		const ack = await stream.next();
		expect(ack.method).toBe("notifications/subscriptions/acknowledged");
		const ackParams = ack.params as { notifications: Record<string, unknown>; _meta: Record<string, unknown> };
		expect(ackParams.notifications).toEqual({ resourceSubscriptions: [uri] });
		expect(ackParams._meta["io.modelcontextprotocol/subscriptionId"]).toBe("sub-1");
		// The edge listens on the upstream's GET stream for this session before anything is sent.
		await eventually(async () => (await gets()) > before);
		const call = (id: number, name: string, args: Record<string, unknown>) =>
			modernPost(`/mcp/${server}`, key, {
				id,
				method: "tools/call",
				params: { name, arguments: args, _meta: ENVELOPE },
			});
		await (await call(2, "announce", { count: 1, tag: "not for listeners" })).text();
		await (await call(3, "touch_resource", { uri })).text();
		const update = await stream.next();
		expect(update.method).toBe("notifications/resources/updated");
		const params = update.params as { uri: string; _meta: Record<string, unknown> };
		expect(params.uri).toBe(uri);
		expect(params._meta["io.modelcontextprotocol/subscriptionId"]).toBe("sub-1");
		await stream.cancel();
	});
});
