import { afterEach, describe, expect, it } from "vitest";
import { admin, connectClient, createKey, readReply, uniqueName } from "./support/gateway.ts";
import { ENVELOPE, modernPost, textOf } from "./support/modern.ts";
import { type UpstreamLogEntry, upstreamLog, upstreamUrl } from "./support/upstreams.ts";

/**
 * Shaping beyond a server's tools: a virtual server's own aliases,
 * descriptions and annotations over its members' (already shaped) tools, and
 * include/exclude of prompts and resources on servers and virtual servers.
 * Real SDK upstreams (beta: the demo catalog, with the `greet` prompt, the
 * `demo://beta/readme` resource and the `demo://beta/notes/{id}` template).
 */

const policies: string[] = [];
afterEach(async () => {
	for (const name of policies.splice(0)) await admin("DELETE", `/policies/${name}`);
});

async function server(shaping: Record<string, unknown> = {}): Promise<string> {
	const name = uniqueName("member");
	const response = await admin("PUT", `/servers/${name}`, { url: upstreamUrl("beta"), ...shaping });
	if (response.status !== 201) throw new Error(`server: ${await response.text()}`);
	return name;
}

async function virtualServer(body: Record<string, unknown>): Promise<string> {
	const name = uniqueName("virtual");
	const response = await admin("PUT", `/virtual-servers/${name}`, body);
	if (response.status !== 201) throw new Error(`virtual server: ${await response.text()}`);
	return name;
}

/** The tools/call requests the upstream received, by the name they were sent under. */
function calledNames(log: readonly UpstreamLogEntry[]): string[] {
	return log.filter((entry) => entry.body?.method === "tools/call").map((entry) => String(entry.body?.params?.name));
}

/**
 * A member whose own shaping renames echo to say_back, behind a virtual
 * server that renames `<member>__say_back` again, re-describes it, and marks
 * `<member>__whoami` read-only with a title of its own.
 */
async function aliasingVirtualServer(alias: string): Promise<{ member: string; virtual: string }> {
	const member = await server({ tools: { overrides: { echo: { name: "say_back" } } } });
	const virtual = await virtualServer({
		servers: [member],
		tools: {
			overrides: {
				[`${member}__say_back`]: { name: alias, description: "Says it back, as this endpoint's operator puts it." },
				[`${member}__whoami`]: { annotations: { readOnlyHint: true, title: "Who answers" } },
			},
		},
	});
	return { member, virtual };
}

