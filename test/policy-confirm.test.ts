import { runInDurableObject } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from "@modelcontextprotocol/client";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ElicitRequestSchema, type ElicitResult } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { argumentSummary, MAX_SUMMARY_CHARS } from "../src/governance/call-confirmation.ts";
import { compilePolicies, policyVerdict } from "../src/governance/policies.ts";
import type { PolicyRecord } from "../src/registry/policy-records.ts";
import { admin, BASE, connectClient, createKey, openSession, rpc, uniqueName } from "./support/gateway.ts";
import { testPolicies, uniqueArgs } from "./support/held-calls.ts";
import { ENVELOPE, MODERN, modernPost, textOf } from "./support/modern.ts";
import { manualTime, sessionObject } from "./support/session-object.ts";
import { eventReader } from "./support/sse-events.ts";
import { TASKS_CLIENT } from "./support/tasks.ts";
import { toolCallsOf, type UpstreamName, upstreamUrl } from "./support/upstreams.ts";

/**
 * `effect: "confirm"` (decision 0110): a call a confirm policy holds is sent
 * only once its caller confirms it, asked as a form elicitation on the call's
 * stream (2025-11-25) or as `input_required` (2026-07-28). SDK clients of both
 * eras answer; the upstream's whole log says what reached it. Every policy
 * names its test's own server (policies are global) and is deleted after it.
 */

const policy = testPolicies("confirm");

async function server(which: UpstreamName = "beta"): Promise<string> {
	const name = uniqueName("confirming");
	const response = await admin("PUT", `/servers/${name}`, { url: upstreamUrl(which) });
	if (response.status !== 201) throw new Error(`server: ${await response.text()}`);
	return name;
}

type Answer = ElicitResult["action"] | "accept-false";

/** What the client was asked, in order. */
interface Asked {
	messages: string[];
}

function answerOf(answer: Answer): ElicitResult {
	if (answer === "accept") return { action: "accept", content: { confirm: true } };
	if (answer === "accept-false") return { action: "accept", content: { confirm: false } };
	return { action: answer };
}

/** A 2025-11-25 SDK client that declares form elicitation and answers every one with `answer`. */
async function legacyClient(path: string, key: string, answer: Answer): Promise<{ client: Client; asked: Asked }> {
	const asked: Asked = { messages: [] };
	const { client } = await connectClient(path, key, {
		capabilities: { elicitation: { form: {} } },
		setup: (peer) =>
			peer.setRequestHandler(ElicitRequestSchema, async (request) => {
				asked.messages.push(request.params.message);
				return answerOf(answer);
			}),
	});
	return { client, asked };
}

/** An SDK v2 client pinned to 2026-07-28 that declares form elicitation and answers every one with `answer`. */
async function modernClient(
	path: string,
	key: string,
	answer: Answer,
): Promise<{ client: ModernClient; asked: Asked }> {
	const asked: Asked = { messages: [] };
	const client = new ModernClient(
		{ name: "confirm-test", version: "2.0.0" },
		{ capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: MODERN } } },
	);
	client.setRequestHandler("elicitation/create", async (request) => {
		asked.messages.push(String(request.params.message));
		return answerOf(answer);
	});
	await client.connect(
		new ModernTransport(new URL(`${BASE}${path}`), {
			fetch: (url, init) => exports.default.fetch(new Request(url, init)),
			requestInit: { headers: { authorization: `Bearer ${key}` } },
		}),
	);
	return { client, asked };
}

const NOT_CONFIRMED = /was not confirmed, so the gateway did not send it/;

