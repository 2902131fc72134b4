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

/** The requests an upstream received of `method` whose params mention `marker` anywhere. */
function sentWith(log: readonly UpstreamLogEntry[], method: string, marker: string): UpstreamLogEntry[] {
	return log.filter((entry) => entry.body?.method === method && JSON.stringify(entry.body.params).includes(marker));
}

/** A 2026-07-28 list request's result. */
async function modernList(path: string, key: string, method: string): Promise<Record<string, unknown>> {
	return (await readReply(await modernPost(path, key, { id: 1, method, params: { _meta: ENVELOPE } }))).result ?? {};
}

/** A beta server that hides its `greet` prompt, its readme, and notes whose id starts with `secret-`. */
const HIDING = {
	prompts: { exclude: ["gr*"] },
	// `*` crosses `/`: one glob covers the readme whatever the URI's authority and path before it.
	resources: { exclude: ["*/readme", "*/notes/secret-*"] },
};

describe("a server's prompts and resources chosen by globs", () => {
	it("on /mcp/<server>: hidden prompts and resources are not listed, and using them is refused as unknown without reaching the upstream", async () => {
		const name = await server(HIDING);
		const key = await createKey({ servers: [name] });
		const { client } = await connectClient(`/mcp/${name}`, key.key);
		expect((await client.listPrompts()).prompts.map((prompt) => prompt.name)).not.toContain("greet");
		expect((await client.listResources()).resources.map((resource) => resource.uri)).not.toContain(
			"demo://beta/readme",
		);
		expect((await client.listResourceTemplates()).resourceTemplates.map((template) => template.uriTemplate)).toEqual([
			"demo://beta/notes/{id}",
		]);
		const marker = uniqueName("hidden");
		const prompt = await client.getPrompt({ name: "greet", arguments: { who: marker } }).catch((e: unknown) => e);
		expect(String(prompt)).toContain("Unknown prompt: 'greet' is not offered by this endpoint.");
		const secret = `demo://beta/notes/secret-${marker}`;
		for (const use of [() => client.readResource({ uri: secret }), () => client.subscribeResource({ uri: secret })]) {
			expect(String(await use().catch((e: unknown) => e))).toContain(
				`Resource not found: ${secret} is not offered by this endpoint.`,
			);
		}
		const readme = await client.readResource({ uri: "demo://beta/readme" }).catch((e: unknown) => e);
		expect(String(readme)).toContain("Resource not found: demo://beta/readme is not offered by this endpoint.");
		// What the globs keep is served as before.
		const open = `demo://beta/notes/open-${marker}`;
		expect((await client.readResource({ uri: open })).contents).toEqual([{ uri: open, text: `note open-${marker}` }]);
		const log = await upstreamLog("beta");
		expect(sentWith(log, "prompts/get", marker)).toEqual([]);
		expect(log.filter((entry) => JSON.stringify(entry.body?.params ?? {}).includes(`secret-${marker}`))).toEqual([]);
		expect(sentWith(log, "resources/read", `open-${marker}`)).toHaveLength(1);
		await client.close();
	});

	it("a 2026-07-28 client of the server sees the chosen lists and is refused the hidden prompt", async () => {
		const name = await server(HIDING);
		const key = await createKey({ servers: [name] });
		const list = (method: string) => modernList(`/mcp/${name}`, key.key, method);
		const prompts = (await list("prompts/list")).prompts as Array<{ name: string }>;
		expect(prompts.map((prompt) => prompt.name)).not.toContain("greet");
		const resources = (await list("resources/list")).resources as Array<{ uri: string }>;
		expect(resources.map((resource) => resource.uri)).not.toContain("demo://beta/readme");
		const refused = await readReply(
			await modernPost(`/mcp/${name}`, key.key, {
				id: 2,
				method: "prompts/get",
				params: { name: "greet", arguments: { who: "x" }, _meta: ENVELOPE },
			}),
		);
		expect(refused.error?.message).toContain("Unknown prompt: 'greet' is not offered by this endpoint.");
	});

	it("a resources glob that is not a URI glob is refused at PUT", async () => {
		const response = await admin("PUT", `/servers/${uniqueName("badglob")}`, {
			url: upstreamUrl("beta"),
			resources: { exclude: ["demo://has space/*"] },
		});
		expect(response.status).toBe(400);
		expect(await response.text()).toContain("resources");
	});
});

