import { describe, expect, it } from "vitest";
import { isAppOnly } from "../src/mcp/app-visibility.ts";
import { admin, connectClient, createKey, uniqueName } from "./support/gateway.ts";
import { connectModernClient } from "./support/modern.ts";
import { registerServer } from "./support/upstreams.ts";

/**
 * MCP Apps' app-only tools on an endpoint in search mode (docs/apps.md,
 * docs/tool-search.md): `@modelcontextprotocol/server-system-monitor` offers
 * `get-system-info` (the model's, with a View) and `poll-system-stats`, which
 * its View polls (`_meta.ui.visibility: ["app"]`). What the gateway builds for
 * the model (search_tools, call_tool, alwaysList) never offers the app-only
 * one; a direct tools/call of it, as a host forwards it from the View, works.
 */

const APP_ONLY = "poll-system-stats";
const MODEL_TOOL = "get-system-info";
/** Words of the app-only tool's own description, as the server gives it. */
const APP_ONLY_WORDS = "dynamic system metrics for polling: per-core CPU timing, memory usage, and uptime";

/** Anything with an SDK client's callTool (SDK 1.32 or v2), as this file calls it. */
interface Caller {
	callTool(params: { name: string; arguments?: Record<string, unknown> }): Promise<object>;
}

/** The names search_tools found, at most 50. */
async function found(client: Caller, query: string): Promise<string[]> {
	const result = (await client.callTool({ name: "search_tools", arguments: { query, limit: 50 } })) as {
		structuredContent?: { tools: Array<{ name: string }> };
	};
	return (result.structuredContent?.tools ?? []).map((tool) => tool.name);
}

/** What a call_tool of `name` was refused with, as the client reports it ("answered" if it was not refused). */
function callToolRefusal(client: Caller, name: string): Promise<string> {
	return client.callTool({ name: "call_tool", arguments: { name, arguments: {} } }).then(
		() => "answered",
		(error: unknown) => String(error),
	);
}

/**
 * The whole behaviour on one endpoint: the app-only tool is found neither by
 * its exact name nor by its description's words (while the model's tool of
 * the same server is), call_tool refuses it in the words of an unknown name,
 * and a View's direct tools/call of it (by its server's name) answers the
 * server's stats.
 */
async function expectAppOnlyKeptFromTheModel(client: Caller, server: string): Promise<void> {
	const appOnly = `${server}__${APP_ONLY}`;
	expect(await found(client, appOnly)).not.toContain(appOnly);
	expect(await found(client, APP_ONLY_WORDS)).not.toContain(appOnly);
	expect(await found(client, "system information hostname platform")).toContain(`${server}__${MODEL_TOOL}`);

	const refused = await callToolRefusal(client, appOnly);
	expect(refused).toContain(`Unknown tool: '${appOnly}' is not offered by this endpoint.`);
	const unknown = "no-such-server__no-such-tool";
	expect(refused.replace(appOnly, "NAME")).toBe((await callToolRefusal(client, unknown)).replace(unknown, "NAME"));

	// What a host forwards from the monitor's View: the tool by its server's own name (decision 0107), which
	// reaches it while the monitor is the endpoint's only member with Views.
	const direct = (await client.callTool({ name: APP_ONLY, arguments: {} })) as {
		isError?: boolean;
		structuredContent?: unknown;
	};
	expect(direct.isError).not.toBe(true);
	expect(direct.structuredContent).toMatchObject({
		cpu: { cores: expect.any(Array) },
		memory: { usedBytes: expect.any(Number) },
		timestamp: expect.any(String),
	});
}

async function virtualServer(body: Record<string, unknown>): Promise<string> {
	const name = uniqueName("apps-search");
	const response = await admin("PUT", `/virtual-servers/${name}`, body);
	if (response.status !== 201) throw new Error(`virtual server: ${await response.text()}`);
	return name;
}

