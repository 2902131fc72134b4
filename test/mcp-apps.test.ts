import type { Client as ModernClient } from "@modelcontextprotocol/client";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { VIEW_MIME_TYPE, VIEW_URI, viewUiMeta } from "../scripts/fixtures/app-view-tools.ts";
import { eventually } from "./support/eventually.ts";
import { admin, connectClient, createKey, openSession, readReply, rpc, uniqueName } from "./support/gateway.ts";
import { connectModernClient, textOf } from "./support/modern.ts";
import { upstreamSessionId } from "./support/session-object.ts";
import { registerServer, toolCallsOf, upstreamLog } from "./support/upstreams.ts";

/** What a host that renders MCP Apps declares (the extension's capability). */
const UI_EXTENSION = { "io.modelcontextprotocol/ui": { mimeTypes: [VIEW_MIME_TYPE] } };

/** The View of the extension's basic example server, as it names it. */
const GET_TIME_VIEW = "ui://get-time/mcp-app.html";

type AnyClient = Client | ModernClient;

/** Both eras' SDK clients on one path: the 2025 client (a session) and a 2026-07-28 one. */
const ERAS: Array<[string, (path: string, key: string) => Promise<AnyClient>]> = [
	["a 2025 client", async (path, key) => (await connectClient(path, key)).client],
	["a 2026-07-28 client", (path, key) => connectModernClient(path, key)],
];

/** A tool's View URI under each key of its `_meta`. */
function viewUris(tool: { _meta?: Record<string, unknown> } | undefined) {
	const ui = tool?._meta?.ui as { resourceUri?: string } | undefined;
	return { nested: ui?.resourceUri, legacy: tool?._meta?.["ui/resourceUri"] };
}

/** The error a raw `tools/call` of `name` in a 2025 session on `/mcp` gets (the sentence and code matter here). */
async function callError(key: string, name: string, args: Record<string, unknown> = {}) {
	const sessionId = await openSession("/mcp", key);
	const reply = await readReply(
		await rpc("/mcp", key, sessionId, {
			jsonrpc: "2.0",
			id: 2,
			method: "tools/call",
			params: { name, arguments: args },
		}),
	);
	return reply.error;
}