describe("a virtual server's choice of its members' prompts and resources", () => {
	async function choosing(): Promise<{ beta: string; gamma: string; virtual: string }> {
		const beta = await server();
		const gammaName = uniqueName("member");
		const put = await admin("PUT", `/servers/${gammaName}`, { url: upstreamUrl("gamma") });
		if (put.status !== 201) throw new Error(`server: ${await put.text()}`);
		const virtual = await virtualServer({
			servers: [beta, gammaName],
			prompts: { exclude: [`${beta}__greet`] },
			// Over URIs, which aggregation leaves as they are: all of gamma's, its template included.
			resources: { exclude: ["demo://gamma/*"] },
		});
		return { beta, gamma: gammaName, virtual };
	}

	it("hidden prompts and resources of members are not listed on /mcp/<virtual>, and are refused as unknown without reaching the upstream", async () => {
		const { beta, gamma, virtual } = await choosing();
		const key = await createKey({ servers: [virtual] });
		const { client } = await connectClient(`/mcp/${virtual}`, key.key);
		const prompts = (await client.listPrompts()).prompts.map((prompt) => prompt.name);
		expect(prompts).toContain(`${gamma}__greet`);
		expect(prompts).not.toContain(`${beta}__greet`);
		expect((await client.listResources()).resources.map((resource) => resource.uri)).toEqual(["demo://beta/readme"]);
		expect((await client.listResourceTemplates()).resourceTemplates.map((template) => template.uriTemplate)).toEqual([
			"demo://beta/notes/{id}",
		]);
		const marker = uniqueName("hidden");
		const prompt = await client
			.getPrompt({ name: `${beta}__greet`, arguments: { who: marker } })
			.catch((e: unknown) => e);
		expect(String(prompt)).toContain(`Unknown prompt: '${beta}__greet' is not offered by this endpoint.`);
		const note = `demo://gamma/notes/${marker}`;
		expect(String(await client.readResource({ uri: note }).catch((e: unknown) => e))).toContain(
			`Resource not found: ${note} is not offered by this endpoint.`,
		);
		expect((await client.getPrompt({ name: `${gamma}__greet`, arguments: { who: marker } })).messages).toHaveLength(1);
		expect(sentWith(await upstreamLog("beta"), "prompts/get", marker)).toEqual([]);
		const gammaLog = await upstreamLog("gamma");
		expect(sentWith(gammaLog, "resources/read", marker)).toEqual([]);
		expect(sentWith(gammaLog, "prompts/get", marker)).toHaveLength(1);
		await client.close();
	});

	it("a 2026-07-28 client of the virtual server sees the chosen lists", async () => {
		const { beta, gamma, virtual } = await choosing();
		const key = await createKey({ servers: [virtual] });
		const list = (method: string) => modernList(`/mcp/${virtual}`, key.key, method);
		const prompts = ((await list("prompts/list")).prompts as Array<{ name: string }>).map((prompt) => prompt.name);
		expect(prompts).toContain(`${gamma}__greet`);
		expect(prompts).not.toContain(`${beta}__greet`);
		const resources = (await list("resources/list")).resources as Array<{ uri: string }>;
		expect(resources.map((resource) => resource.uri)).toEqual(["demo://beta/readme"]);
		const templates = (await list("resources/templates/list")).resourceTemplates as Array<{ uriTemplate: string }>;
		expect(templates.map((template) => template.uriTemplate)).toEqual(["demo://beta/notes/{id}"]);
	});

	it("a virtual server's alias named search_tools or call_tool (the gateway's own tools in search mode) is refused at PUT", async () => {
		const member = await server();
		for (const name of ["search_tools", "call_tool"]) {
			const virtual = uniqueName("taken");
			const refused = await admin("PUT", `/virtual-servers/${virtual}`, {
				servers: [member],
				tools: { overrides: { [`${member}__echo`]: { name } } },
			});
			expect(refused.status).toBe(400);
			expect(await refused.text()).toContain(`'${name}' is the name of the gateway's own tool in search mode`);
			expect((await admin("GET", `/virtual-servers/${virtual}`)).status).toBe(404);
		}
	});
});