describe("which tools are app-only", () => {
	it("a visibility naming app and not model is app-only; model, both, none, an empty list or a malformed one is not", () => {
		const withVisibility = (visibility: unknown) => ({ _meta: { ui: { visibility } } });
		expect(isAppOnly(withVisibility(["app"]))).toBe(true);
		expect(isAppOnly(withVisibility(["app", "app"]))).toBe(true);
		expect(isAppOnly(withVisibility(["model"]))).toBe(false);
		expect(isAppOnly(withVisibility(["model", "app"]))).toBe(false);
		expect(isAppOnly(withVisibility([]))).toBe(false);
		expect(isAppOnly(withVisibility("app"))).toBe(false);
		expect(isAppOnly({ _meta: { ui: { resourceUri: "ui://x/app.html" } } })).toBe(false);
		expect(isAppOnly({})).toBe(false);
	});
});

describe("app-only tools in search mode (2025-11-25, SDK 1.32)", () => {
	it("on /mcp of a key: search_tools never finds the app-only tool, call_tool refuses it as unknown, a direct tools/call of it works", async () => {
		const monitor = await registerServer("appMonitor");
		const { key } = await createKey({ servers: [monitor], disclosure: "search" });
		const { client } = await connectClient("/mcp", key);
		await expectAppOnlyKeptFromTheModel(client, monitor);
		await client.close();
	});

	it("alwaysList naming all of the app's tools lists its model tool and leaves out its app-only one", async () => {
		const monitor = await registerServer("appMonitor");
		const { key } = await createKey({ servers: [monitor], disclosure: "search", alwaysList: [`${monitor}__*`] });
		const { client } = await connectClient("/mcp", key);
		const { tools } = await client.listTools();
		expect(tools.map((tool) => tool.name)).toEqual(["search_tools", "call_tool", `${monitor}__${MODEL_TOOL}`]);
		await client.close();
	});

	it("on a virtual server in search mode: the app-only tool is neither listed by alwaysList nor found nor called through call_tool, and its direct call works", async () => {
		const monitor = await registerServer("appMonitor");
		const name = await virtualServer({ servers: [monitor], disclosure: "search", alwaysList: [`${monitor}__*`] });
		const { key } = await createKey({ servers: [name] });
		const { client } = await connectClient(`/mcp/${name}`, key);
		const { tools } = await client.listTools();
		expect(tools.map((tool) => tool.name)).toEqual(["search_tools", "call_tool", `${monitor}__${MODEL_TOOL}`]);
		await expectAppOnlyKeptFromTheModel(client, monitor);
		await client.close();
	});

	it("in full mode the list is unchanged: the app-only tool is listed with its visibility, for the host to keep from its model", async () => {
		const monitor = await registerServer("appMonitor");
		const { key } = await createKey({ servers: [monitor] });
		const { client } = await connectClient("/mcp", key);
		const { tools } = await client.listTools();
		expect(tools.find((tool) => tool.name === `${monitor}__${APP_ONLY}`)?._meta).toMatchObject({
			ui: { visibility: ["app"] },
		});
		await client.close();
	});
});

describe("app-only tools in search mode (2026-07-28, SDK v2 pinned)", () => {
	it("on /mcp of a key: search_tools never finds the app-only tool, call_tool refuses it as unknown, a direct tools/call of it works", async () => {
		const monitor = await registerServer("appMonitor");
		const { key } = await createKey({ servers: [monitor], disclosure: "search" });
		const client = await connectModernClient("/mcp", key);
		await expectAppOnlyKeptFromTheModel(client, monitor);
		await client.close();
	});

	it("on a virtual server in search mode: alwaysList leaves the app-only tool out, search and call_tool do not offer it, its direct call works", async () => {
		const monitor = await registerServer("appMonitor");
		const name = await virtualServer({ servers: [monitor], disclosure: "search", alwaysList: [`${monitor}__*`] });
		const { key } = await createKey({ servers: [name] });
		const client = await connectModernClient(`/mcp/${name}`, key);
		const { tools } = await client.listTools();
		expect(tools.map((tool) => tool.name)).toEqual(["search_tools", "call_tool", `${monitor}__${MODEL_TOOL}`]);
		await expectAppOnlyKeptFromTheModel(client, monitor);
		await client.close();
	});
});