describe("MCP Apps on /mcp: each member's View under a ui:// URI of its own", () => {
	for (const [era, connect] of ERAS) {
		it(`${era}: two example servers with one ui:// URI and the monitor each point their tool at a distinct ui:// URI naming the member, under both _meta keys and in resources/list`, async () => {
			const a = await registerServer("appBasicA");
			const b = await registerServer("appBasicB");
			const monitor = await registerServer("appMonitor");
			const { key } = await createKey({ servers: [a, b, monitor] });
			const client = await connect("/mcp", key);
			const { tools } = await client.listTools();
			const byName = (name: string) => tools.find((tool) => tool.name === name);
			expect(viewUris(byName(`${a}__get-time`))).toEqual({
				nested: `ui://${a}__get-time/mcp-app.html`,
				legacy: `ui://${a}__get-time/mcp-app.html`,
			});
			expect(viewUris(byName(`${b}__get-time`))).toEqual({
				nested: `ui://${b}__get-time/mcp-app.html`,
				legacy: `ui://${b}__get-time/mcp-app.html`,
			});
			expect(viewUris(byName(`${monitor}__get-system-info`)).nested).toBe(
				`ui://${monitor}__system-monitor/mcp-app.html`,
			);
			const { resources } = await client.listResources();
			expect(resources.map((resource) => resource.uri).sort()).toEqual(
				[
					`ui://${a}__get-time/mcp-app.html`,
					`ui://${b}__get-time/mcp-app.html`,
					`ui://${monitor}__system-monitor/mcp-app.html`,
				].sort(),
			);
			for (const server of [a, b]) {
				const uri = `ui://${server}__get-time/mcp-app.html`;
				const read = await client.readResource({ uri });
				expect(read.contents).toHaveLength(1);
				expect(read.contents[0]).toMatchObject({ uri, mimeType: VIEW_MIME_TYPE });
				expect((read.contents[0] as { text?: string }).text).toContain("<html");
			}
			await client.close();
		});

		it(`${era}: a View read on /mcp reaches its own member, asked with the member's own URI, and keeps its CSP, permissions, domain and border`, async () => {
			const one = await registerServer("viewOne");
			const two = await registerServer("viewTwo");
			const { key } = await createKey({ servers: [one, two] });
			const client = await connect("/mcp", key);
			const { resources } = await client.listResources();
			for (const [server, name] of [
				[one, "view-one"],
				[two, "view-two"],
			] as const) {
				const uri = `ui://${server}__view/app.html`;
				expect(resources.find((resource) => resource.uri === uri)?._meta).toEqual({ ui: viewUiMeta(name) });
				const read = await client.readResource({ uri });
				expect(read.contents).toEqual([
					{
						uri,
						mimeType: VIEW_MIME_TYPE,
						text: `<!doctype html><title>${name}</title><p>View of ${name}</p>`,
						_meta: { ui: viewUiMeta(name) },
					},
				]);
			}
			// Each member was asked with its own URI, never the aggregate's.
			for (const which of ["viewOne", "viewTwo"] as const) {
				const reads = (await upstreamLog(which)).filter((entry) => entry.body?.method === "resources/read");
				expect(reads.some((entry) => entry.body?.params?.uri === VIEW_URI)).toBe(true);
				expect(reads.filter((entry) => String(entry.body?.params?.uri).includes("__"))).toEqual([]);
			}
			await client.close();
		});

		it(`${era}: /mcp/<server> stays transparent: the member's own ui:// URI in its tool, its list and its read`, async () => {
			const a = await registerServer("appBasicA");
			const { key } = await createKey({ servers: [a] });
			const client = await connect(`/mcp/${a}`, key);
			const { tools } = await client.listTools();
			expect(viewUris(tools.find((tool) => tool.name === "get-time"))).toEqual({
				nested: GET_TIME_VIEW,
				legacy: GET_TIME_VIEW,
			});
			expect((await client.listResources()).resources.map((resource) => resource.uri)).toEqual([GET_TIME_VIEW]);
			expect((await client.readResource({ uri: GET_TIME_VIEW })).contents[0]?.uri).toBe(GET_TIME_VIEW);
			await client.close();
		});
	}

	it("a virtual server of two members with one ui:// URI gives each its own form and reads it from that member", async () => {
		const one = await registerServer("viewOne");
		const two = await registerServer("viewTwo");
		const virtual = uniqueName("views");
		expect((await admin("PUT", `/virtual-servers/${virtual}`, { servers: [one, two] })).status).toBe(201);
		const { key } = await createKey({ servers: [virtual] });
		const { client } = await connectClient(`/mcp/${virtual}`, key);
		const { tools } = await client.listTools();
		expect(viewUris(tools.find((tool) => tool.name === `${two}__show_view`)).nested).toBe(`ui://${two}__view/app.html`);
		const read = await client.readResource({ uri: `ui://${two}__view/app.html` });
		expect((read.contents[0] as { text?: string }).text).toContain("View of view-two");
		await client.close();
	});

	it("a virtual server's resource globs choose Views by the members' own ui:// URIs: an excluded View is neither listed nor read in its aggregate form", async () => {
		const one = await registerServer("viewOne");
		const two = await registerServer("viewTwo");
		const virtual = uniqueName("views");
		const body = { servers: [one, two], resources: { exclude: ["ui://view/*"] } };
		expect((await admin("PUT", `/virtual-servers/${virtual}`, body)).status).toBe(201);
		const { key } = await createKey({ servers: [virtual] });
		const sessionId = await openSession(`/mcp/${virtual}`, key);
		const listed = await readReply(
			await rpc(`/mcp/${virtual}`, key, sessionId, { jsonrpc: "2.0", id: 2, method: "resources/list" }),
		);
		const uris = ((listed.result?.resources ?? []) as Array<{ uri: string }>).map((resource) => resource.uri);
		expect(uris.filter((uri) => uri.startsWith("ui://"))).toEqual([]);
		expect(uris).toContain("demo://view-one/readme");
		const before = (await upstreamLog("viewOne")).length;
		const read = await readReply(
			await rpc(`/mcp/${virtual}`, key, sessionId, {
				jsonrpc: "2.0",
				id: 3,
				method: "resources/read",
				params: { uri: `ui://${one}__view/app.html` },
			}),
		);
		expect(read.error?.code).toBe(-32002);
		expect((await upstreamLog("viewOne")).slice(before).map((entry) => entry.body?.method)).not.toContain(
			"resources/read",
		);
	});

	it("subscribing to a View's URI on /mcp subscribes its member under the member's own URI, and its update reaches the client under the aggregate's URI", async () => {
		const one = await registerServer("viewOne");
		const two = await registerServer("viewTwo");
		const { key } = await createKey({ servers: [one, two] });
		const updated: string[] = [];
		const { client, transport } = await connectClient("/mcp", key, {
			setup: (peer) =>
				peer.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => {
					updated.push(notification.params.uri);
				}),
		});
		const uri = `ui://${one}__view/app.html`;
		await client.subscribeResource({ uri });
		const upstreamSession = await upstreamSessionId(transport.sessionId ?? "", one);
		const subscribes = (await upstreamLog("viewOne")).filter(
			(entry) => entry.sessionId === upstreamSession && entry.body?.method === "resources/subscribe",
		);
		expect(subscribes.map((entry) => entry.body?.params?.uri)).toEqual([VIEW_URI]);
		// The client's GET stream is carried by the edge, which listens on the members' streams.
		await eventually(
			async () =>
				(await upstreamLog("viewOne")).some((entry) => entry.method === "GET" && entry.sessionId === upstreamSession),
			"the edge listening on view-one",
		);
		const touched = await client.callTool({ name: `${one}__touch_resource`, arguments: { uri: VIEW_URI } });
		expect(textOf(touched)).toBe(`view-one told subscribers of ${VIEW_URI}`);
		await eventually(async () => updated.length === 1, "the update on the client's GET stream");
		expect(updated).toEqual([uri]);
		await client.close();
	});

	it("on /mcp the members' own colliding ui:// URI, and a ui:// form naming no member, are unknown resources (-32002)", async () => {
		const one = await registerServer("viewOne");
		const two = await registerServer("viewTwo");
		const { key } = await createKey({ servers: [one, two] });
		const sessionId = await openSession("/mcp", key);
		for (const uri of [VIEW_URI, "ui://nobody-here__view/app.html"]) {
			const reply = await readReply(
				await rpc("/mcp", key, sessionId, { jsonrpc: "2.0", id: 3, method: "resources/read", params: { uri } }),
			);
			expect(reply.error?.code).toBe(-32002);
		}
	});
});

