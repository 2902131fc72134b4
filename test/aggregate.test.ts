import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { LONG_TOOL_NAME } from "../scripts/fixtures/fixture-names.ts";
import { namespacedName } from "../src/mcp/namespacing.ts";
import type { SessionDO } from "../src/session/session-do.ts";
import {
	admin,
	connectClient,
	createKey,
	gatewayFetch,
	initializeBody,
	mcpHeaders,
	openSession,
	postInitialize,
	readReply,
	rpc,
	uniqueName,
} from "./support/gateway.ts";
import { ManualClock, sessionObject, upstreamSessionIds } from "./support/session-object.ts";
import { registerServer, type UpstreamName, upstreamLog, upstreamSessionLog } from "./support/upstreams.ts";

/** The tools of alpha, beta and gamma: the demo catalog and the tests' `gate`. */
const DEMO_TOOLS = ["add", "blob", "echo", "fail", "gate", "progress", "sleep", "whoami"];

/** Three members (alpha over SSE with a credential, beta over JSON, gamma with a 70-character tool name). */
async function threeMembers() {
	const a = await registerServer("alpha");
	const b = await registerServer("beta");
	const c = await registerServer("gamma");
	const { key } = await createKey({ servers: [a, b, c] });
	return { a, b, c, key };
}

async function countAtUpstream(which: UpstreamName, upstreamSessionId: string | null | undefined, method: string) {
	return (await upstreamSessionLog(which, upstreamSessionId)).filter((entry) => entry.body?.method === method).length;
}

