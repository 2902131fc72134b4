import { afterEach, describe, expect, it } from "vitest";
import { admin, connectClient, createKey, uniqueName } from "./support/gateway.ts";
import { ENVELOPE, modernPost, textOf } from "./support/modern.ts";
import { toolCallsOf, upstreamUrl } from "./support/upstreams.ts";

/**
 * Policies in CEL applied where callers list and call tools: the same
 * decision hides a tool from a list and refuses its call, on a server's own
 * endpoint and on aggregates, in both eras. Every policy here names its test's
 * own server (policies are global), and is deleted after the test.
 */

const made: string[] = [];

/** A number no other test sends, so this test's call can be found in the shared upstream's log. */
function uniqueNumber(): number {
	return 1_000_000 + Math.floor(Math.random() * 1_000_000_000);
}
afterEach(async () => {
	for (const name of made.splice(0)) await admin("DELETE", `/policies/${name}`);
});

async function policy(body: Record<string, unknown>): Promise<string> {
	const name = uniqueName("policy");
	const response = await admin("PUT", `/policies/${name}`, body);
	if (response.status !== 201) throw new Error(`policy: ${await response.text()}`);
	made.push(name);
	return name;
}

async function server(tools?: unknown): Promise<string> {
	const name = uniqueName("governed");
	const response = await admin("PUT", `/servers/${name}`, { url: upstreamUrl("beta"), ...(tools ? { tools } : {}) });
	if (response.status !== 201) throw new Error(`server: ${await response.text()}`);
	return name;
}