describe("policy verdicts: deny > confirm > allow", () => {
	const record = (name: string, effect: PolicyRecord["effect"], expression: string): PolicyRecord => ({
		name,
		effect,
		expression,
		applies: null,
		priority: 100,
		createdAt: 0,
		updatedAt: 0,
	});
	const request = {
		principal: {
			kind: "key" as const,
			id: "key_abcdefghijkl",
			subject: null,
			email: null,
			groups: [],
			rule: null,
			keyName: null,
		},
		server: "s",
		virtualServer: null,
		tool: { name: "delete_repo", realName: "delete_repo", annotations: {} },
		method: "tools/call",
		now: 0,
	};

	it("a confirm that holds allows the call, naming the first confirm policy; a deny that holds refuses it without asking", () => {
		const confirming = compilePolicies([record("b-ask", "confirm", "true"), record("a-ask", "confirm", "true")]);
		expect(policyVerdict(confirming, request)).toEqual({ allowed: true, confirm: "a-ask" });
		const denying = compilePolicies([record("ask", "confirm", "true"), record("no", "deny", "true")]);
		expect(policyVerdict(denying, request)).toEqual({ allowed: false, policy: "no" });
		const notHolding = compilePolicies([record("ask", "confirm", "false")]);
		expect(policyVerdict(notHolding, request)).toEqual({ allowed: true });
	});

	it("a confirm that holds does not satisfy an allow policy that does not", () => {
		const compiled = compilePolicies([record("ask", "confirm", "true"), record("only", "allow", "false")]);
		expect(policyVerdict(compiled, request)).toEqual({ allowed: false, policy: "only" });
	});

	it(`the arguments' summary is stable JSON, cut to ${MAX_SUMMARY_CHARS} characters with an ellipsis`, () => {
		expect(argumentSummary({ b: 1, a: "x" })).toBe('{"a":"x","b":1}');
		const long = argumentSummary({ text: "y".repeat(5_000) });
		expect(long).toHaveLength(MAX_SUMMARY_CHARS);
		expect(long.endsWith("…")).toBe(true);
		expect(long.startsWith('{"text":"yyy')).toBe(true);
	});
});

describe("PUT /admin/policies accepts effect confirm", () => {
	it("stores and publishes a confirm policy, and refuses an unknown effect with a sentence naming the four", async () => {
		const name = await policy({ expression: "tool.annotations.destructiveHint", effect: "confirm" });
		const read = (await (await admin("GET", `/policies/${name}`)).json()) as { effect: string };
		expect(read.effect).toBe("confirm");
		const refused = await admin("PUT", `/policies/${uniqueName("confirm")}`, { expression: "true", effect: "ask" });
		expect(refused.status).toBe(400);
		expect(await refused.text()).toContain('must be \\"allow\\", \\"deny\\", \\"confirm\\" or \\"approve\\"');
	});
});

describe("a 2025-11-25 client confirms a call on /mcp/<server>", () => {
	it("declined: the call is refused with a sentence and nothing reaches the upstream; the question named the tool, the server and the arguments", async () => {
		const name = await server();
		const confirming = await policy({
			expression: 'tool.name == "add"',
			effect: "confirm",
			applies: { servers: [name] },
		});
		const key = await createKey({ servers: [name] });
		const { client, asked } = await legacyClient(`/mcp/${name}`, key.key, "decline");
		const args = uniqueArgs();
		const refused = await client.callTool({ name: "add", arguments: args }).catch((error: unknown) => error);
		expect(String(refused)).toMatch(NOT_CONFIRMED);
		expect(asked.messages).toHaveLength(1);
		expect(asked.messages[0]).toContain("tool 'add'");
		expect(asked.messages[0]).toContain(`server '${name}'`);
		expect(asked.messages[0]).toContain(`{"a":${args.a},"b":2}`);
		expect(asked.messages[0]).toContain(`policy '${confirming}'`);
		expect(await toolCallsOf("beta", "add", args)).toEqual([]);
		await client.close();
	});

	it("cancelled, or accepted with the field false: refused, nothing reaches the upstream", async () => {
		const name = await server();
		await policy({ expression: 'tool.name == "add"', effect: "confirm", applies: { servers: [name] } });
		const key = await createKey({ servers: [name] });
		for (const answer of ["cancel", "accept-false"] as const) {
			const { client } = await legacyClient(`/mcp/${name}`, key.key, answer);
			const args = uniqueArgs();
			const refused = await client.callTool({ name: "add", arguments: args }).catch((error: unknown) => error);
			expect(String(refused)).toMatch(NOT_CONFIRMED);
			expect(await toolCallsOf("beta", "add", args)).toEqual([]);
			await client.close();
		}
	});

	it("accepted: the call is sent exactly once and its result answers the client", async () => {
		const name = await server();
		await policy({ expression: 'tool.name == "add"', effect: "confirm", applies: { servers: [name] } });
		const key = await createKey({ servers: [name] });
		const { client, asked } = await legacyClient(`/mcp/${name}`, key.key, "accept");
		const args = uniqueArgs();
		const result = await client.callTool({ name: "add", arguments: args });
		expect(textOf(result)).toBe(String(args.a + args.b));
		expect(asked.messages).toHaveLength(1);
		expect(await toolCallsOf("beta", "add", args)).toHaveLength(1);
		// A tool no confirm policy holds is not asked about.
		expect(textOf(await client.callTool({ name: "echo", arguments: { text: "plain" } }))).toContain("plain");
		expect(asked.messages).toHaveLength(1);
		await client.close();
	});

	it("a client without the elicitation capability is refused with a sentence saying a confirmation was required; nothing is sent", async () => {
		const name = await server();
		await policy({ expression: 'tool.name == "add"', effect: "confirm", applies: { servers: [name] } });
		const key = await createKey({ servers: [name] });
		const { client } = await connectClient(`/mcp/${name}`, key.key);
		const args = uniqueArgs();
		const refused = await client.callTool({ name: "add", arguments: args }).catch((error: unknown) => error);
		expect(String(refused)).toMatch(/requires a confirmation of each call of 'add'.*cannot answer elicitations/);
		expect(await toolCallsOf("beta", "add", args)).toEqual([]);
		await client.close();
	});

	it("the documented policy (destructive tools, for people) does not ask keys: their call goes straight through", async () => {
		const name = await server();
		await policy({
			expression: 'tool.annotations.destructiveHint == true && principal.kind == "person"',
			effect: "confirm",
			applies: { servers: [name] },
		});
		const key = await createKey({ servers: [name] });
		// No elicitation capability: asking would refuse the call.
		const { client } = await connectClient(`/mcp/${name}`, key.key);
		const args = uniqueArgs();
		expect(textOf(await client.callTool({ name: "add", arguments: args }))).toBe(String(args.a + args.b));
		expect(await toolCallsOf("beta", "add", args)).toHaveLength(1);
		await client.close();
	});

	it("a deny that holds as well refuses the call naming the deny, without asking", async () => {
		const name = await server();
		await policy({ expression: 'tool.name == "add"', effect: "confirm", applies: { servers: [name] } });
		const denying = await policy({ expression: 'tool.name == "add"', effect: "deny", applies: { servers: [name] } });
		const key = await createKey({ servers: [name] });
		const { client, asked } = await legacyClient(`/mcp/${name}`, key.key, "accept");
		const args = uniqueArgs();
		const refused = await client.callTool({ name: "add", arguments: args }).catch((error: unknown) => error);
		expect(String(refused)).toContain(`policy '${denying}'`);
		expect(asked.messages).toEqual([]);
		expect(await toolCallsOf("beta", "add", args)).toEqual([]);
		await client.close();
	});
});

