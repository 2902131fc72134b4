import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
	CallToolResultSchema,
	CreateMessageRequestSchema,
	ElicitationCompleteNotificationSchema,
	ElicitRequestSchema,
	ListRootsRequestSchema,
	LoggingMessageNotificationSchema,
	ResourceUpdatedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import type { SessionDO } from "../src/session/session-do.ts";
import { eventually } from "./support/eventually.ts";
import { connectClient, createKey, gatewayFetch, mcpHeaders, openSession, readReply, rpc } from "./support/gateway.ts";
import { sessionObject, upstreamSessionId } from "./support/session-object.ts";
import { registerServer, upstreamGate, upstreamLog } from "./support/upstreams.ts";

const PEER_CAPABILITIES = { sampling: {}, elicitation: { form: {} }, roots: { listChanged: true } };

/** A client on /mcp over delta and epsilon that answers sampling, elicitation and roots, recording the ids it was asked under. */
async function peerClient() {
	const delta = await registerServer("delta");
	const epsilon = await registerServer("epsilon");
	const { key } = await createKey({ servers: [delta, epsilon] });
	const askedIds: unknown[] = [];
	const { client, transport } = await connectClient("/mcp", key, {
		capabilities: PEER_CAPABILITIES,
		setup: (peer: Client) => {
			peer.setRequestHandler(CreateMessageRequestSchema, async (request, extra) => {
				askedIds.push(extra.requestId);
				const question = request.params.messages[0]?.content;
				const asked = question && !Array.isArray(question) && question.type === "text" ? question.text : "?";
				return { role: "assistant", model: "test-model", content: { type: "text", text: `answer to ${asked}` } };
			});
			peer.setRequestHandler(ElicitRequestSchema, async (request, extra) => {
				askedIds.push(extra.requestId);
				return { action: "accept", content: { answer: `yes to ${request.params.message}` } };
			});
			peer.setRequestHandler(ListRootsRequestSchema, async (_request, extra) => {
				askedIds.push(extra.requestId);
				return { roots: [{ uri: "file:///work", name: "work" }] };
			});
		},
	});
	const text = async (name: string, args: Record<string, unknown> = {}) => {
		const result = await client.callTool({ name, arguments: args }, CallToolResultSchema);
		return (result.content as Array<{ text?: string }>)[0]?.text;
	};
	return { delta, epsilon, key, client, transport, askedIds, text, sessionId: () => transport.sessionId ?? "" };
}

/**
 * Waits until the edge listens on the member's GET stream for this gateway session (the member saw
 * that GET): only then do messages a member sends outside any request have a stream to go on.
 */
async function edgeListening(which: "delta" | "epsilon", gatewaySession: string, server: string): Promise<void> {
	await eventually(async () => {
		const upstreamSession = await upstreamSessionId(gatewaySession, server);
		return (
			upstreamSession != null &&
			(await upstreamLog(which)).some((entry) => entry.method === "GET" && entry.sessionId === upstreamSession)
		);
	}, `the edge listening on ${which}`);
}

/** Reads an SSE body until `until` holds for the text so far (or it ends); returns the text. */
async function readUntil(body: ReadableStream<Uint8Array> | null, until: (text: string) => boolean): Promise<string> {
	const reader = body?.getReader();
	const decoder = new TextDecoder();
	let text = "";
	for (;;) {
		const chunk = await reader?.read();
		if (!chunk || chunk.done) break;
		text += decoder.decode(chunk.value, { stream: true });
		if (until(text)) break;
	}
	await reader?.cancel();
	return text;
}

/** Each SSE event's id and JSON-RPC message, in order (events without data are left out). */
function events(text: string): Array<{ id: string | undefined; message: Record<string, unknown> }> {
	return text
		.split("\n\n")
		.map((block) => {
			const id = /^id: (.*)$/m.exec(block)?.[1];
			const data = /^data: (.+)$/m.exec(block)?.[1];
			return data ? { id, message: JSON.parse(data) as Record<string, unknown> } : null;
		})
		.filter((event) => event !== null);
}

