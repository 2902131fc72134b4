import { exports } from "cloudflare:workers";
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from "@modelcontextprotocol/client";
import { CallToolResultSchema, ElicitRequestSchema, type Tool } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, inject, it, vi } from "vitest";
import { buildToolIndex, MAX_QUERY_CHARS, MAX_WORD_CHARS } from "../src/mcp/tool-search.ts";
import { type CallableTools, ToolDisclosure } from "../src/session/aggregate/tool-disclosure.ts";
import { eventually } from "./support/eventually.ts";
import {
	admin,
	BASE,
	connectClient,
	createKey,
	openSession,
	type RpcReply,
	readReply,
	rpc,
	uniqueName,
} from "./support/gateway.ts";
import { parsedCall } from "./support/messages.ts";
import { ENVELOPE, MODERN, modernPost } from "./support/modern.ts";
import { gatewayWith, oauthClient, signInAs, testAccessRules } from "./support/oauth-client.ts";
import {
	putCatalog,
	registerServer,
	toolCallsOf,
	upstreamGate,
	upstreamLog,
	upstreamUrl,
} from "./support/upstreams.ts";

/**
 * An aggregate in search mode (docs/tool-search.md): its list is the gateway's
 * search_tools and call_tool (and what alwaysList names); search ranks what
 * the caller may call, call_tool calls it as a direct call would. Both eras,
 * on /mcp of a key and on a virtual server. Policies here name their test's
 * own server and are deleted after it.
 */

const policies: string[] = [];
afterEach(async () => {
	for (const name of policies.splice(0)) await admin("DELETE", `/policies/${name}`);
	vi.restoreAllMocks();
});

async function denyPolicy(server: string, tool: string): Promise<string> {
	const name = uniqueName("policy");
	const response = await admin("PUT", `/policies/${name}`, {
		expression: `tool.name == "${tool}"`,
		effect: "deny",
		applies: { servers: [server] },
	});
	if (response.status !== 201) throw new Error(`policy: ${await response.text()}`);
	policies.push(name);
	return name;
}

async function virtualServer(body: Record<string, unknown>): Promise<string> {
	const name = uniqueName("searching");
	const response = await admin("PUT", `/virtual-servers/${name}`, body);
	if (response.status !== 201) throw new Error(`virtual server: ${await response.text()}`);
	return name;
}

/** A number no other test sends, so this test's call can be found in the shared upstream's log. */
function uniqueNumber(): number {
	return 1_000_000 + Math.floor(Math.random() * 1_000_000_000);
}

interface Found {
	name: string;
	title?: string;
	description?: string;
	inputSchema: Record<string, unknown>;
	annotations?: Record<string, unknown>;
}

/** What search_tools found, checked to say the same in its text as in its structured content. */
function foundIn(result: object): Found[] {
	const { structuredContent, content } = result as { structuredContent?: unknown; content?: unknown };
	const structured = structuredContent as { tools: Found[] };
	const [text] = content as Array<{ type: string; text: string }>;
	expect(JSON.parse(text?.text ?? "null")).toEqual(structured);
	return structured.tools;
}

/** Anything with an SDK client's callTool (SDK 1.32 or v2), as this file calls it. */
interface Caller {
	callTool(params: { name: string; arguments: Record<string, unknown> }): Promise<object>;
}

async function search(client: Caller, query: string, limit?: number): Promise<Found[]> {
	return foundIn(await client.callTool({ name: "search_tools", arguments: { query, ...(limit ? { limit } : {}) } }));
}

/** An SDK v2 client pinned to 2026-07-28, connected through the gateway. */
async function modernClient(
	path: string,
	key: string,
	capabilities: Record<string, unknown> = {},
	setup: (client: ModernClient) => void = () => {},
): Promise<ModernClient> {
	const transport = new ModernTransport(new URL(`${BASE}${path}`), {
		fetch: (url, init) => exports.default.fetch(new Request(url, init)),
		requestInit: { headers: { authorization: `Bearer ${key}` } },
	});
	const client = new ModernClient(
		{ name: "search-mode-test", version: "1.0.0" },
		{ capabilities, versionNegotiation: { mode: { pin: MODERN } } },
	);
	setup(client);
	await client.connect(transport);
	return client;
}