describe("A View's calls on /mcp, by its server's own tool names", () => {
	for (const [era, connect] of ERAS) {
		it(`${era}: a View's call of its server's tool name reaches the one member offering it`, async () => {
			const a = await registerServer("appBasicA");
			const monitor = await registerServer("appMonitor");
			const { key } = await createKey({ servers: [a, monitor] });
			const client = await connect("/mcp", key);
			const time = await client.callTool({ name: "get-time", arguments: {} });
			expect((time.structuredContent as { time?: string }).time).toMatch(/^\d{4}-\d\d-\d\dT/);
			const info = await client.callTool({ name: "get-system-info", arguments: {} });
			expect(info.isError).not.toBe(true);
			await client.close();
		});

		it(`${era}: an app-only tool is reached by a View's name while its member is the only one of the endpoint with Views`, async () => {
			const one = await registerServer("viewOne");
			const delta = await registerServer("delta");
			const { key } = await createKey({ servers: [one, delta] });
			const client = await connect("/mcp", key);
			expect(textOf(await client.callTool({ name: "view_poll", arguments: {} }))).toBe("view-one polled");
			expect(textOf(await client.callTool({ name: "show_view", arguments: {} }))).toBe("view-one shows its view");
			await client.close();
		});
	}

	it("a View's tool name that two members offer is refused naming both, and reaches neither", async () => {
		const one = await registerServer("viewOne");
		const two = await registerServer("viewTwo");
		const { key } = await createKey({ servers: [one, two] });
		const nonce = { nonce: crypto.randomUUID() };
		const error = await callError(key, "show_view", nonce);
		expect(error?.code).toBe(-32602);
		expect(error?.message).toContain(`several servers of this endpoint (${one}, ${two})`);
		expect(await toolCallsOf("viewOne", "show_view", nonce)).toEqual([]);
		expect(await toolCallsOf("viewTwo", "show_view", nonce)).toEqual([]);
	});

	it("an app-only tool is not run by a View's name while another member of the endpoint also serves Views", async () => {
		const one = await registerServer("viewOne");
		const a = await registerServer("appBasicA");
		const { key } = await createKey({ servers: [one, a] });
		const nonce = { nonce: crypto.randomUUID() };
		const error = await callError(key, "view_poll", nonce);
		expect(error?.code).toBe(-32602);
		expect(error?.message).toContain(`also serves Views of ${a}`);
		expect(await toolCallsOf("viewOne", "view_poll", nonce)).toEqual([]);
	});

	it("the monitor's app-only tool is not run for a View on an endpoint where the basic server's View could be the caller", async () => {
		const a = await registerServer("appBasicA");
		const monitor = await registerServer("appMonitor");
		const { key } = await createKey({ servers: [a, monitor] });
		const error = await callError(key, "poll-system-stats");
		expect(error?.code).toBe(-32602);
		expect(error?.message).toContain(`Tool 'poll-system-stats' of ${monitor} is for its own server's Views only`);
	});

	it("an app-only tool is never run by the name the aggregate lists it under", async () => {
		const one = await registerServer("viewOne");
		const delta = await registerServer("delta");
		const { key } = await createKey({ servers: [one, delta] });
		const nonce = { nonce: crypto.randomUUID() };
		const error = await callError(key, `${one}__view_poll`, nonce);
		expect(error?.code).toBe(-32602);
		expect(error?.message).toContain("a View calls it by its own name, 'view_poll'");
		expect(await toolCallsOf("viewOne", "view_poll", nonce)).toEqual([]);
	});
});