describe("a question nobody answers (2025-11-25, raw, the session on manual timers)", () => {
	it("once the server's timeout passes the call is refused with the sentence, and a late accept sends nothing", async () => {
		const name = await server();
		await policy({ expression: 'tool.name == "add"', effect: "confirm", applies: { servers: [name] } });
		const key = await createKey({ servers: [name] });
		const path = `/mcp/${name}`;
		const sessionId = await openSession(path, key.key, {}, { elicitation: { form: {} } });
		const stub = await sessionObject(sessionId);
		const { clock, timers } = await manualTime(stub);
		const args = uniqueArgs();
		const call = { jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "add", arguments: args } };
		const response = await rpc(path, key.key, sessionId, call);
		expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
		const events = eventReader<{ id?: unknown; method?: string; error?: { message: string } }>(
			response.body ?? new ReadableStream(),
		);
		const question = await events.next();
		expect(question.method).toBe("elicitation/create");
		// Past the server's timeout (at most an hour): the wait for the answer ends.
		clock.advance(3_600_000 + 1);
		await runInDurableObject(stub, () => timers.runDue());
		const answer = await events.next();
		expect(answer.id).toBe(7);
		expect(answer.error?.message).toMatch(NOT_CONFIRMED);
		const late = await rpc(path, key.key, sessionId, {
			jsonrpc: "2.0",
			id: question.id,
			result: { action: "accept", content: { confirm: true } },
		});
		expect(late.status).toBe(202);
		expect(await toolCallsOf("beta", "add", args)).toEqual([]);
	});
});