describe("search mode on /mcp (2025-11-25, SDK 1.32)", () => {
	it("tools/list answers search_tools and call_tool, then only the tools alwaysList names", async () => {
		const beta = await registerServer("beta");
		const gamma = await registerServer("gamma");
		const { key } = await createKey({ servers: [beta, gamma], disclosure: "search", alwaysList: [`${gamma}__e*`] });
		const { client } = await connectClient("/mcp", key);
		const { tools } = await client.listTools();
		expect(tools.map((tool) => tool.name)).toEqual(["search_tools", "call_tool", `${gamma}__echo`]);
		expect(tools[0]?.inputSchema).toMatchObject({ required: ["query"] });
		await client.close();
	});

	it("search_tools finds a tool by words of its description, with its schema and annotations; call_tool reaches it and answers its result", async () => {
		const beta = await registerServer("beta");
		const { key } = await createKey({ servers: [beta], disclosure: "search" });
		const { client } = await connectClient("/mcp", key);
		const [best] = await search(client, "sum of two numbers");
		expect(best).toMatchObject({
			name: `${beta}__add`,
			description: "Adds two numbers.",
			inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } } },
			annotations: { readOnlyHint: true },
		});
		const args = { a: uniqueNumber(), b: 2 };
		const result = await client.callTool({ name: "call_tool", arguments: { name: `${beta}__add`, arguments: args } });
		expect(result).toMatchObject({
			content: [{ type: "text", text: String(args.a + 2) }],
			structuredContent: { sum: args.a + 2 },
		});
		// It reached the upstream once, under the upstream's own name and with the arguments unchanged.
		expect(await toolCallsOf("beta", "add", args)).toHaveLength(1);
		await client.close();
	});

	it("a tool a policy hides is never found, and call_tool refuses it exactly as a direct call is refused; it never reaches the upstream", async () => {
		const beta = await registerServer("beta");
		const denying = await denyPolicy(beta, "add");
		const { key } = await createKey({ servers: [beta], disclosure: "search" });
		const { client } = await connectClient("/mcp", key);
		const found = (await search(client, "adds two numbers or echoes the text", 50)).map((tool) => tool.name);
		expect(found).not.toContain(`${beta}__add`);
		expect(found).toContain(`${beta}__echo`);
		const args = { a: uniqueNumber(), b: 3 };
		const through = await client
			.callTool({ name: "call_tool", arguments: { name: `${beta}__add`, arguments: args } })
			.catch((error: unknown) => error);
		const direct = await client.callTool({ name: `${beta}__add`, arguments: args }).catch((error: unknown) => error);
		expect(String(through)).toContain(`policy '${denying}'`);
		expect(String(through)).toBe(String(direct));
		expect(await toolCallsOf("beta", "add", args)).toEqual([]);
		await client.close();
	});

	it("progress of the tool call_tool calls reaches the client under its own token", async () => {
		// delta answers on an SSE stream, where progress can travel (beta answers plain JSON).
		const delta = await registerServer("delta");
		const { key } = await createKey({ servers: [delta], disclosure: "search" });
		const { client } = await connectClient("/mcp", key);
		const seen: number[] = [];
		const result = await client.callTool(
			{ name: "call_tool", arguments: { name: `${delta}__progress`, arguments: { steps: 3 } } },
			CallToolResultSchema,
			{ onprogress: (progress) => seen.push(progress.progress) },
		);
		expect(result.content).toEqual([{ type: "text", text: "done in 3 steps" }]);
		expect(seen).toEqual([1, 2, 3]);
		await client.close();
	});

	it("a tool added upstream while the session lives is found once the list refresh has run", async () => {
		const catalog = uniqueName("catalog");
		await putCatalog(catalog, [
			{ name: "lookup_order", description: "Looks up an order by its number.", args: ["id"] },
		]);
		const mutable = uniqueName("mutable");
		expect(
			(await admin("PUT", `/servers/${mutable}?check=false`, { url: `${upstreamUrl("mutable")}?catalog=${catalog}` }))
				.status,
		).toBe(201);
		const { key } = await createKey({ servers: [mutable], disclosure: "search" });
		const { client } = await connectClient("/mcp", key);
		expect((await search(client, "order number")).map((tool) => tool.name)).toEqual([`${mutable}__lookup_order`]);
		expect(await search(client, "support ticket")).toEqual([]);
		await putCatalog(catalog, [
			{ name: "lookup_order", description: "Looks up an order by its number.", args: ["id"] },
			{ name: "summarize_ticket", description: "Summarizes a support ticket for the agent.", args: ["ticket"] },
		]);
		const found = await eventually(async () => {
			const names = (await search(client, "support ticket")).map((tool) => tool.name);
			return names.length > 0 ? names : null;
		}, "the new tool found");
		expect(found).toEqual([`${mutable}__summarize_ticket`]);
		const called = await client.callTool({
			name: "call_tool",
			arguments: { name: `${mutable}__summarize_ticket`, arguments: { ticket: "T-1" } },
		});
		expect(called.content).toEqual([{ type: "text", text: "called summarize_ticket" }]);
		await client.close();
	});

	it("an upstream's elicitation during a call_tool reaches the client, and its answer reaches the upstream", async () => {
		const delta = await registerServer("delta");
		const { key } = await createKey({ servers: [delta], disclosure: "search" });
		const { client } = await connectClient("/mcp", key, {
			capabilities: { elicitation: { form: {} } },
			setup: (peer) =>
				peer.setRequestHandler(ElicitRequestSchema, async (request) => ({
					action: "accept",
					content: { answer: `yes to ${request.params.message}` },
				})),
		});
		const result = await client.callTool({ name: "call_tool", arguments: { name: `${delta}__ask_user` } });
		expect(result.content).toEqual([{ type: "text", text: "delta got accept: yes to delta needs an answer" }]);
		await client.close();
	});

	it("a client's notifications/cancelled of a call_tool reaches the upstream running the tool it called, which ends it there", async () => {
		const beta = await registerServer("beta");
		const { key } = await createKey({ servers: [beta], disclosure: "search" });
		const sessionId = await openSession("/mcp", key);
		const gate = upstreamGate("beta");
		const id = `cancel-${uniqueNumber()}`;
		const pending = rpc("/mcp", key, sessionId, {
			jsonrpc: "2.0",
			id,
			method: "tools/call",
			params: { name: "call_tool", arguments: { name: `${beta}__gate`, arguments: { name: gate.name } } },
		});
		await gate.arrived();
		const cancel = await rpc("/mcp", key, sessionId, {
			jsonrpc: "2.0",
			method: "notifications/cancelled",
			params: { requestId: id, reason: "user" },
		});
		expect(cancel.status).toBe(202);
		await (await pending).text();
		await eventually(async () => (await gate.status()).cancelled === 1, "the call cancelled at the gate");
		const heard = (await upstreamLog("beta")).filter(
			(entry) => entry.body?.method === "notifications/cancelled" && entry.body.params?.requestId === id,
		);
		expect(heard).toHaveLength(1);
	});

	it("a call_tool with params.task is held as a task of the tool it calls; its result is that tool's", async () => {
		const alpha = await registerServer("alpha");
		const { key } = await createKey({ servers: [alpha], disclosure: "search" });
		const { client } = await connectClient("/mcp", key, { capabilities: { tasks: { list: {}, cancel: {} } } });
		const listed = (await client.listTools()).tools.find((tool) => tool.name === "call_tool");
		expect(listed?.execution?.taskSupport).toBe("optional");
		const gate = upstreamGate("alpha");
		const seen: string[] = [];
		let answer: unknown;
		for await (const message of client.experimental.tasks.callToolStream({
			name: "call_tool",
			arguments: { name: `${alpha}__gate`, arguments: { name: gate.name } },
		})) {
			seen.push(message.type);
			if (message.type === "taskCreated") {
				await gate.arrived();
				await gate.release();
			}
			if (message.type === "result") answer = message.result;
			if (message.type === "error") throw message.error;
		}
		expect(seen[0]).toBe("taskCreated");
		expect(answer).toMatchObject({ content: [{ type: "text", text: `gate ${gate.name} passed` }] });
		expect(await toolCallsOf("alpha", "gate", { name: gate.name })).toHaveLength(1);
		await client.close();
	});

	it("a tool called directly by its name still works in search mode", async () => {
		const beta = await registerServer("beta");
		const { key } = await createKey({ servers: [beta], disclosure: "search" });
		const { client } = await connectClient("/mcp", key);
		const result = await client.callTool({ name: `${beta}__echo`, arguments: { text: "remembered" } });
		expect(result.content).toEqual([{ type: "text", text: "remembered" }]);
		await client.close();
	});

	it("bad input gets a clear invalid-params error: no query, a limit of 0, no name, an unknown name", async () => {
		const beta = await registerServer("beta");
		const { key } = await createKey({ servers: [beta], disclosure: "search" });
		const { client } = await connectClient("/mcp", key);
		const refusal = (args: Record<string, unknown>, name = "search_tools") =>
			client.callTool({ name, arguments: args }).then(
				() => "answered",
				(error: unknown) => String(error),
			);
		expect(await refusal({})).toContain("Invalid params: search_tools: query must be a string of words");
		expect(await refusal({ query: "  " })).toContain("query must name what the tool should do");
		expect(await refusal({ query: "echo", limit: 0 })).toContain("limit must be between 1 and 50");
		expect(await refusal({ query: "echo", limit: 2.5 })).toContain("limit must be a whole number");
		expect(await refusal({}, "call_tool")).toContain("Invalid params: call_tool: name must be the tool's name");
		expect(await refusal({ name: "nosuch__tool" }, "call_tool")).toContain(
			"Unknown tool: 'nosuch__tool' is not offered by this endpoint.",
		);
		await client.close();
	});

	it("search_tools states its query's limits in its schema, and a 1M-character query is refused at once with -32602 and a sentence; the session answers on", async () => {
		const beta = await registerServer("beta");
		const { key } = await createKey({ servers: [beta], disclosure: "search" });
		const { client } = await connectClient("/mcp", key);
		const listed = (await client.listTools()).tools.find((tool) => tool.name === "search_tools");
		expect(listed?.inputSchema.properties?.query).toMatchObject({ type: "string", maxLength: MAX_QUERY_CHARS });
		expect(JSON.stringify(listed?.inputSchema)).toContain(`at most ${MAX_WORD_CHARS} letters or digits`);
		await client.close();

		const sessionId = await openSession("/mcp", key);
		const search = (id: number, query: string) =>
			rpc("/mcp", key, sessionId, {
				jsonrpc: "2.0",
				id,
				method: "tools/call",
				params: { name: "search_tools", arguments: { query } },
			});
		const started = Date.now();
		const refused = await readReply(await search(1, "a".repeat(1_000_000)));
		// At once: the query is refused by its length before any matching (it held a session for
		// tens of seconds when a word this long was matched fuzzily). A generous bound.
		expect(Date.now() - started).toBeLessThan(5000);
		expect(refused.error).toMatchObject({
			code: -32602,
			message: `Invalid params: search_tools: a search query is at most ${MAX_QUERY_CHARS} characters, and this one has 1000000: say in a few words what the tool should do.`,
		});
		const longWord = await readReply(await search(2, `echo ${"b".repeat(MAX_WORD_CHARS + 1)}`));
		expect(longWord.error).toMatchObject({
			code: -32602,
			message: `Invalid params: search_tools: a search query's words are at most ${MAX_WORD_CHARS} letters or digits each, and one here has ${MAX_WORD_CHARS + 1}.`,
		});
		const answered = await readReply(await search(3, "echoes the text"));
		expect(foundIn(answered.result ?? {}).at(0)?.name).toBe(`${beta}__echo`);
	});

	it("the tool_call event accounts a call_tool as the call of the tool it named", async () => {
		const beta = await registerServer("beta");
		const { key } = await createKey({ servers: [beta], disclosure: "search" });
		const { client } = await connectClient("/mcp", key);
		const log = vi.spyOn(console, "log");
		const text = `accounted-${uniqueNumber()}`;
		await client.callTool({ name: "call_tool", arguments: { name: `${beta}__echo`, arguments: { text } } });
		const event = await eventually(() =>
			log.mock.calls
				.map(([line]) =>
					typeof line === "string" && line.startsWith('{"event":"tool_call"') ? JSON.parse(line) : null,
				)
				.find((entry) => entry?.tool === `${beta}__echo`),
		);
		expect(event).toMatchObject({ server: beta, tool: `${beta}__echo`, tool_real: "echo", outcome: "ok" });
		await client.close();
	});

	it("in full mode (the default) nothing changes: every tool is listed and there is no search_tools", async () => {
		const beta = await registerServer("beta");
		const { key } = await createKey({ servers: [beta] });
		const { client } = await connectClient("/mcp", key);
		const names = (await client.listTools()).tools.map((tool) => tool.name);
		expect(names).toContain(`${beta}__add`);
		expect(names).not.toContain("search_tools");
		const refused = await client.callTool({ name: "search_tools", arguments: { query: "add" } }).catch(String);
		expect(refused).toContain("Unknown tool: 'search_tools' is not offered by this endpoint.");
		await client.close();
	});
});

