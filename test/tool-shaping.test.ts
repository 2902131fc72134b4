import { describe, expect, it } from "vitest";
import { admin, connectClient, createKey, uniqueName } from "./support/gateway.ts";
import { ENVELOPE, modernPost, textOf } from "./support/modern.ts";
import { toolCallsOf, upstreamUrl } from "./support/upstreams.ts";

/**
 * Shaping: the operator decides which of a server's tools callers see, under
 * which names and descriptions, on the server's own endpoint and on
 * aggregates, in both eras. A real SDK upstream (beta: echo, add, whoami, …).
 */

const SHAPING = {
	exclude: ["sleep", "blob", "progress"],
	overrides: {
		echo: { name: "say_back", description: "Says the text back, as the operator describes it." },
		add: { annotations: { readOnlyHint: true } },
	},
};

async function shapedServer(tools: unknown = SHAPING): Promise<string> {
	const name = uniqueName("shaped");
	const response = await admin("PUT", `/servers/${name}`, { url: upstreamUrl("beta"), tools });
	if (response.status !== 201) throw new Error(`server: ${await response.text()}`);
	return name;
}

describe("shaping a server's tools", () => {
	it("on /mcp/<server>: hidden tools are not listed, the alias and the operator's description and annotations are", async () => {
		const server = await shapedServer();
		const key = await createKey({ servers: [server] });
		const { client } = await connectClient(`/mcp/${server}`, key.key);
		const tools = (await client.listTools()).tools;
		const names = tools.map((tool) => tool.name);
		expect(names).toContain("say_back");
		expect(names).not.toContain("echo");
		for (const hidden of ["sleep", "blob", "progress"]) expect(names).not.toContain(hidden);
		expect(tools.find((tool) => tool.name === "say_back")?.description).toBe(
			"Says the text back, as the operator describes it.",
		);
		expect(tools.find((tool) => tool.name === "add")?.annotations?.readOnlyHint).toBe(true);
		await client.close();
	});

	it("an alias is called by its alias and reaches the upstream under its real name; the real name and hidden tools are unknown tools", async () => {
		const server = await shapedServer();
		const key = await createKey({ servers: [server] });
		const { client } = await connectClient(`/mcp/${server}`, key.key);
		expect((await client.callTool({ name: "say_back", arguments: { text: "hi" } })).content).toEqual([
			{ type: "text", text: "hi" },
		]);
		const args = { text: uniqueName("refused"), ms: 1 };
		for (const name of ["echo", "sleep"]) {
			const refused = await client.callTool({ name, arguments: args }).catch((error: unknown) => error);
			expect(String(refused)).toContain(`Unknown tool: '${name}' is not offered by this endpoint.`);
		}
		// Neither refusal reached the upstream: no call with these arguments anywhere in its log.
		expect([...(await toolCallsOf("beta", "echo", args)), ...(await toolCallsOf("beta", "sleep", args))]).toEqual([]);
		await client.close();
	});

	it("on /mcp: the alias gets the server__ prefix, hidden tools are not there, and calls route under the real name", async () => {
		const server = await shapedServer();
		const key = await createKey({ servers: [server] });
		const { client } = await connectClient("/mcp", key.key);
		const names = (await client.listTools()).tools.map((tool) => tool.name);
		expect(names).toContain(`${server}__say_back`);
		expect(names).not.toContain(`${server}__echo`);
		expect(names).not.toContain(`${server}__sleep`);
		expect((await client.callTool({ name: `${server}__say_back`, arguments: { text: "agg" } })).content).toEqual([
			{ type: "text", text: "agg" },
		]);
		const refused = await client
			.callTool({ name: `${server}__echo`, arguments: { text: "x" } })
			.catch((error: unknown) => error);
		expect(String(refused)).toContain("Unknown tool");
		await client.close();
	});

	it("a 2026-07-28 client sees the shaped list and calls the alias", async () => {
		const server = await shapedServer();
		const key = await createKey({ servers: [server] });
		const listed = (await (
			await modernPost(`/mcp/${server}`, key.key, { id: 1, method: "tools/list", params: { _meta: ENVELOPE } })
		).json()) as { result: { tools: Array<{ name: string }> } };
		const names = listed.result.tools.map((tool) => tool.name);
		expect(names).toContain("say_back");
		expect(names).not.toContain("echo");
		const called = (await (
			await modernPost(`/mcp/${server}`, key.key, {
				id: 2,
				method: "tools/call",
				params: { name: "say_back", arguments: { text: "modern" }, _meta: ENVELOPE },
			})
		).json()) as { result: object };
		expect(textOf(called.result)).toBe("modern");
	});

	it("two aliases alike are refused at PUT, naming both tools", async () => {
		const response = await admin("PUT", `/servers/${uniqueName("clash")}`, {
			url: upstreamUrl("beta"),
			tools: { overrides: { echo: { name: "same" }, add: { name: "same" } } },
		});
		expect(response.status).toBe(400);
		const body = await response.text();
		expect(body).toContain("echo");
		expect(body).toContain("add");
	});

	it("a virtual server offers what its tools globs choose of its members' tools; what it leaves out is an unknown tool", async () => {
		const first = await shapedServer();
		const second = await shapedServer();
		const virtual = uniqueName("chosen");
		const created = await admin("PUT", `/virtual-servers/${virtual}`, {
			servers: [first, second],
			tools: { exclude: ["*__add"], include: [`${first}__*`, `${second}__say_back`, `${second}__add`] },
		});
		expect(created.status).toBe(201);
		const key = await createKey({ servers: [virtual] });
		const { client } = await connectClient(`/mcp/${virtual}`, key.key);
		const names = (await client.listTools()).tools.map((tool) => tool.name);
		expect(names).toContain(`${first}__say_back`);
		expect(names).toContain(`${second}__say_back`);
		expect(names.filter((tool) => tool.endsWith("__add"))).toEqual([]);
		expect(names.some((tool) => tool.startsWith(`${second}__`) && tool !== `${second}__say_back`)).toBe(false);
		const refused = await client
			.callTool({ name: `${second}__whoami`, arguments: {} })
			.catch((error: unknown) => error);
		expect(String(refused)).toContain("Unknown tool");
		expect((await client.callTool({ name: `${second}__say_back`, arguments: { text: "v" } })).content).toEqual([
			{ type: "text", text: "v" },
		]);
		await client.close();
	});
});