describe("confirmation on aggregates, virtual servers and search mode (2025-11-25)", () => {
	it("on /mcp: declined sends nothing, accepted sends server__add once", async () => {
		const name = await server();
		await policy({ expression: 'tool.name == "add"', effect: "confirm", applies: { servers: [name] } });
		const key = await createKey({ servers: [name] });
		const declining = await legacyClient("/mcp", key.key, "decline");
		const declined = uniqueArgs();
		const refused = await declining.client
			.callTool({ name: `${name}__add`, arguments: declined })
			.catch((error: unknown) => error);
		expect(String(refused)).toMatch(NOT_CONFIRMED);
		expect(declining.asked.messages[0]).toContain(`server '${name}'`);
		await declining.client.close();
		const accepting = await legacyClient("/mcp", key.key, "accept");
		const accepted = uniqueArgs();
		const result = await accepting.client.callTool({ name: `${name}__add`, arguments: accepted });
		expect(textOf(result)).toBe(String(accepted.a + accepted.b));
		await accepting.client.close();
		expect(await toolCallsOf("beta", "add", declined)).toEqual([]);
		expect(await toolCallsOf("beta", "add", accepted)).toHaveLength(1);
	});

	it("on a virtual server: declined sends nothing, accepted sends the call once", async () => {
		const name = await server();
		const virtual = uniqueName("confirm-virtual");
		const put = await admin("PUT", `/virtual-servers/${virtual}`, { servers: [name] });
		expect(put.status).toBe(201);
		await policy({ expression: 'tool.name == "add"', effect: "confirm", applies: { virtualServers: [virtual] } });
		const key = await createKey({ servers: [virtual] });
		const declining = await legacyClient(`/mcp/${virtual}`, key.key, "decline");
		const tools = (await declining.client.listTools()).tools.map((tool) => tool.name);
		const addName = tools.find((tool) => tool.endsWith("add")) ?? "add";
		const declined = uniqueArgs();
		const refused = await declining.client
			.callTool({ name: addName, arguments: declined })
			.catch((error: unknown) => error);
		expect(String(refused)).toMatch(NOT_CONFIRMED);
		await declining.client.close();
		const accepting = await legacyClient(`/mcp/${virtual}`, key.key, "accept");
		const accepted = uniqueArgs();
		expect(textOf(await accepting.client.callTool({ name: addName, arguments: accepted }))).toBe(
			String(accepted.a + accepted.b),
		);
		await accepting.client.close();
		expect(await toolCallsOf("beta", "add", declined)).toEqual([]);
		expect(await toolCallsOf("beta", "add", accepted)).toHaveLength(1);
	});

	it("search mode: call_tool of a held tool asks first; declined sends nothing, accepted sends it once", async () => {
		const name = await server();
		await policy({ expression: 'tool.name == "add"', effect: "confirm", applies: { servers: [name] } });
		const key = await createKey({ servers: [name], disclosure: "search" });
		const declining = await legacyClient("/mcp", key.key, "decline");
		const declined = uniqueArgs();
		const refused = await declining.client
			.callTool({ name: "call_tool", arguments: { name: `${name}__add`, arguments: declined } })
			.catch((error: unknown) => error);
		expect(String(refused)).toMatch(NOT_CONFIRMED);
		expect(declining.asked.messages[0]).toContain("tool 'add'");
		await declining.client.close();
		const accepting = await legacyClient("/mcp", key.key, "accept");
		const accepted = uniqueArgs();
		const result = await accepting.client.callTool({
			name: "call_tool",
			arguments: { name: `${name}__add`, arguments: accepted },
		});
		expect(textOf(result)).toBe(String(accepted.a + accepted.b));
		await accepting.client.close();
		expect(await toolCallsOf("beta", "add", declined)).toEqual([]);
		expect(await toolCallsOf("beta", "add", accepted)).toHaveLength(1);
	});
});