describe("search mode on a virtual server (2025-11-25, SDK 1.32)", () => {
	it("lists the gateway's two tools; search finds only what the virtual server offers; call_tool reaches it", async () => {
		const beta = await registerServer("beta");
		const name = await virtualServer({
			servers: [beta],
			tools: { exclude: [`${beta}__add`] },
			disclosure: "search",
		});
		const { key } = await createKey({ servers: [name] });
		const { client } = await connectClient(`/mcp/${name}`, key);
		expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(["search_tools", "call_tool"]);
		expect((await search(client, "echoes the text")).at(0)?.name).toBe(`${beta}__echo`);
		expect((await search(client, "adds two numbers", 50)).map((tool) => tool.name)).not.toContain(`${beta}__add`);
		const result = await client.callTool({
			name: "call_tool",
			arguments: { name: `${beta}__echo`, arguments: { text: "vs" } },
		});
		expect(result.content).toEqual([{ type: "text", text: "vs" }]);
		const hidden = await client
			.callTool({ name: "call_tool", arguments: { name: `${beta}__add`, arguments: { a: 1, b: 2 } } })
			.catch(String);
		expect(hidden).toContain(`Unknown tool: '${beta}__add' is not offered by this endpoint.`);
		await client.close();
	});

	it("the admin API keeps and shows disclosure and alwaysList, and refuses a mode it does not know with a sentence", async () => {
		const beta = await registerServer("beta");
		const name = await virtualServer({ servers: [beta], disclosure: "search", alwaysList: [`${beta}__echo`] });
		expect(await (await admin("GET", `/virtual-servers/${name}`)).json()).toMatchObject({
			disclosure: "search",
			alwaysList: [`${beta}__echo`],
		});
		const plain = await virtualServer({ servers: [beta] });
		expect(await (await admin("GET", `/virtual-servers/${plain}`)).json()).toMatchObject({
			disclosure: "full",
			alwaysList: [],
		});
		const refused = await admin("PUT", `/virtual-servers/${plain}`, { servers: [beta], disclosure: "hidden" });
		expect(refused.status).toBe(400);
		expect(((await refused.json()) as { error: { message: string } }).error.message).toContain(
			'disclosure: must be "full", "search" or "code"',
		);
		expect(await (await admin("GET", `/virtual-servers/${plain}`)).json()).toMatchObject({ disclosure: "full" });
	});
});