describe("aggregate endpoint /mcp", () => {
	it("tools/list over three SDK upstreams returns exactly the namespaced union, and calls route to the right upstream with the original name and unchanged arguments", async () => {
		const { a, b, c, key } = await threeMembers();
		const { client } = await connectClient("/mcp", key);
		const { tools } = await client.listTools();
		const expected = [
			...DEMO_TOOLS.map((tool) => `${a}__${tool}`),
			...DEMO_TOOLS.map((tool) => `${b}__${tool}`),
			...DEMO_TOOLS.map((tool) => `${c}__${tool}`),
			namespacedName(c, LONG_TOOL_NAME),
		].sort();
		expect(tools.map((tool) => tool.name)).toEqual(expected);

		for (const [server, upstream] of [
			[a, "alpha"],
			[b, "beta"],
			[c, "gamma"],
		] as const) {
			const result = await client.callTool({ name: `${server}__whoami`, arguments: {} });
			expect(result.content).toEqual([{ type: "text", text: upstream }]);
		}
		// A text no other call carries marks this call in the upstream's log.
		const args = { text: uniqueName("nested"), extra: { parameters: {} } };
		await client.callTool({ name: `${c}__echo`, arguments: args });
		const calls = (await upstreamLog("gamma")).filter(
			(entry) =>
				entry.body?.method === "tools/call" &&
				(entry.body.params?.arguments as { text?: string } | undefined)?.text === args.text,
		);
		expect(calls.map((entry) => entry.body?.params)).toEqual([{ name: "echo", arguments: args }]);
		await client.close();
	});

	it("lists follow upstream pagination to the end", async () => {
		const paged = await registerServer("paged");
		const b = await registerServer("beta");
		const { key } = await createKey({ servers: [paged, b] });
		const { client } = await connectClient("/mcp", key);
		const names = (await client.listTools()).tools.map((tool) => tool.name).filter((name) => name.startsWith(paged));
		expect(names).toEqual(["p1", "p2", "p3", "p4", "p5"].map((tool) => `${paged}__${tool}`));
		expect((await client.callTool({ name: `${paged}__p5`, arguments: {} })).content).toEqual([
			{ type: "text", text: "called p5" },
		]);
		await client.close();
	});

	it("a 70-character tool name is shortened, listed once, and callable", async () => {
		const { c, key } = await threeMembers();
		const { client, transport } = await connectClient("/mcp", key);
		const { tools } = await client.listTools();
		const long = tools.filter((tool) => tool.name.startsWith(`${c}__summarize`));
		expect(long).toHaveLength(1);
		const exposed = long[0]?.name ?? "";
		expect(exposed.length).toBeLessThanOrEqual(64);
		expect(exposed).not.toBe(`${c}__${LONG_TOOL_NAME}`);
		expect(await client.callTool({ name: exposed, arguments: {} })).toEqual({
			content: [{ type: "text", text: "long name reached" }],
		});
		const gammaSession = (await upstreamSessionIds(transport.sessionId ?? ""))[c];
		const calls = (await upstreamSessionLog("gamma", gammaSession)).filter(
			(entry) => entry.body?.method === "tools/call",
		);
		expect(calls.map((entry) => entry.body?.params?.name)).toEqual([LONG_TOOL_NAME]);
		await client.close();
	});

	it("eight concurrent tools/list in one session cause exactly one upstream tools/list per server", async () => {
		const { a, b, c, key } = await threeMembers();
		const sessionId = await openSession("/mcp", key);
		const replies = await Promise.all(
			Array.from({ length: 8 }, async (_, i) =>
				readReply(await rpc("/mcp", key, sessionId, { jsonrpc: "2.0", id: i + 10, method: "tools/list" })),
			),
		);
		const counts = replies.map((reply) => ((reply.result?.tools ?? []) as unknown[]).length);
		expect(new Set(counts)).toEqual(new Set([3 * DEMO_TOOLS.length + 1]));
		const ids = await upstreamSessionIds(sessionId);
		expect(await countAtUpstream("alpha", ids[a], "tools/list")).toBe(1);
		expect(await countAtUpstream("beta", ids[b], "tools/list")).toBe(1);
		expect(await countAtUpstream("gamma", ids[c], "tools/list")).toBe(1);
	});

	it("an upstream that announces list_changed and answers its first list late with stale_tool: the client never sees stale_tool", async () => {
		const shifting = await registerServer("shifting");
		const { key } = await createKey({ servers: [shifting] });
		const { client } = await connectClient("/mcp", key);
		const first = await client.listTools();
		expect(first.tools.map((tool) => tool.name)).toEqual([`${shifting}__fresh_tool`]);
		const second = await client.listTools();
		expect(second.tools.map((tool) => tool.name)).toEqual([`${shifting}__fresh_tool`]);
		expect(await client.callTool({ name: `${shifting}__fresh_tool`, arguments: {} })).toEqual({
			content: [{ type: "text", text: "called fresh_tool" }],
		});
		await client.close();
	});

	it("a member returning { content: [], isError: true } reaches the client as exactly that result", async () => {
		const { a, key } = await threeMembers();
		const sessionId = await openSession("/mcp", key);
		const reply = await readReply(
			await rpc("/mcp", key, sessionId, {
				jsonrpc: "2.0",
				id: 3,
				method: "tools/call",
				params: { name: `${a}__fail`, arguments: {} },
			}),
		);
		expect(reply).toEqual({ jsonrpc: "2.0", id: 3, result: { content: [], isError: true } });
	});

	it("rich results pass through unchanged: structuredContent and content", async () => {
		const { b, key } = await threeMembers();
		const { client } = await connectClient("/mcp", key);
		expect(await client.callTool({ name: `${b}__add`, arguments: { a: 1, b: 2 } })).toEqual({
			content: [{ type: "text", text: "3" }],
			structuredContent: { sum: 3 },
		});
		await client.close();
	});

	it("one member down: /mcp still lists and calls the others", async () => {
		const down = uniqueName("down");
		await admin("PUT", `/servers/${down}`, { url: "http://127.0.0.1:9/mcp" });
		const b = await registerServer("beta");
		const { key } = await createKey({ servers: [down, b] });
		const { client } = await connectClient("/mcp", key);
		const { tools } = await client.listTools();
		expect(tools.map((tool) => tool.name)).toEqual(DEMO_TOOLS.map((tool) => `${b}__${tool}`));
		expect((await client.callTool({ name: `${b}__whoami`, arguments: {} })).content).toEqual([
			{ type: "text", text: "beta" },
		]);
		const failed = await client.callTool({ name: `${down}__whoami`, arguments: {} });
		expect(failed.isError).toBe(true);
		expect(failed._meta?.["mcp-edge-gateway/error"]).toEqual({ kind: "upstream_unavailable", server: down });
		expect(JSON.stringify(failed.content)).toContain(`'${down}'`);
		await client.close();
	});

	it("X-MCP-Servers narrows the aggregate at initialize; unknown names are ignored", async () => {
		const { a, b, key } = await threeMembers();
		const response = await gatewayFetch("/mcp", {
			method: "POST",
			headers: mcpHeaders(key, undefined, { "x-mcp-servers": `${a}, nope-unknown` }),
			body: JSON.stringify(initializeBody()),
		});
		const sessionId = response.headers.get("mcp-session-id") ?? "";
		await response.text();
		const reply = await readReply(
			await rpc("/mcp", key, sessionId, { jsonrpc: "2.0", id: 2, method: "tools/list" }, { "x-mcp-servers": b }),
		);
		const names = ((reply.result?.tools ?? []) as Array<{ name: string }>).map((tool) => tool.name);
		expect(names).toEqual(DEMO_TOOLS.map((tool) => `${a}__${tool}`));
	});

	it("initialize answers with the gateway's server info, the union of capabilities and labelled instructions", async () => {
		const { a, b, c, key } = await threeMembers();
		const { client } = await connectClient("/mcp", key);
		expect(client.getServerVersion()).toMatchObject({ name: "mcp-edge-gateway" });
		const capabilities = client.getServerCapabilities();
		expect(capabilities?.tools).toEqual({ listChanged: true });
		expect(capabilities?.prompts).toEqual({ listChanged: true });
		expect(capabilities?.resources).toEqual({ listChanged: true });
		expect(client.getInstructions()).toBe(
			`## ${a}\nTools of alpha.\n\n## ${b}\nTools of beta.\n\n## ${c}\nTools of gamma.`,
		);
		await client.close();
	});

	it("prompts route by prefix; resources and templates keep their URIs and route by what the session listed", async () => {
		const { a, b, key } = await threeMembers();
		const { client } = await connectClient("/mcp", key);
		const { prompts } = await client.listPrompts();
		expect(prompts.map((prompt) => prompt.name)).toContain(`${b}__greet`);
		const prompt = await client.getPrompt({ name: `${b}__greet`, arguments: { who: "Ada" } });
		expect(prompt.messages[0]?.content).toEqual({ type: "text", text: "Hello, Ada, from beta!" });

		const { resources } = await client.listResources();
		expect(resources.map((resource) => resource.uri)).toEqual([
			"demo://alpha/readme",
			"demo://beta/readme",
			"demo://gamma/readme",
		]);
		expect((await client.readResource({ uri: "demo://beta/readme" })).contents[0]).toMatchObject({
			text: "This is beta.",
		});
		const { resourceTemplates } = await client.listResourceTemplates();
		expect(resourceTemplates.map((template) => template.uriTemplate)).toEqual([
			"demo://alpha/notes/{id}",
			"demo://beta/notes/{id}",
			"demo://gamma/notes/{id}",
		]);
		expect((await client.readResource({ uri: "demo://alpha/notes/7" })).contents[0]).toMatchObject({ text: "note 7" });
		await expect(client.readResource({ uri: "demo://nowhere/x" })).rejects.toMatchObject({ code: -32002 });
		void a;
		await client.close();
	});

	it("an unknown tool is an invalid-params error, not a crash", async () => {
		const { key } = await threeMembers();
		const { client } = await connectClient("/mcp", key);
		await expect(client.callTool({ name: "nobody__nothing", arguments: {} })).rejects.toMatchObject({ code: -32602 });
		await client.close();
	});
});