describe("aggregate endpoints are full MCP peers", () => {
	it("members are initialized with the client's real capabilities", async () => {
		const { delta, epsilon, text, client } = await peerClient();
		for (const member of [delta, epsilon]) {
			const declared = JSON.parse((await text(`${member}__client_capabilities`)) ?? "{}");
			expect(declared).toMatchObject(PEER_CAPABILITIES);
		}
		await client.close();
	});

	it("sampling, elicitation and roots requests of two members reach the client under gateway-minted ids, and each answer returns to the member that asked", async () => {
		const { delta, epsilon, text, askedIds, client } = await peerClient();
		const answers = await Promise.all([
			text(`${delta}__ask_model`),
			text(`${epsilon}__ask_model`),
			text(`${delta}__ask_user`),
			text(`${epsilon}__ask_user`),
			text(`${delta}__list_roots`),
			text(`${epsilon}__list_roots`),
		]);
		expect(answers).toEqual([
			"delta heard: answer to question from delta",
			"epsilon heard: answer to question from epsilon",
			"delta got accept: yes to delta needs an answer",
			"epsilon got accept: yes to epsilon needs an answer",
			"delta sees file:///work",
			"epsilon sees file:///work",
		]);
		expect(askedIds).toHaveLength(6);
		for (const id of askedIds) expect(String(id)).toMatch(/^gw-[\w-]{22}$/);
		expect(new Set(askedIds).size).toBe(6);
		await client.close();
	});

	it("a member's request outside any call reaches the client on its GET stream under a minted id, and the answer returns to that member", async () => {
		const { epsilon, text, askedIds, client, sessionId } = await peerClient();
		await edgeListening("epsilon", sessionId(), epsilon);
		expect(await text(`${epsilon}__ask_model_unrelated`)).toBe("epsilon heard: answer to question from epsilon");
		expect(askedIds).toHaveLength(1);
		expect(String(askedIds[0])).toMatch(/^gw-[\w-]{22}$/);
		await client.close();
	});

	it("progress from two members at once reaches the client, each call's on its own token", async () => {
		const { delta, epsilon, client } = await peerClient();
		const seen = { delta: 0, epsilon: 0 };
		const call = (server: string, who: keyof typeof seen, steps: number) =>
			client.callTool({ name: `${server}__progress`, arguments: { steps } }, CallToolResultSchema, {
				onprogress: () => {
					seen[who]++;
				},
			});
		const [a, g] = await Promise.all([call(delta, "delta", 3), call(epsilon, "epsilon", 5)]);
		expect([a.content, g.content]).toEqual([
			[{ type: "text", text: "done in 3 steps" }],
			[{ type: "text", text: "done in 5 steps" }],
		]);
		expect(seen).toEqual({ delta: 3, epsilon: 5 });
		await client.close();
	});

	it("the client's progress on a member's request reaches that member, under the member's own token", async () => {
		const delta = await registerServer("delta");
		const { key } = await createKey({ servers: [delta] });
		const tokens: unknown[] = [];
		const { client } = await connectClient("/mcp", key, {
			capabilities: PEER_CAPABILITIES,
			setup: (peer: Client) => {
				peer.setRequestHandler(CreateMessageRequestSchema, async (request, extra) => {
					const progressToken = request.params._meta?.progressToken;
					tokens.push(progressToken);
					if (progressToken !== undefined) {
						for (const progress of [1, 2]) {
							await extra.sendNotification({ method: "notifications/progress", params: { progressToken, progress } });
						}
					}
					return { role: "assistant", model: "test-model", content: { type: "text", text: "done" } };
				});
			},
		});
		const result = await client.callTool({ name: `${delta}__ask_model_progress`, arguments: {} }, CallToolResultSchema);
		expect(result.content).toEqual([{ type: "text", text: "delta saw 2 progress" }]);
		expect(String(tokens[0])).toMatch(/^gw-[\w-]{22}$/);
		await client.close();
	});

	it("resources/subscribe goes to the member that owns the URI, and its resources/updated reaches the client's GET stream", async () => {
		const delta = await registerServer("delta");
		const epsilon = await registerServer("epsilon");
		const { key } = await createKey({ servers: [delta, epsilon] });
		const updated: string[] = [];
		const { client, transport } = await connectClient("/mcp", key, {
			setup: (peer: Client) => {
				peer.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => {
					updated.push(notification.params.uri);
				});
			},
		});
		const before = (await upstreamLog("epsilon")).length;
		await client.subscribeResource({ uri: "demo://delta/readme" });
		const subscribes = (await upstreamLog("delta")).filter((entry) => entry.body?.method === "resources/subscribe");
		expect(subscribes.at(-1)?.body?.params).toMatchObject({ uri: "demo://delta/readme" });
		expect(
			(await upstreamLog("epsilon")).slice(before).some((entry) => entry.body?.method === "resources/subscribe"),
		).toBe(false);
		// The client's GET stream is carried by the edge, which listens on the members' streams.
		await edgeListening("delta", transport.sessionId ?? "", delta);
		const touched = await client.callTool({
			name: `${delta}__touch_resource`,
			arguments: { uri: "demo://delta/readme" },
		});
		expect(touched.content).toEqual([{ type: "text", text: "delta told subscribers of demo://delta/readme" }]);
		await eventually(async () => updated.length === 1, "the update on the client's GET stream");
		expect(updated).toEqual(["demo://delta/readme"]);
		await client.close();
	});

	it("a member's log message reaches the client labelled with the member, and the client's roots change reaches every member", async () => {
		const { epsilon, text, client, sessionId } = await peerClient();
		const logged: Array<{ logger?: string; data: unknown }> = [];
		client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
			logged.push({ logger: notification.params.logger, data: notification.params.data });
		});
		// Log messages outside any request travel on the member's GET stream, which the edge listens to.
		await edgeListening("epsilon", sessionId(), epsilon);
		await text(`${epsilon}__announce`, { count: 2, tag: "labelled" });
		await eventually(async () => logged.length >= 2, "the member's log messages on the client's stream");
		expect(logged).toEqual([
			{ logger: `${epsilon}/announcer`, data: "labelled 1" },
			{ logger: `${epsilon}/announcer`, data: "labelled 2" },
		]);
		const before = await Promise.all([upstreamLog("delta"), upstreamLog("epsilon")]);
		await client.sendRootsListChanged();
		for (const [i, which] of (["delta", "epsilon"] as const).entries()) {
			await eventually(
				async () =>
					(await upstreamLog(which))
						.slice(before[i]?.length ?? 0)
						.some((entry) => entry.body?.method === "notifications/roots/list_changed"),
				`${which} told of the roots change`,
			);
		}
		await client.close();
	});

	it("a client response with an id the session never sent changes nothing: 202, and the session's requests still work", async () => {
		const delta = await registerServer("delta");
		const { key } = await createKey({ servers: [delta] });
		const sessionId = await openSession("/mcp", key);
		for (const id of ["gw-AAAAAAAAAAAAAAAAAAAAAA", 7, "not-ours"]) {
			const response = await rpc("/mcp", key, sessionId, { jsonrpc: "2.0", id, result: {} });
			expect(response.status).toBe(202);
		}
		const stub = await sessionObject(sessionId);
		expect(await runInDurableObject(stub, (instance: SessionDO) => instance.requests.size)).toBe(0);
		const ping = await readReply(await rpc("/mcp", key, sessionId, { jsonrpc: "2.0", id: 9, method: "ping" }));
		expect(ping.result).toEqual({});
	});
});