describe("The extension's capability reaches every member that a host declared it to", () => {
	/** The capabilities each kind of member says it was given: a 2025 member's initialize, a 2026-07-28 member's envelope. */
	async function seenBy(client: AnyClient, prefix: string) {
		const legacy = await client.callTool({ name: `${prefix}client_capabilities`, arguments: {} });
		return JSON.parse(textOf(legacy) ?? "{}") as Record<string, unknown>;
	}

	it("a 2025 client's extensions reach a 2025 and a 2026-07-28 member of /mcp, a transparent server and a virtual server's member", async () => {
		const one = await registerServer("viewOne");
		const modern = await registerServer("modern");
		const virtual = uniqueName("views");
		expect((await admin("PUT", `/virtual-servers/${virtual}`, { servers: [one] })).status).toBe(201);
		const { key } = await createKey({ servers: [one, modern, virtual] });
		const capabilities = { extensions: UI_EXTENSION };
		const { client } = await connectClient("/mcp", key, { capabilities });
		expect((await seenBy(client, `${one}__`)).extensions).toEqual(UI_EXTENSION);
		const whoami = await client.callTool({ name: `${modern}__whoami`, arguments: {} });
		expect((whoami.structuredContent as { clientCapabilities?: Record<string, unknown> }).clientCapabilities).toEqual(
			expect.objectContaining({ extensions: UI_EXTENSION }),
		);
		await client.close();
		for (const path of [`/mcp/${one}`, `/mcp/${virtual}`]) {
			const { client: direct } = await connectClient(path, key, { capabilities });
			const prefix = path === `/mcp/${one}` ? "" : `${one}__`;
			expect((await seenBy(direct, prefix)).extensions).toEqual(UI_EXTENSION);
			await direct.close();
		}
	});

	it("a 2026-07-28 client's envelope extensions reach a 2025 and a 2026-07-28 member of /mcp, a transparent server and a virtual server's member", async () => {
		const one = await registerServer("viewOne");
		const modern = await registerServer("modern");
		const virtual = uniqueName("views");
		expect((await admin("PUT", `/virtual-servers/${virtual}`, { servers: [one, modern] })).status).toBe(201);
		const { key } = await createKey({ servers: [one, modern, virtual] });
		const capabilities = { extensions: UI_EXTENSION };
		for (const path of ["/mcp", `/mcp/${virtual}`]) {
			const client = await connectModernClient(path, key, capabilities);
			expect((await seenBy(client, `${one}__`)).extensions).toEqual(UI_EXTENSION);
			const whoami = await client.callTool({ name: `${modern}__whoami`, arguments: {} });
			expect((whoami.structuredContent as { clientCapabilities?: Record<string, unknown> }).clientCapabilities).toEqual(
				expect.objectContaining({ extensions: UI_EXTENSION }),
			);
			await client.close();
		}
		for (const [server, tool] of [
			[one, "client_capabilities"],
			[modern, "whoami"],
		] as const) {
			const client = await connectModernClient(`/mcp/${server}`, key, capabilities);
			const result = await client.callTool({ name: tool, arguments: {} });
			const seen =
				tool === "whoami"
					? (result.structuredContent as { clientCapabilities?: Record<string, unknown> }).clientCapabilities
					: (JSON.parse(textOf(result) ?? "{}") as Record<string, unknown>);
			expect(seen?.extensions).toEqual(UI_EXTENSION);
			await client.close();
		}
	});
});