describe("policies decide what a caller sees and calls", () => {
	it("a deny hides the tool from /mcp/<server>'s list and refuses its call with a sentence naming the policy; nothing reaches the upstream", async () => {
		const name = await server();
		const denying = await policy({ expression: 'tool.name == "add"', effect: "deny", applies: { servers: [name] } });
		const key = await createKey({ servers: [name] });
		const { client } = await connectClient(`/mcp/${name}`, key.key);
		const names = (await client.listTools()).tools.map((tool) => tool.name);
		expect(names).not.toContain("add");
		expect(names).toContain("echo");
		const args = { a: uniqueNumber(), b: 2 };
		const refused = await client.callTool({ name: "add", arguments: args }).catch((error: unknown) => error);
		expect(String(refused)).toContain(`policy '${denying}'`);
		expect(String(refused)).not.toContain("tool.name");
		expect(await toolCallsOf("beta", "add", args)).toEqual([]);
		await client.close();
	});

	it("on /mcp the same policy hides server__add and refuses it, while other servers' tools are untouched", async () => {
		const name = await server();
		const other = await server();
		await policy({ expression: 'tool.name == "add"', effect: "deny", applies: { servers: [name] } });
		const key = await createKey({ servers: [name, other] });
		const { client } = await connectClient("/mcp", key.key);
		const names = (await client.listTools()).tools.map((tool) => tool.name);
		expect(names).not.toContain(`${name}__add`);
		expect(names).toContain(`${other}__add`);
		const refused = await client.callTool({ name: `${name}__add`, arguments: { a: 1, b: 2 } }).catch((e: unknown) => e);
		expect(String(refused)).toContain("does not allow");
		await client.close();
	});

	it("an allow admits only read-only tools for keys (the operator's own annotation counts)", async () => {
		const name = await server({ overrides: { add: { annotations: { readOnlyHint: true } } } });
		await policy({
			expression: 'principal.kind == "key" && tool.annotations.readOnlyHint == true',
			effect: "allow",
			applies: { servers: [name] },
		});
		const key = await createKey({ servers: [name] });
		const { client } = await connectClient(`/mcp/${name}`, key.key);
		expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(["add"]);
		expect((await client.callTool({ name: "add", arguments: { a: 2, b: 3 } })).content).toEqual([
			{ type: "text", text: "5" },
		]);
		const refused = await client.callTool({ name: "echo", arguments: { text: "x" } }).catch((e: unknown) => e);
		expect(String(refused)).toContain("does not allow");
		await client.close();
	});

	it("an argument constraint refuses a call by what it is called with, and allows the others", async () => {
		const name = await server();
		await policy({
			// Lists carry no arguments: the constraint speaks of calls only.
			expression: 'method == "tools/call" && tool.name == "echo" && !arguments.text.startsWith("acme/")',
			effect: "deny",
			applies: { servers: [name] },
		});
		const key = await createKey({ servers: [name] });
		const { client } = await connectClient(`/mcp/${name}`, key.key);
		expect((await client.listTools()).tools.map((tool) => tool.name)).toContain("echo");
		expect((await client.callTool({ name: "echo", arguments: { text: "acme/repo" } })).content).toEqual([
			{ type: "text", text: "acme/repo" },
		]);
		const refused = await client.callTool({ name: "echo", arguments: { text: "other/repo" } }).catch((e: unknown) => e);
		expect(String(refused)).toContain("does not allow");
		await client.close();
	});

	it("a policy sees the key's name: a key named ops lists and calls, another key sees nothing", async () => {
		const name = await server();
		await policy({ expression: 'principal.keyName == "ops"', effect: "allow", applies: { servers: [name] } });
		const ops = await createKey({ servers: [name], name: "ops" });
		const other = await createKey({ servers: [name], name: "other" });
		const opsClient = (await connectClient(`/mcp/${name}`, ops.key)).client;
		expect((await opsClient.listTools()).tools.map((tool) => tool.name)).toContain("echo");
		expect((await opsClient.callTool({ name: "echo", arguments: { text: "ops" } })).content).toEqual([
			{ type: "text", text: "ops" },
		]);
		await opsClient.close();
		const otherClient = (await connectClient(`/mcp/${name}`, other.key)).client;
		expect((await otherClient.listTools()).tools).toEqual([]);
		await otherClient.close();
	});

	it("a policy put while a session is open hides the tool at that session's next list and refuses its next call; deleted, the tool is back", async () => {
		const name = await server();
		const key = await createKey({ servers: [name] });
		const { client } = await connectClient(`/mcp/${name}`, key.key);
		expect((await client.listTools()).tools.map((tool) => tool.name)).toContain("add");
		const denying = await policy({ expression: 'tool.name == "add"', effect: "deny", applies: { servers: [name] } });
		expect((await client.listTools()).tools.map((tool) => tool.name)).not.toContain("add");
		const args = { a: uniqueNumber(), b: 2 };
		const refused = await client.callTool({ name: "add", arguments: args }).catch((e: unknown) => e);
		expect(String(refused)).toContain(`policy '${denying}'`);
		expect(await toolCallsOf("beta", "add", args)).toEqual([]);
		await admin("DELETE", `/policies/${denying}`);
		made.splice(made.indexOf(denying), 1);
		expect((await client.listTools()).tools.map((tool) => tool.name)).toContain("add");
		const allowed = { a: uniqueNumber(), b: 2 };
		expect((await client.callTool({ name: "add", arguments: allowed })).content).toEqual([
			{ type: "text", text: String(allowed.a + 2) },
		]);
		// The log is searched as the refusal's was: the allowed call is found there, once.
		expect(await toolCallsOf("beta", "add", allowed)).toHaveLength(1);
		await client.close();
	});

	it("a 2026-07-28 client of a governed server is refused alike (its requests are served from a session)", async () => {
		const name = await server();
		await policy({ expression: 'tool.name == "add"', effect: "deny", applies: { servers: [name] } });
		const key = await createKey({ servers: [name] });
		const listed = (await (
			await modernPost(`/mcp/${name}`, key.key, { id: 1, method: "tools/list", params: { _meta: ENVELOPE } })
		).json()) as { result: { tools: Array<{ name: string }> } };
		expect(listed.result.tools.map((tool) => tool.name)).not.toContain("add");
		const called = (await (
			await modernPost(`/mcp/${name}`, key.key, {
				id: 2,
				method: "tools/call",
				params: { name: "echo", arguments: { text: "fine" }, _meta: ENVELOPE },
			})
		).json()) as { result: object };
		expect(textOf(called.result)).toBe("fine");
	});
});