describe("search mode for 2026-07-28 clients (SDK v2 pinned)", () => {
	it("on /mcp: the list is the gateway's two tools, search finds by description, call_tool answers the tool's result", async () => {
		const beta = await registerServer("beta");
		const { key } = await createKey({ servers: [beta], disclosure: "search" });
		const client = await modernClient("/mcp", key);
		expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(["search_tools", "call_tool"]);
		expect((await search(client, "sum of two numbers")).at(0)?.name).toBe(`${beta}__add`);
		const args = { a: uniqueNumber(), b: 5 };
		const result = await client.callTool({ name: "call_tool", arguments: { name: `${beta}__add`, arguments: args } });
		expect(result).toMatchObject({ structuredContent: { sum: args.a + 5 } });
		expect(await toolCallsOf("beta", "add", args)).toHaveLength(1);
		await client.close();
	});

	it("a 1M-character query is refused at once with -32602 and the same sentence", async () => {
		const beta = await registerServer("beta");
		const { key } = await createKey({ servers: [beta], disclosure: "search" });
		const started = Date.now();
		const response = await modernPost("/mcp", key, {
			id: "huge",
			method: "tools/call",
			params: { name: "search_tools", arguments: { query: "a".repeat(1_000_000) }, _meta: ENVELOPE },
		});
		const reply = (await readReply(response)) as RpcReply;
		expect(Date.now() - started).toBeLessThan(5000);
		expect(reply).toMatchObject({
			id: "huge",
			error: {
				code: -32602,
				message: `Invalid params: search_tools: a search query is at most ${MAX_QUERY_CHARS} characters, and this one has 1000000: say in a few words what the tool should do.`,
			},
		});
		const client = await modernClient("/mcp", key);
		expect((await search(client, "sum of two numbers")).at(0)?.name).toBe(`${beta}__add`);
		await client.close();
	});

	it("an upstream's elicitation during a call_tool comes back as input_required, and the retry's answer reaches the upstream", async () => {
		const delta = await registerServer("delta");
		const { key } = await createKey({ servers: [delta], disclosure: "search" });
		const client = await modernClient("/mcp", key, { elicitation: { form: {} } }, (peer) =>
			peer.setRequestHandler("elicitation/create", async (request) => ({
				action: "accept",
				content: { answer: `yes to ${request.params.message}` },
			})),
		);
		const result = await client.callTool({ name: "call_tool", arguments: { name: `${delta}__ask_user` } });
		expect(result.content).toEqual([{ type: "text", text: "delta got accept: yes to delta needs an answer" }]);
		await client.close();
	});

	it("on a virtual server: a policy-hidden tool is not found and not callable through call_tool", async () => {
		const beta = await registerServer("beta");
		await denyPolicy(beta, "add");
		const name = await virtualServer({ servers: [beta], disclosure: "search" });
		const { key } = await createKey({ servers: [name] });
		const client = await modernClient(`/mcp/${name}`, key);
		expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(["search_tools", "call_tool"]);
		expect((await search(client, "adds two numbers", 50)).map((tool) => tool.name)).not.toContain(`${beta}__add`);
		const args = { a: uniqueNumber(), b: 1 };
		const refused = await client
			.callTool({ name: "call_tool", arguments: { name: `${beta}__add`, arguments: args } })
			.catch(String);
		expect(refused).toContain("does not allow");
		expect(await toolCallsOf("beta", "add", args)).toEqual([]);
		const echoed = await client.callTool({
			name: "call_tool",
			arguments: { name: `${beta}__echo`, arguments: { text: "modern" } },
		});
		expect(echoed.content).toEqual([{ type: "text", text: "modern" }]);
		await client.close();
	});
});

