import { env, listDurableObjectIds } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { admin, createKey, openSession, type RpcReply, readReply, rpc, uniqueName } from "./support/gateway.ts";
import { ENVELOPE, modernPost, textOf } from "./support/modern.ts";
import { type UpstreamLogEntry, upstreamGate, upstreamLog, upstreamUrl } from "./support/upstreams.ts";

/**
 * A governed server keeps its 2026-07-28 clients on the stateless path: the
 * edge makes the one governance decision itself (shaping, hidden prompts and
 * resources, pins under block, policies), and its lists and refusals are the
 * ones the session gave such a client before, word for word. The upstream is
 * `modern` (2026-07-28 only); every server and policy is the test's own.
 */

const made: string[] = [];
afterEach(async () => {
	for (const name of made.splice(0)) await admin("DELETE", `/policies/${name}`);
});

async function sessionObjects(): Promise<number> {
	return (await listDurableObjectIds(env.SESSIONS)).length;
}

/** A number no other test sends, so this test's call can be found in the shared upstream's log. */
function uniqueNumber(): number {
	return 1_000_000 + Math.floor(Math.random() * 1_000_000_000);
}

/** The upstream's requests, from the whole log of the run, whose params mention `text` anywhere. */
function mentioning(log: readonly UpstreamLogEntry[], text: string): UpstreamLogEntry[] {
	return log.filter((entry) => JSON.stringify(entry.body?.params ?? {}).includes(text));
}

/**
 * A server of the `modern` upstream with every kind of governance at once:
 * `echo` aliased as `say_back` with a description of the operator's, `whoami`
 * hidden, the `greet` prompt and the readme hidden, pinning under block with
 * every tool approved but `gate` (new, so held), and a policy denying `add`.
 */
async function governedServer(): Promise<{ name: string; policy: string; key: string }> {
	const name = uniqueName("stateless-governed");
	const created = await admin("PUT", `/servers/${name}`, {
		url: upstreamUrl("modern"),
		pinning: "block",
		tools: { exclude: ["whoami"], overrides: { echo: { name: "say_back", description: "Says it back." } } },
		prompts: { exclude: ["greet"] },
		resources: { exclude: ["demo://modern/readme"] },
	});
	if (created.status !== 201) throw new Error(`server: ${await created.text()}`);
	const approved = ["touch_resource", "announce_tools_changed", "echo", "add", "whoami", "region_echo", "ask_name"];
	const approving = await admin("POST", `/servers/${name}/tools/approve`, { tools: approved });
	if (approving.status !== 200) throw new Error(`approve: ${await approving.text()}`);
	const policy = uniqueName("policy");
	const put = await admin("PUT", `/policies/${policy}`, {
		expression: 'tool.name == "add"',
		effect: "deny",
		applies: { servers: [name] },
	});
	if (put.status !== 201) throw new Error(`policy: ${await put.text()}`);
	made.push(policy);
	const { key } = await createKey({ servers: [name] });
	return { name, policy, key };
}

/** A 2026-07-28 request of `method` on the server's endpoint, and its JSON-RPC reply. */
async function modern(name: string, key: string, id: number, method: string, params: Record<string, unknown> = {}) {
	return readReply(await modernPost(`/mcp/${name}`, key, { id, method, params: { ...params, _meta: ENVELOPE } }));
}