describe("virtual servers", () => {
	it("/mcp/:virtual serves its members, aggregated like /mcp", async () => {
		const a = await registerServer("alpha");
		const b = await registerServer("beta");
		const name = uniqueName("virt");
		expect((await admin("PUT", `/virtual-servers/${name}`, { servers: [a, b] })).status).toBe(201);
		const { key } = await createKey();
		const { client } = await connectClient(`/mcp/${name}`, key);
		const { tools } = await client.listTools();
		expect(tools).toHaveLength(2 * DEMO_TOOLS.length);
		expect((await client.callTool({ name: `${b}__whoami`, arguments: {} })).content).toEqual([
			{ type: "text", text: "beta" },
		]);
		await client.close();
	});

	it("is 404 for keys outside its user paths or that may not use every member", async () => {
		const a = await registerServer("alpha");
		const b = await registerServer("beta");
		const name = uniqueName("virt");
		await admin("PUT", `/virtual-servers/${name}`, { servers: [a, b], userPaths: ["/team"] });
		const outsider = await createKey({ userPath: "/other" });
		const partial = await createKey({ userPath: "/team/a", servers: [a] });
		const member = await createKey({ userPath: "/team/a" });
		for (const key of [outsider.key, partial.key]) {
			const response = await postInitialize(`/mcp/${name}`, key);
			expect(response.status).toBe(404);
		}
		expect(await openSession(`/mcp/${name}`, member.key)).toMatch(/^gw1\./);
	});

	it("deleted and recreated under the same name: sessions of the old incarnation do not resume (404), a fresh session does", async () => {
		const a = await registerServer("alpha");
		const name = uniqueName("virt");
		await admin("PUT", `/virtual-servers/${name}`, { servers: [a] });
		const { key } = await createKey();
		const old = await openSession(`/mcp/${name}`, key);
		const stub = await sessionObject(old);
		const clock = new ManualClock();
		await runInDurableObject(stub, (instance: SessionDO) => {
			instance.clock = clock;
		});

		expect((await admin("DELETE", `/virtual-servers/${name}`)).status).toBe(204);
		expect((await admin("PUT", `/virtual-servers/${name}`, { servers: [a] })).status).toBe(201);
		clock.advance(31_000); // a recheck is due

		const response = await rpc(`/mcp/${name}`, key, old, { jsonrpc: "2.0", id: 1, method: "tools/list" });
		expect(response.status).toBe(404);
		expect((await rpc(`/mcp/${name}`, key, old, { jsonrpc: "2.0", id: 2, method: "ping" })).status).toBe(404);

		const fresh = await openSession(`/mcp/${name}`, key);
		const reply = await readReply(
			await rpc(`/mcp/${name}`, key, fresh, { jsonrpc: "2.0", id: 3, method: "tools/list" }),
		);
		expect(((reply.result?.tools ?? []) as unknown[]).length).toBe(DEMO_TOOLS.length);
	});
});