describe("search mode for people (an access rule's /mcp)", () => {
	const accessRule = testAccessRules();
	const gateway = gatewayWith({ OAUTH_ISSUER: inject("idpIssuer"), OAUTH_SCOPES: "mcp" });

	it("a rule in search mode gives its people's /mcp the gateway's two tools, and call_tool reaches the granted server", async () => {
		const beta = await registerServer("beta");
		await accessRule({ match: { group: "engineering" }, servers: [beta], disclosure: "search" });
		const { provider } = await signInAs(gateway, "/mcp", "alice");
		const { client, transport } = oauthClient("/mcp", provider, gateway);
		await client.connect(transport);
		expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(["search_tools", "call_tool"]);
		expect((await search(client, "echoes the text")).at(0)?.name).toBe(`${beta}__echo`);
		const result = await client.callTool({
			name: "call_tool",
			arguments: { name: `${beta}__echo`, arguments: { text: "person" } },
		});
		expect(result.content).toEqual([{ type: "text", text: "person" }]);
		await client.close();
	});
});

describe("the session's search index", () => {
	const tool = (name: string, description: string): Tool => ({ name, description, inputSchema: { type: "object" } });
	const search = (query: string) =>
		parsedCall({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "search_tools", arguments: { query } } });

	it("is built once per generation of the caller's list, whatever the number of searches, and rebuilt when the list changes", async () => {
		let callable: CallableTools = { tools: [tool("a__lookup_order", "Looks up an order.")], generation: 1 };
		const built: number[] = [];
		const disclosure = new ToolDisclosure(
			{
				disclosure: () => ({ mode: "search", alwaysList: [] }),
				holdsTasks: () => false,
				callable: async () => callable,
			},
			(tools) => {
				built.push(tools.length);
				return buildToolIndex(tools);
			},
		);
		const names = async (query: string) =>
			((await disclosure.search(search(query))).structuredContent as { tools: Tool[] }).tools.map((t) => t.name);
		expect(await names("order")).toEqual(["a__lookup_order"]);
		expect(await names("lookup")).toEqual(["a__lookup_order"]);
		expect(await names("ticket")).toEqual([]);
		expect(built).toEqual([1]);
		callable = {
			tools: [...callable.tools, tool("a__summarize_ticket", "Summarizes a support ticket.")],
			generation: 2,
		};
		expect(await names("ticket")).toEqual(["a__summarize_ticket"]);
		expect(await names("order")).toEqual(["a__lookup_order"]);
		expect(built).toEqual([1, 2]);
	});

	it("a query over the limits is refused before the caller's list is read or an index built", async () => {
		let reads = 0;
		const built: number[] = [];
		const disclosure = new ToolDisclosure(
			{
				disclosure: () => ({ mode: "search", alwaysList: [] }),
				holdsTasks: () => false,
				callable: async () => {
					reads++;
					return { tools: [tool("a__lookup_order", "Looks up an order.")], generation: 1 };
				},
			},
			(tools) => {
				built.push(tools.length);
				return buildToolIndex(tools);
			},
		);
		for (const query of ["o".repeat(MAX_QUERY_CHARS + 1), `order ${"n".repeat(MAX_WORD_CHARS + 1)}`]) {
			await expect(disclosure.search(search(query))).rejects.toMatchObject({
				kind: "invalid_params",
				message: expect.stringContaining("Invalid params: search_tools: a search query"),
			});
		}
		expect(reads).toBe(0);
		expect(built).toEqual([]);
	});
});