describe("a governed server's 2026-07-28 clients stay on the stateless path", () => {
	it("tools/list is the session's list, shaped, held and filtered, in one private page, and no Durable Object is made", async () => {
		const { name, key } = await governedServer();
		const objects = await sessionObjects();
		const listed = await modern(name, key, 1, "tools/list");
		expect(await sessionObjects()).toBe(objects);
		// A 2025 client's session applies the same decision: its list is the same, tool for tool.
		const sessionId = await openSession(`/mcp/${name}`, key);
		const inSession = await readReply(
			await rpc(`/mcp/${name}`, key, sessionId, { jsonrpc: "2.0", id: 1, method: "tools/list" }),
		);
		expect(listed.result).toEqual({
			resultType: "complete",
			tools: inSession.result?.tools,
			ttlMs: 0,
			cacheScope: "private",
		});
		const tools = (listed.result?.tools ?? []) as Array<{ name: string; description?: string }>;
		expect(tools.map((tool) => tool.name).sort()).toEqual(
			["announce_tools_changed", "ask_name", "region_echo", "say_back", "touch_resource"].sort(),
		);
		expect(tools.find((tool) => tool.name === "say_back")?.description).toBe("Says it back.");
	});

	it("the alias is called by its alias and reaches the upstream under its real name; the real name and a hidden tool are unknown tools that never reach it", async () => {
		const { name, key } = await governedServer();
		const objects = await sessionObjects();
		const marker = uniqueName("said");
		const called = await modern(name, key, 2, "tools/call", { name: "say_back", arguments: { text: marker } });
		expect(textOf(called.result ?? {})).toBe(marker);
		const sent = mentioning(await upstreamLog("modern"), marker);
		expect(sent.map((entry) => entry.body?.params?.name)).toEqual(["echo"]);
		const real = uniqueName("real");
		expect((await modern(name, key, 3, "tools/call", { name: "echo", arguments: { text: real } })).error).toEqual({
			code: -32602,
			message: "Unknown tool: 'echo' is not offered by this endpoint.",
			data: { kind: "invalid_params" },
		});
		expect((await modern(name, key, 4, "tools/call", { name: "whoami", arguments: {} })).error).toEqual({
			code: -32602,
			message: "Unknown tool: 'whoami' is not offered by this endpoint.",
			data: { kind: "invalid_params" },
		});
		expect(mentioning(await upstreamLog("modern"), real)).toEqual([]);
		expect(await sessionObjects()).toBe(objects);
	});

	it("a call a policy denies is refused naming the policy, and a tool held under block is refused as new; neither reaches the upstream", async () => {
		const { name, key, policy } = await governedServer();
		const objects = await sessionObjects();
		const a = uniqueNumber();
		const denied = await modern(name, key, 5, "tools/call", { name: "add", arguments: { a, b: 2 } });
		expect(denied.result).toBeUndefined();
		expect(denied.error).toEqual({
			code: -32602,
			message: `The gateway's policy '${policy}' does not allow this call of 'add'; ask its operator.`,
			data: { kind: "forbidden", server: name },
		});
		const gate = uniqueName("gate");
		const held = await modern(name, key, 6, "tools/call", { name: "gate", arguments: { name: gate } });
		expect(held.error).toEqual({
			code: -32602,
			message: "Tool 'gate' is new since this server's tools were approved; ask the operator to review and approve it.",
			data: { kind: "invalid_params", server: name },
		});
		const log = await upstreamLog("modern");
		expect(mentioning(log, String(a))).toEqual([]);
		expect(mentioning(log, gate)).toEqual([]);
		expect(await sessionObjects()).toBe(objects);
	});

	it("hidden prompts and resources are left out of their lists and refused as unknown, however the URI is spelled, without reaching the upstream", async () => {
		const { name, key } = await governedServer();
		const objects = await sessionObjects();
		const prompts = await modern(name, key, 7, "prompts/list");
		expect(prompts.result).toEqual({ resultType: "complete", prompts: [], ttlMs: 0, cacheScope: "private" });
		const resources = await modern(name, key, 8, "resources/list");
		const listed = (resources.result?.resources ?? []) as Array<{ uri: string }>;
		expect(listed.map((resource) => resource.uri)).toEqual(["demo://modern/private"]);
		expect(resources.result).toMatchObject({ resultType: "complete", ttlMs: 0, cacheScope: "private" });
		const who = uniqueName("who");
		expect((await modern(name, key, 9, "prompts/get", { name: "greet", arguments: { who } })).error).toEqual({
			code: -32602,
			message: "Unknown prompt: 'greet' is not offered by this endpoint.",
			data: { kind: "invalid_params" },
		});
		const spelled = "DEMO://modern/x/../readme";
		const read: RpcReply = await modern(name, key, 10, "resources/read", { uri: spelled });
		expect(read.error).toEqual({
			code: -32602,
			message: `Resource not found: ${spelled} is not offered by this endpoint.`,
			data: { kind: "resource_not_found", uri: spelled },
		});
		const log = await upstreamLog("modern");
		expect(mentioning(log, who)).toEqual([]);
		expect(mentioning(log, spelled)).toEqual([]);
		// What is not hidden is served as before.
		const visible = await modern(name, key, 11, "resources/read", { uri: "demo://modern/private" });
		const contents = (visible.result?.contents ?? []) as Array<{ text: string }>;
		expect(contents[0]?.text).toMatch(/^private read \d+$/);
		expect(await sessionObjects()).toBe(objects);
	});

	it("a task-augmented call of an alias, to a server that holds tasks itself, reaches it under the real name and comes back as its task, statelessly", async () => {
		const name = uniqueName("stateless-tasking");
		const tools = { overrides: { task_gate: { name: "wait_for_gate" } } };
		expect((await admin("PUT", `/servers/${name}`, { url: upstreamUrl("modernTasking"), tools })).status).toBe(201);
		const { key } = await createKey({ servers: [name] });
		const objects = await sessionObjects();
		const gate = upstreamGate("modernTasking");
		const tasking = {
			...ENVELOPE,
			"io.modelcontextprotocol/clientCapabilities": { extensions: { "io.modelcontextprotocol/tasks": {} } },
		};
		const body = {
			id: "task-1",
			method: "tools/call",
			params: { name: "wait_for_gate", arguments: { name: gate.name }, _meta: tasking },
		};
		const created = await readReply(await modernPost(`/mcp/${name}`, key, body));
		expect(created.result).toMatchObject({ resultType: "task", status: "working" });
		await gate.arrived();
		const sent = mentioning(await upstreamLog("modernTasking"), gate.name).filter(
			(entry) => entry.body?.method === "tools/call",
		);
		expect(sent.map((entry) => entry.body?.params?.name)).toEqual(["task_gate"]);
		await gate.release();
		expect(await sessionObjects()).toBe(objects);
	});
});