describe("aggregate streams are resumable", () => {
	it("a client that disconnects mid-call keeps the call running and gets its result by resuming with Last-Event-ID", async () => {
		const delta = await registerServer("delta");
		const { key } = await createKey({ servers: [delta] });
		const sessionId = await openSession("/mcp", key);
		const gate = upstreamGate("delta");
		await rpc("/mcp", key, sessionId, { jsonrpc: "2.0", id: 1, method: "tools/list" });
		const call = await rpc("/mcp", key, sessionId, {
			jsonrpc: "2.0",
			id: 2,
			method: "tools/call",
			params: { name: `${delta}__gate`, arguments: { name: gate.name }, _meta: { progressToken: "p" } },
		});
		expect(call.headers.get("content-type")).toContain("text/event-stream");
		// The priming event and the progress of the call arrive; then the client's connection drops.
		const seen = await readUntil(call.body, (text) => text.includes("notifications/progress"));
		expect(seen).toMatch(/^id: p[\w-]{11}-0\nretry: \d+\ndata: \n\n/);
		const lastId = events(seen).at(-1)?.id ?? "";
		expect(lastId).toMatch(/^p[\w-]{11}-1$/);
		await gate.release();
		const resumed = await gatewayFetch("/mcp", {
			headers: mcpHeaders(key, sessionId, { accept: "text/event-stream", "last-event-id": lastId }),
		});
		expect(resumed.status).toBe(200);
		const missed = events(await resumed.text());
		expect(missed.map((event) => event.id)).toEqual([lastId.replace(/-1$/, "-2")]);
		expect(missed[0]?.message).toMatchObject({ id: 2, result: { content: [{ text: `gate ${gate.name} passed` }] } });
	});

	it("a finished call's stream is resumed from storage after the session's object was evicted", async () => {
		const delta = await registerServer("delta");
		const { key } = await createKey({ servers: [delta] });
		const sessionId = await openSession("/mcp", key);
		const call = await rpc("/mcp", key, sessionId, {
			jsonrpc: "2.0",
			id: 5,
			method: "tools/call",
			params: { name: `${delta}__whoami` },
		});
		const primed = events(await call.text());
		expect(primed).toHaveLength(1);
		const streamId = (primed[0]?.id ?? "").replace(/-1$/, "");
		// The call's stream ended: its events were written then, before the object could fall idle.
		await evictDurableObject(await sessionObject(sessionId));
		const resumed = await gatewayFetch("/mcp", {
			headers: mcpHeaders(key, sessionId, { accept: "text/event-stream", "last-event-id": `${streamId}-0` }),
		});
		const replay = events(await resumed.text());
		expect(replay.map((event) => event.id)).toEqual([`${streamId}-1`]);
		expect(replay[0]?.message).toMatchObject({ id: 5, result: { content: [{ text: "delta" }] } });
	});

	it("a listening stream resumed with Last-Event-ID receives exactly the events it missed, never another stream's", async () => {
		const delta = await registerServer("delta");
		const { key } = await createKey({ servers: [delta] });
		const sessionId = await openSession("/mcp", key);
		await rpc("/mcp", key, sessionId, { jsonrpc: "2.0", id: 1, method: "tools/list" });
		const listening = await gatewayFetch("/mcp", {
			headers: mcpHeaders(key, sessionId, { accept: "text/event-stream" }),
		});
		expect(listening.status).toBe(200);
		const reading = readUntil(listening.body, (text) => text.includes("missed 3"));
		await edgeListening("delta", sessionId, delta);
		// A call of its own runs meanwhile: its events are on its own stream.
		const announced = await readReply(
			await rpc("/mcp", key, sessionId, {
				jsonrpc: "2.0",
				id: 2,
				method: "tools/call",
				params: { name: `${delta}__announce`, arguments: { count: 3, tag: "missed" } },
			}),
		);
		expect(announced.result?.content).toEqual([{ type: "text", text: "delta announced 3" }]);
		const got = events(await reading);
		const logs = got.filter((event) => event.message.method === "notifications/message");
		expect(logs.map((event) => (event.message.params as { data: string }).data)).toEqual([
			"missed 1",
			"missed 2",
			"missed 3",
		]);
		// The client saw only the first before its connection dropped.
		const resumed = await gatewayFetch("/mcp", {
			headers: mcpHeaders(key, sessionId, { accept: "text/event-stream", "last-event-id": logs[0]?.id ?? "" }),
		});
		const again = events(await readUntil(resumed.body, (text) => text.includes("missed 3")));
		expect(again.map((event) => event.id)).toEqual([logs[1]?.id, logs[2]?.id]);
		expect(again.map((event) => (event.message.params as { data: string }).data)).toEqual(["missed 2", "missed 3"]);
	});

	it("a Last-Event-ID that is malformed or from another session starts a fresh stream, with a new id and a comment saying so", async () => {
		const delta = await registerServer("delta");
		const { key } = await createKey({ servers: [delta] });
		const first = await openSession("/mcp", key);
		const second = await openSession("/mcp", key);
		const call = await rpc("/mcp", key, first, {
			jsonrpc: "2.0",
			id: 2,
			method: "tools/call",
			params: { name: `${delta}__whoami` },
		});
		const foreignId = events(await call.text()).at(-1)?.id ?? "";
		expect(foreignId).toMatch(/^p[\w-]{11}-1$/);
		for (const lastEventId of ["garbage", foreignId, "g00000000000-5"]) {
			const resumed = await gatewayFetch("/mcp", {
				headers: mcpHeaders(key, second, { accept: "text/event-stream", "last-event-id": lastEventId }),
			});
			expect(resumed.status).toBe(200);
			const text = await readUntil(resumed.body, (so) => so.includes("retry:"));
			expect(text).toContain(": Last-Event-ID not resumable; this is a new stream");
			expect(text).toMatch(/id: g[\w-]{11}-0\nretry: \d+\ndata: \n\n/);
			expect(text).not.toContain("delta");
		}
	});
});