describe("a virtual server's own overrides of its members' tools", () => {
	it("lists the alias (the whole name, no prefix), its description and the operator's annotations; the replaced name is gone", async () => {
		const alias = uniqueName("speak");
		const { member, virtual } = await aliasingVirtualServer(alias);
		const key = await createKey({ servers: [virtual] });
		const { client } = await connectClient(`/mcp/${virtual}`, key.key);
		const tools = (await client.listTools()).tools;
		const names = tools.map((tool) => tool.name);
		expect(names).toContain(alias);
		expect(names).not.toContain(`${member}__say_back`);
		expect(names).not.toContain(`${member}__echo`);
		expect(tools.find((tool) => tool.name === alias)?.description).toBe(
			"Says it back, as this endpoint's operator puts it.",
		);
		expect(tools.find((tool) => tool.name === `${member}__whoami`)?.annotations).toMatchObject({
			readOnlyHint: true,
			title: "Who answers",
		});
		await client.close();
	});

	it("the alias reaches the upstream under its real name; the replaced and real names are unknown tools and never reach it", async () => {
		const alias = uniqueName("speak");
		const { member, virtual } = await aliasingVirtualServer(alias);
		const key = await createKey({ servers: [virtual] });
		const { client } = await connectClient(`/mcp/${virtual}`, key.key);
		const marker = uniqueName("said");
		expect((await client.callTool({ name: alias, arguments: { text: marker } })).content).toEqual([
			{ type: "text", text: marker },
		]);
		for (const name of [`${member}__say_back`, `${member}__echo`]) {
			const refused = await client.callTool({ name, arguments: { text: "x" } }).catch((error: unknown) => error);
			expect(String(refused)).toContain(`Unknown tool: '${name}' is not offered by this endpoint.`);
		}
		const log = await upstreamLog("beta");
		const sent = log.filter(
			(entry) =>
				entry.body?.method === "tools/call" &&
				(entry.body.params?.arguments as { text?: unknown } | undefined)?.text === marker,
		);
		expect(sent.map((entry) => entry.body?.params?.name)).toEqual(["echo"]);
		// The whole log of the run: no name but the upstream's own ever reached it.
		const names = calledNames(log);
		for (const name of [alias, "say_back", `${member}__say_back`, `${member}__echo`]) expect(names).not.toContain(name);
		await client.close();
	});

	it("a 2026-07-28 client on /mcp/<virtual> sees the shaped list and calls the alias", async () => {
		const alias = uniqueName("speak");
		const { member, virtual } = await aliasingVirtualServer(alias);
		const key = await createKey({ servers: [virtual] });
		const listed = (await (
			await modernPost(`/mcp/${virtual}`, key.key, { id: 1, method: "tools/list", params: { _meta: ENVELOPE } })
		).json()) as { result: { tools: Array<{ name: string; description?: string }> } };
		const names = listed.result.tools.map((tool) => tool.name);
		expect(names).toContain(alias);
		expect(names).not.toContain(`${member}__say_back`);
		const called = await readReply(
			await modernPost(`/mcp/${virtual}`, key.key, {
				id: 2,
				method: "tools/call",
				params: { name: alias, arguments: { text: "modern" }, _meta: ENVELOPE },
			}),
		);
		expect(textOf(called.result ?? {})).toBe("modern");
		const refused = await readReply(
			await modernPost(`/mcp/${virtual}`, key.key, {
				id: 3,
				method: "tools/call",
				params: { name: `${member}__say_back`, arguments: { text: "x" }, _meta: ENVELOPE },
			}),
		);
		expect(refused.error?.message).toContain("Unknown tool");
	});

	it("policies see the virtual server's alias as tool.name and the upstream's name as tool.realName", async () => {
		const alias = uniqueName("speak");
		const { virtual } = await aliasingVirtualServer(alias);
		const denying = uniqueName("policy");
		const put = await admin("PUT", `/policies/${denying}`, {
			expression: `tool.name == "${alias}" && tool.realName == "echo"`,
			effect: "deny",
			applies: { virtualServers: [virtual] },
		});
		expect(put.status).toBe(201);
		policies.push(denying);
		const key = await createKey({ servers: [virtual] });
		const { client } = await connectClient(`/mcp/${virtual}`, key.key);
		expect((await client.listTools()).tools.map((tool) => tool.name)).not.toContain(alias);
		const refused = await client.callTool({ name: alias, arguments: { text: "x" } }).catch((error: unknown) => error);
		expect(String(refused)).toContain(`policy '${denying}'`);
		await client.close();
	});

	it("two overrides alike, or an alias equal to another overridden name, are refused at PUT naming both", async () => {
		const member = await server();
		const alike = await admin("PUT", `/virtual-servers/${uniqueName("clash")}`, {
			servers: [member],
			tools: { overrides: { [`${member}__echo`]: { name: "same" }, [`${member}__add`]: { name: "same" } } },
		});
		expect(alike.status).toBe(400);
		const alikeBody = await alike.text();
		expect(alikeBody).toContain(`${member}__echo`);
		expect(alikeBody).toContain(`${member}__add`);
		const taken = await admin("PUT", `/virtual-servers/${uniqueName("clash")}`, {
			servers: [member],
			tools: {
				overrides: {
					[`${member}__add`]: { description: "Kept under its own name." },
					[`${member}__echo`]: { name: `${member}__add` },
				},
			},
		});
		expect(taken.status).toBe(400);
		const takenBody = await taken.text();
		expect(takenBody).toContain(`'${member}__add' would name both '${member}__add' and '${member}__echo'`);
	});
});