describe("a 2026-07-28 client confirms through input_required", () => {
	for (const upstream of ["beta", "modern"] as const) {
		const path =
			upstream === "beta" ? "a 2025 upstream (the bridge)" : "a 2026-07-28 upstream (the edge hands it to a session)";
		it(`${path}: declined sends nothing, accepted sends the call exactly once`, async () => {
			const name = await server(upstream);
			await policy({ expression: 'tool.name == "add"', effect: "confirm", applies: { servers: [name] } });
			const key = await createKey({ servers: [name] });
			const declining = await modernClient(`/mcp/${name}`, key.key, "decline");
			const declined = uniqueArgs();
			const refused = await declining.client
				.callTool({ name: "add", arguments: declined })
				.catch((error: unknown) => error);
			expect(String(refused)).toMatch(NOT_CONFIRMED);
			expect(declining.asked.messages).toHaveLength(1);
			expect(declining.asked.messages[0]).toContain(`server '${name}'`);
			await declining.client.close();
			const accepting = await modernClient(`/mcp/${name}`, key.key, "accept");
			const accepted = uniqueArgs();
			expect(textOf(await accepting.client.callTool({ name: "add", arguments: accepted }))).toBe(
				String(accepted.a + accepted.b),
			);
			await accepting.client.close();
			expect(await toolCallsOf(upstream, "add", declined)).toEqual([]);
			expect(await toolCallsOf(upstream, "add", accepted)).toHaveLength(1);
		});
	}

	it("a retry whose arguments differ from the question's is refused, and neither call reaches the upstream", async () => {
		const name = await server();
		await policy({ expression: 'tool.name == "add"', effect: "confirm", applies: { servers: [name] } });
		const key = await createKey({ servers: [name] });
		const envelope = { ...ENVELOPE, "io.modelcontextprotocol/clientCapabilities": { elicitation: { form: {} } } };
		const asked = uniqueArgs();
		const first = await modernPost(`/mcp/${name}`, key.key, {
			id: 1,
			method: "tools/call",
			params: { name: "add", arguments: asked, _meta: envelope },
		});
		const round = await resultOf(first);
		expect(round.resultType).toBe("input_required");
		const questions = Object.entries(round.inputRequests as Record<string, { method: string }>);
		expect(questions.map(([, question]) => question.method)).toEqual(["elicitation/create"]);
		const input = questions[0]?.[0] ?? "";
		const other = uniqueArgs();
		const retry = await modernPost(`/mcp/${name}`, key.key, {
			id: 2,
			method: "tools/call",
			params: {
				name: "add",
				arguments: other,
				_meta: envelope,
				requestState: round.requestState,
				inputResponses: { [String(input)]: { action: "accept", content: { confirm: true } } },
			},
		});
		const refused = (await retry.json()) as { error?: { code: number; message: string } };
		expect(refused.error?.code).toBe(-32602);
		expect(refused.error?.message).toContain("requestState was not issued by this gateway for this request");
		expect(await toolCallsOf("beta", "add", asked)).toEqual([]);
		expect(await toolCallsOf("beta", "add", other)).toEqual([]);
	});

	it("a 2026-07-28 client that declares no elicitation is refused with the sentence; nothing is sent", async () => {
		const name = await server("modern");
		await policy({ expression: 'tool.name == "add"', effect: "confirm", applies: { servers: [name] } });
		const key = await createKey({ servers: [name] });
		const args = uniqueArgs();
		const response = await modernPost(`/mcp/${name}`, key.key, {
			id: 1,
			method: "tools/call",
			params: { name: "add", arguments: args, _meta: ENVELOPE },
		});
		const reply = (await response.json()) as { error?: { message: string } };
		expect(reply.error?.message).toMatch(/requires a confirmation of each call of 'add'/);
		expect(await toolCallsOf("modern", "add", args)).toEqual([]);
	});
});

/** The result of a 2026-07-28 reply, JSON or one SSE event. */
async function resultOf(response: Response): Promise<Record<string, unknown>> {
	const text = await response.text();
	const data = (response.headers.get("content-type") ?? "").startsWith("text/event-stream")
		? text
				.split("\n")
				.filter((line) => line.startsWith("data:"))
				.map((line) => line.slice(5).trim())
				.filter((line) => line.length > 0)
				.at(-1)
		: text;
	const message = JSON.parse(data ?? "{}") as { result?: Record<string, unknown>; error?: unknown };
	if (!message.result) throw new Error(`no result: ${text}`);
	return message.result;
}

describe("a task-augmented call (2025-11-25, the gateway holding the task)", () => {
	for (const answer of ["accept", "decline"] as const) {
		it(`${answer === "accept" ? "accepted: the task completes with the call's result, sent once" : "declined: the task ends refused and nothing reaches the upstream"}`, async () => {
			const name = await server();
			await policy({ expression: 'tool.name == "add"', effect: "confirm", applies: { servers: [name] } });
			const key = await createKey({ servers: [name] });
			const asked: string[] = [];
			const { client } = await connectClient(`/mcp/${name}`, key.key, {
				capabilities: { ...TASKS_CLIENT, elicitation: { form: {} } },
				setup: (peer) =>
					peer.setRequestHandler(ElicitRequestSchema, async (request) => {
						asked.push(request.params.message);
						return answerOf(answer);
					}),
			});
			await client.listTools();
			const args = uniqueArgs();
			const seen: string[] = [];
			let outcome: unknown;
			for await (const message of client.experimental.tasks.callToolStream({ name: "add", arguments: args })) {
				seen.push(message.type === "taskStatus" ? message.task.status : message.type);
				if (message.type === "result") outcome = message.result;
				if (message.type === "error") outcome = message.error;
			}
			expect(seen[0]).toBe("taskCreated");
			expect(asked).toHaveLength(1);
			expect(asked[0]).toContain("tool 'add'");
			if (answer === "accept") {
				expect(textOf(outcome as object)).toBe(String(args.a + args.b));
				expect(await toolCallsOf("beta", "add", args)).toHaveLength(1);
			} else {
				expect(String(outcome)).toMatch(NOT_CONFIRMED);
				expect(await toolCallsOf("beta", "add", args)).toEqual([]);
			}
			await client.close();
		});
	}
});