describe("members' requests to the client are bounded and cleaned", () => {
	it("a member asking more than its share at once gets refusals for the excess; the other member and the session are unaffected, and nothing stays pending after the call", async () => {
		let held = 0;
		let release: () => void = () => {};
		const released = new Promise<void>((resolve) => {
			release = resolve;
		});
		const delta = await registerServer("delta");
		const epsilon = await registerServer("epsilon");
		const { key } = await createKey({ servers: [delta, epsilon] });
		const { client, transport } = await connectClient("/mcp", key, {
			capabilities: PEER_CAPABILITIES,
			setup: (peer: Client) => {
				peer.setRequestHandler(CreateMessageRequestSchema, async (request) => {
					const asked = request.params.messages[0]?.content;
					const fromEpsilon = asked && !Array.isArray(asked) && asked.type === "text" && asked.text.includes("epsilon");
					if (!fromEpsilon) {
						held++;
						await released;
					}
					return { role: "assistant", model: "test-model", content: { type: "text", text: "ok" } };
				});
			},
		});
		const call = (name: string, args: Record<string, unknown> = {}) =>
			client.callTool({ name, arguments: args }, CallToolResultSchema, { timeout: 30_000 });
		const flood = call(`${delta}__ask_model_many`, { count: 40 });
		await eventually(async () => held === 32, "the member's first 32 questions held by the client");
		const other = await call(`${epsilon}__ask_model`);
		expect(other.content).toEqual([{ type: "text", text: "epsilon heard: ok" }]);
		release();
		const outcome = (await flood).content as Array<{ text: string }>;
		expect(outcome[0]?.text).toMatch(/^32 answered, 8 refused: .*too many requests to the client are waiting/);
		expect(held).toBe(32);
		const stub = await sessionObject(transport.sessionId ?? "");
		expect(await runInDurableObject(stub, (instance: SessionDO) => instance.requests.size)).toBe(0);
		await client.close();
	});

	it("a member cancelling its request reaches the client under the minted id, and the request is no longer pending", async () => {
		const delta = await registerServer("delta");
		const { key } = await createKey({ servers: [delta] });
		const gate = upstreamGate("delta");
		let asked = false;
		let aborted = false;
		const { client, transport } = await connectClient("/mcp", key, {
			capabilities: PEER_CAPABILITIES,
			setup: (peer: Client) => {
				peer.setRequestHandler(
					CreateMessageRequestSchema,
					(_request, extra) =>
						new Promise((_resolve, reject) => {
							asked = true;
							extra.signal.addEventListener("abort", () => {
								aborted = true;
								reject(new Error("cancelled by the server"));
							});
						}),
				);
			},
		});
		const call = client.callTool(
			{ name: `${delta}__ask_then_cancel`, arguments: { gate: gate.name } },
			CallToolResultSchema,
		);
		await eventually(async () => asked, "the question reaching the client");
		await gate.release();
		expect((await call).content).toEqual([{ type: "text", text: "delta question cancelled" }]);
		await eventually(async () => aborted, "the client told of the cancellation");
		const stub = await sessionObject(transport.sessionId ?? "");
		expect(await runInDurableObject(stub, (instance: SessionDO) => instance.requests.size)).toBe(0);
		await client.close();
	});

	it("URL-mode elicitation reaches the client, and its completion notification follows on the call's stream", async () => {
		const delta = await registerServer("delta");
		const { key } = await createKey({ servers: [delta] });
		const completed: string[] = [];
		const { client } = await connectClient("/mcp", key, {
			capabilities: { elicitation: { form: {}, url: {} } },
			setup: (peer: Client) => {
				peer.setRequestHandler(ElicitRequestSchema, async (request) => {
					expect(request.params).toMatchObject({ mode: "url", url: "https://consent.example/delta" });
					return { action: "accept" };
				});
				peer.setNotificationHandler(ElicitationCompleteNotificationSchema, (notification) => {
					completed.push(notification.params.elicitationId);
				});
			},
		});
		const result = await client.callTool({ name: `${delta}__ask_url`, arguments: {} }, CallToolResultSchema);
		expect(result.content).toEqual([{ type: "text", text: "delta url accept" }]);
		await eventually(async () => completed.length === 1, "the completion notification");
		expect(completed).toEqual(["delta-consent"]);
		await client.close();
	});
});

describe("listening windows", () => {
	it("a window replaced by the client's next one is over: the edge still holding it gets no frames of its successor", async () => {
		const delta = await registerServer("delta");
		const { key, id, userPath } = await createKey({ servers: [delta] });
		const sessionId = await openSession("/mcp", key);
		const scope = { keyId: id, userPath, endpoint: "/mcp" };
		const outcome = await runInDurableObject(await sessionObject(sessionId), async (instance: SessionDO) => {
			const first = await instance.listen(scope, null);
			if (first instanceof Response || first.kind !== "members") throw new Error("expected an aggregate window");
			const stream = /^id: (g[\w-]{11})-0$/m.exec(first.first)?.[1];
			const second = await instance.listen(scope, `${stream}-0`);
			if (second instanceof Response || second.kind !== "members") throw new Error("expected an aggregate window");
			return {
				resumedSameStream: second.first.includes("retry:") && !second.first.includes("not resumable"),
				old: (await instance.listenCollect(scope, first.window)).frames,
				current: (await instance.listenCollect(scope, second.window)).frames,
			};
		});
		expect(outcome).toEqual({ resumedSameStream: true, old: null, current: "" });
	});
});
