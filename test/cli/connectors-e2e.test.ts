import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { join, resolve } from "node:path";
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from "@modelcontextprotocol/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
	CreateMessageRequestSchema,
	ElicitRequestSchema,
	LoggingMessageNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type RunningGateway, startGateway } from "../../scripts/conformance/gateway.ts";
import { Browser } from "../../scripts/fixtures/browser.ts";
import type { OAuthUpstreamStats } from "../../scripts/fixtures/control-shapes.ts";
import { type RunningOAuthUpstream, startOAuthUpstream } from "../../scripts/fixtures/oauth-upstream.ts";
import type { RecordedRequest } from "../../scripts/fixtures/upstream-server.ts";
import { type RunningUpstream, startUpstream } from "../../scripts/fixtures/upstream-server.ts";
import { type Child, Processes } from "../../scripts/processes.ts";
import { eventually } from "../support/eventually.ts";

/**
 * Servers reached through connectors, end to end with real processes: the
 * gateway under `wrangler dev`, `mcpgw connect` dialling it, and the stdio
 * server (`@modelcontextprotocol/server-filesystem`) the connector runs a
 * child of per upstream session; SDK clients of both eras through the gateway.
 */

const ROOT = resolve(import.meta.dirname, "../..");
const FILESYSTEM = join(ROOT, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
const EVERYTHING = join(ROOT, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const MCPGW = join(ROOT, "scripts/cli/mcpgw.mjs");

const procs = new Processes();
/** This file's own gateway (the project's build, served apart): what it registers meets no other file's listings. */
let running: RunningGateway;
const gateway = () => running.url;
let folder: string;

async function admin<T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
	const response = await fetch(`${gateway()}/admin${path}`, {
		method,
		headers: { authorization: `Bearer ${running.adminToken}`, "content-type": "application/json" },
		body: body === undefined ? undefined : JSON.stringify(body),
	});
	const text = await response.text();
	return { status: response.status, body: (text ? JSON.parse(text) : null) as T };
}

/** A connector server (with `auth`, when given), a token for it and a key that may use it. */
async function connectorServer(
	auth?: Record<string, unknown>,
): Promise<{ name: string; token: string; tokenId: string; key: string }> {
	const name = `files-${crypto.randomUUID().slice(0, 8)}`;
	const body = auth === undefined ? { connector: {} } : { connector: {}, auth };
	expect((await admin("PUT", `/servers/${name}`, body)).status).toBe(201);
	const made = await admin<{ id: string; token: string }>("POST", `/servers/${name}/connector-tokens`);
	expect(made.status).toBe(201);
	const key = await admin<{ key: string }>("POST", "/keys", { name: `k-${name}`, servers: [name] });
	return { name, token: made.body.token, tokenId: made.body.id, key: key.body.key };
}

/** `mcpgw connect` for `server` with these arguments after its token. */
function connector(server: string, token: string, rest: string[]): Child {
	return procs.spawn(
		`connector for ${server}`,
		process.execPath,
		[MCPGW, "connect", server, "--url", gateway(), "--token", token, ...rest],
		{
			cwd: ROOT,
		},
	);
}

/** `mcpgw connect` for `server`, running the filesystem server over `folder`. */
function connect(server: string, token: string): Child {
	return connector(server, token, ["--", process.execPath, FILESYSTEM, folder]);
}

/** Kills a connector at once, with its children (its process group), as a crash or `kill -9` would. */
async function kill(child: Child): Promise<void> {
	if (child.process.pid !== undefined) process.kill(-child.process.pid, "SIGKILL");
	await child.exited;
}

/** The connectors the gateway lists for `server`. */
async function online(server: string): Promise<Array<{ id: string; sessions: number }>> {
	const shown = await admin<{ connectors?: Array<{ id: string; sessions: number }> }>("GET", `/servers/${server}`);
	return shown.body.connectors ?? [];
}

async function legacyClient(server: string, key: string, capabilities: Record<string, object> = {}): Promise<Client> {
	const client = new Client({ name: "e2e", version: "1.0.0" }, { capabilities });
	await client.connect(
		new StreamableHTTPClientTransport(new URL(`${gateway()}/mcp/${server}`), {
			requestInit: { headers: { authorization: `Bearer ${key}` } },
		}),
	);
	return client;
}

/** A raw initialize to `/mcp/<server>` with `key`, for the exact reply. */
function rawInitialize(server: string, key: string): Promise<Response> {
	return fetch(`${gateway()}/mcp/${server}`, {
		method: "POST",
		headers: {
			authorization: `Bearer ${key}`,
			"content-type": "application/json",
			accept: "application/json, text/event-stream",
		},
		body: JSON.stringify({
			jsonrpc: "2.0",
			id: 1,
			method: "initialize",
			params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "e2e", version: "1" } },
		}),
	});
}

/** The connect link of a -32042 answer to a raw initialize. */
async function connectLinkOf(response: Response): Promise<string> {
	const reply = (await response.json()) as { error: { code: number; data: { elicitations: Array<{ url: string }> } } };
	expect(reply.error.code).toBe(-32042);
	return reply.error.data.elicitations[0]?.url ?? "";
}

beforeAll(async () => {
	running = await startGateway(
		procs,
		{ entry: inject("cliGatewayEntry") },
		{
			name: "gateway for the connector tests (wrangler dev)",
			dir: procs.tempDir("mcp-edge-connectors-"),
			// People's connections at an oauth server are kept sealed under it.
			secrets: { TOKEN_VAULT_KEY: randomBytes(32).toString("base64url") },
		},
	);
	folder = procs.tempDir("mcp-edge-files-");
	mkdirSync(join(folder, "notes"));
	writeFileSync(join(folder, "notes", "hello.txt"), "hello from the connector's side\n");
}, 90_000);

afterAll(async () => {
	await procs.stopAll();
});

describe("a stdio server reached through a connector", () => {
	it("a 2025 client lists, reads and writes files through the connector's filesystem server", async () => {
		const { name, token, key } = await connectorServer();
		connect(name, token);
		await eventually(async () => (await online(name)).length === 1, "the connector online", 20_000);
		const client = await legacyClient(name, key);
		const tools = (await client.listTools()).tools.map((tool) => tool.name);
		expect(tools).toEqual(expect.arrayContaining(["read_text_file", "write_file", "list_directory"]));
		const read = await client.callTool({
			name: "read_text_file",
			arguments: { path: join(folder, "notes", "hello.txt") },
		});
		expect(JSON.stringify(read.content)).toContain("hello from the connector's side");
		await client.callTool({
			name: "write_file",
			arguments: { path: join(folder, "notes", "new.txt"), content: "written" },
		});
		expect(readFileSync(join(folder, "notes", "new.txt"), "utf8")).toBe("written");
		await client.close();
	});

	it("a 2026-07-28 client calls the same server statelessly through the connector", async () => {
		const { name, token, key } = await connectorServer();
		connect(name, token);
		await eventually(async () => (await online(name)).length === 1, "the connector online", 20_000);
		const client = new ModernClient(
			{ name: "e2e-modern", version: "1.0.0" },
			{ versionNegotiation: { mode: { pin: "2026-07-28" } } },
		);
		await client.connect(
			new ModernTransport(new URL(`${gateway()}/mcp/${name}`), {
				requestInit: { headers: { authorization: `Bearer ${key}` } },
			}),
		);
		const listed = await client.callTool({ name: "list_directory", arguments: { path: join(folder, "notes") } });
		expect(JSON.stringify(listed.content)).toContain("hello.txt");
		await client.close();
	});

	it("clients of both eras on the aggregate endpoint /mcp call the server through the connector", async () => {
		const { name, token, key } = await connectorServer();
		connect(name, token);
		await eventually(async () => (await online(name)).length === 1, "the connector online", 20_000);
		const path = join(folder, "notes", "hello.txt");
		const legacy = new Client({ name: "e2e-aggregate", version: "1.0.0" });
		await legacy.connect(
			new StreamableHTTPClientTransport(new URL(`${gateway()}/mcp`), {
				requestInit: { headers: { authorization: `Bearer ${key}` } },
			}),
		);
		const tools = (await legacy.listTools()).tools.map((tool) => tool.name);
		expect(tools).toContain(`${name}__read_text_file`);
		const read = await legacy.callTool({ name: `${name}__read_text_file`, arguments: { path } });
		expect(JSON.stringify(read.content)).toContain("hello from the connector's side");
		await legacy.close();
		const modern = new ModernClient(
			{ name: "e2e-aggregate-modern", version: "1.0.0" },
			{ versionNegotiation: { mode: { pin: "2026-07-28" } } },
		);
		await modern.connect(
			new ModernTransport(new URL(`${gateway()}/mcp`), {
				requestInit: { headers: { authorization: `Bearer ${key}` } },
			}),
		);
		const again = await modern.callTool({ name: `${name}__read_text_file`, arguments: { path } });
		expect(JSON.stringify(again.content)).toContain("hello from the connector's side");
		await modern.close();
	});

	it("two sessions get two children of the server", async () => {
		const { name, token, key } = await connectorServer();
		connect(name, token);
		await eventually(async () => (await online(name)).length === 1, "the connector online", 20_000);
		const first = await legacyClient(name, key);
		const second = await legacyClient(name, key);
		await first.listTools();
		await second.listTools();
		await eventually(async () => (await online(name))[0]?.sessions === 2, "two sessions held");
		await Promise.all([first.close(), second.close()]);
	});

	it("with no connector online, a call is answered at once with a sentence naming the server", async () => {
		const { name, key } = await connectorServer();
		const response = await rawInitialize(name, key);
		const reply = (await response.json()) as { id: unknown; error: { message: string; data: { kind: string } } };
		expect(reply.id).toBe(1);
		expect(reply.error.message).toBe(
			`No connector is online for server '${name}': the gateway reaches it only through connectors (mcpgw connect), and none is connected now.`,
		);
		expect(reply.error.data.kind).toBe("upstream_unavailable");
	});

	it("a revoked token drops its connector, which exits with a sentence", async () => {
		const { name, token, tokenId } = await connectorServer();
		const child = connect(name, token);
		await eventually(async () => (await online(name)).length === 1, "the connector online", 20_000);
		expect((await admin("DELETE", `/servers/${name}/connector-tokens/${tokenId}`)).status).toBe(204);
		await eventually(async () => (await online(name)).length === 0, "the connector gone");
		await child.exited;
		expect(child.process.exitCode).not.toBe(0);
		expect(child.output.join("\n")).toMatch(/revoked|refused/);
	});

	it("a token made for another server is refused, and the connector exits saying so", async () => {
		const first = await connectorServer();
		const second = await connectorServer();
		const child = connect(second.name, first.token);
		await child.exited;
		expect(child.process.exitCode).not.toBe(0);
		expect(child.output.join("\n")).toMatch(/refused the connector token/);
		expect(await online(second.name)).toEqual([]);
	});
});

describe("server-everything over stdio through a connector", () => {
	it("progress, sampling and elicitation of a stdio server reach the client through the connector and back", async () => {
		const { name, token, key } = await connectorServer();
		connector(name, token, ["--", process.execPath, EVERYTHING]);
		await eventually(async () => (await online(name)).length === 1, "the connector online", 20_000);
		const client = await legacyClient(name, key, { sampling: {}, elicitation: { form: {} } });
		client.setRequestHandler(CreateMessageRequestSchema, async (request) => ({
			role: "assistant",
			content: { type: "text", text: `sampled: ${JSON.stringify(request.params.messages[0]?.content)}` },
			model: "e2e-model",
		}));
		client.setRequestHandler(ElicitRequestSchema, async () => ({ action: "accept", content: { name: "Ada" } }));
		const progress: number[] = [];
		const long = await client.callTool(
			{ name: "trigger-long-running-operation", arguments: { duration: 0.2, steps: 2 } },
			undefined,
			{ onprogress: (update) => progress.push(update.progress) },
		);
		expect(JSON.stringify(long.content)).toContain("completed");
		expect(progress).toEqual([1, 2]);
		const sampled = await client.callTool({
			name: "trigger-sampling-request",
			arguments: { prompt: "hello connector" },
		});
		expect(JSON.stringify(sampled.content)).toContain("sampled:");
		expect(JSON.stringify(sampled.content)).toContain("hello connector");
		const elicited = await client.callTool({ name: "trigger-elicitation-request", arguments: {} });
		expect(JSON.stringify(elicited.content)).toContain("Ada");
		await client.close();
	});
});

describe("a private HTTP server reached through a connector (--upstream)", () => {
	let privateServer: RunningUpstream;
	const origin = () => new URL(privateServer.url).origin;
	const log = async () => (await (await fetch(`${origin()}/_log`)).json()) as RecordedRequest[];
	const gate = (name: string) =>
		fetch(`${origin()}/_gates/${name}`).then((r) => r.json() as Promise<{ waiting: number; passed: number }>);
	const release = (name: string) =>
		fetch(`${origin()}/_gates/${name}/release`, { method: "POST" }).then((r) => r.text());

	beforeAll(async () => {
		privateServer = await startUpstream({ name: "private", gates: true, peer: true });
	});
	afterAll(async () => {
		await privateServer?.close();
	});

	it("an SDK server on the connector's network answers through it, and the client's API key reaches neither the connector nor that server", async () => {
		const { name, token, key } = await connectorServer();
		const child = connector(name, token, ["--upstream", privateServer.url]);
		await eventually(async () => (await online(name)).length === 1, "the connector online", 20_000);
		const client = await legacyClient(name, key);
		const marker = `through-${crypto.randomUUID()}`;
		const echoed = await client.callTool({ name: "echo", arguments: { text: marker } });
		expect(echoed.content).toEqual([{ type: "text", text: marker }]);
		await client.close();
		const whole = await log();
		expect(whole.filter((entry) => JSON.stringify(entry.body ?? null).includes(marker))).toHaveLength(1);
		// Every request the server received, headers and bodies, and everything the connector printed.
		expect(JSON.stringify(whole)).not.toContain(key);
		expect(child.output.join("\n")).not.toContain(key);
	});

	it("a connector killed mid-call fails the call promptly as of unknown outcome, saying the connector went away, without replaying it, and the session reads again once a connector is back", async () => {
		const { name, token, key } = await connectorServer();
		const first = connector(name, token, ["--upstream", privateServer.url]);
		await eventually(async () => (await online(name)).length === 1, "the connector online", 20_000);
		const client = await legacyClient(name, key);
		const gateName = `killed-${crypto.randomUUID()}`;
		const call = client.callTool({ name: "gate", arguments: { name: gateName } });
		const failed = call.then(
			(result) => result,
			(error: unknown) => ({ thrown: error }),
		);
		await eventually(async () => (await gate(gateName)).waiting === 1, "the call waiting at the server");
		const killedAt = Date.now();
		await kill(first);
		const answer = await failed;
		// The call's outcome is unknown (it reached the server): a tool error that says so, never a replay.
		expect(answer).toMatchObject({
			isError: true,
			_meta: { "mcp-edge-gateway/error": { kind: "outcome_uncertain", server: name } },
		});
		expect(JSON.stringify(answer)).toContain("may or may not have taken effect");
		expect(JSON.stringify(answer)).toContain("connector went away; the call may have run");
		expect(JSON.stringify(answer)).toContain("It was not retried");
		// Promptly: far sooner than the call's own deadline (a generous bound on a loaded machine).
		expect(Date.now() - killedAt).toBeLessThan(15_000);
		await release(gateName);
		const calls = (await log()).filter((entry) => JSON.stringify(entry.body ?? null).includes(gateName));
		expect(calls).toHaveLength(1);
		connector(name, token, ["--upstream", privateServer.url]);
		await eventually(async () => (await online(name)).length === 1, "a connector back", 20_000);
		const tools = await eventually(async () => (await client.listTools()).tools.map((tool) => tool.name), "a read");
		expect(tools).toContain("echo");
		await client.close();
	});

	it("what the server sends outside any request reaches a 2025 client's listening stream through the connector", async () => {
		const { name, token, key } = await connectorServer();
		connector(name, token, ["--upstream", privateServer.url]);
		await eventually(async () => (await online(name)).length === 1, "the connector online", 20_000);
		const gets = async () => (await log()).filter((entry) => entry.method === "GET").length;
		const before = await gets();
		const client = await legacyClient(name, key);
		const heard: string[] = [];
		client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
			heard.push(String(notification.params.data));
		});
		const tag = `outside-${crypto.randomUUID()}`;
		// Listening once the server has a new GET: the client opens its stream after initializing.
		await eventually(async () => (await gets()) > before, "the listening stream open at the server");
		await client.callTool({ name: "announce", arguments: { count: 2, tag } });
		await eventually(() => heard.filter((data) => data.startsWith(tag)).length === 2, "both messages heard");
		expect(heard.filter((data) => data.startsWith(tag))).toEqual([`${tag} 1`, `${tag} 2`]);
		await client.close();
	});

	/**
	 * A proxy between a connector and the private server that counts the POSTs the connector dropped
	 * before their answer ended: what a `cancel` frame does (the connector aborts its request upstream).
	 */
	async function droppingProxy(
		options: { holdHeads?: boolean } = {},
	): Promise<{ url: string; dropped: () => number; close: () => Promise<void> }> {
		let dropped = 0;
		const server = createServer((req, res) => {
			const forward = httpRequest(new URL(req.url ?? "/", origin()), { method: req.method, headers: req.headers });
			forward.on("response", (answer) => {
				if (!options.holdHeads || req.method !== "POST") {
					res.writeHead(answer.statusCode ?? 502, answer.headers);
					answer.pipe(res);
					return;
				}
				// The whole answer at once, once it ended: until then the request has no answer at all.
				const chunks: Buffer[] = [];
				answer.on("data", (chunk: Buffer) => chunks.push(chunk));
				answer.on("end", () => {
					res.writeHead(answer.statusCode ?? 502, answer.headers);
					res.end(Buffer.concat(chunks));
				});
			});
			forward.on("error", () => res.destroy());
			req.pipe(forward);
			res.on("close", () => {
				if (res.writableFinished) return;
				if (req.method === "POST") dropped++;
				forward.destroy();
			});
		});
		await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
		const { port } = server.address() as AddressInfo;
		return {
			url: `http://127.0.0.1:${port}${new URL(privateServer.url).pathname}`,
			dropped: () => dropped,
			close: () =>
				new Promise<void>((resolve) => {
					server.closeAllConnections();
					server.close(() => resolve());
				}),
		};
	}

	it.each([
		{ answer: "has begun (its SSE stream open)", holdHeads: false },
		{ answer: "has not begun (no response yet)", holdHeads: true },
	])(
		"a 2025 client that cancels a call (its AbortSignal) whose answer $answer: the connector is told to cancel, and aborts its request upstream",
		async ({ holdHeads }) => {
			const proxy = await droppingProxy({ holdHeads });
			try {
				const { name, token, key } = await connectorServer();
				connector(name, token, ["--upstream", proxy.url]);
				await eventually(async () => (await online(name)).length === 1, "the connector online", 20_000);
				const client = await legacyClient(name, key);
				const gateName = `cancelled-${crypto.randomUUID()}`;
				const cancelling = new AbortController();
				const call = client
					.callTool({ name: "gate", arguments: { name: gateName } }, undefined, { signal: cancelling.signal })
					.catch((error: unknown) => error);
				await eventually(async () => (await gate(gateName)).waiting === 1, "the call waiting at the server");
				expect(proxy.dropped()).toBe(0);
				cancelling.abort();
				await call;
				await eventually(() => proxy.dropped() === 1, "the connector's request upstream aborted", 15_000);
				await release(gateName);
				await client.close();
			} finally {
				await proxy.close();
			}
		},
	);

	it("a 2025 client whose connection drops mid-call does not cancel it: the call runs on through the connector, as the stream is resumable", async () => {
		const proxy = await droppingProxy();
		try {
			const { name, token, key } = await connectorServer();
			connector(name, token, ["--upstream", proxy.url]);
			await eventually(async () => (await online(name)).length === 1, "the connector online", 20_000);
			const client = await legacyClient(name, key);
			const sessionId = (client.transport as StreamableHTTPClientTransport).sessionId ?? "";
			const gateName = `dropped-${crypto.randomUUID()}`;
			const dropping = new AbortController();
			const call = fetch(`${gateway()}/mcp/${name}`, {
				method: "POST",
				signal: dropping.signal,
				headers: {
					authorization: `Bearer ${key}`,
					"content-type": "application/json",
					accept: "application/json, text/event-stream",
					"mcp-session-id": sessionId,
					"mcp-protocol-version": "2025-11-25",
				},
				body: JSON.stringify({
					jsonrpc: "2.0",
					id: 7,
					method: "tools/call",
					params: { name: "gate", arguments: { name: gateName } },
				}),
			}).catch((error: unknown) => error);
			await eventually(async () => (await gate(gateName)).waiting === 1, "the call waiting at the server");
			dropping.abort();
			await call;
			// The call is released at the server and completes there: nothing aborted it on the way.
			await release(gateName);
			await eventually(async () => (await gate(gateName)).passed === 1, "the call passed its gate");
			// A call of the same session after it is answered: the dropped one was handled by now.
			expect((await client.callTool({ name: "echo", arguments: { text: "after" } })).content).toEqual([
				{ type: "text", text: "after" },
			]);
			expect(proxy.dropped()).toBe(0);
			await client.close();
		} finally {
			await proxy.close();
		}
	});

	it("of two connectors, one killed, new sessions keep working through the other", async () => {
		const { name, token, key } = await connectorServer();
		const first = connector(name, token, ["--upstream", privateServer.url]);
		connector(name, token, ["--upstream", privateServer.url]);
		await eventually(async () => (await online(name)).length === 2, "two connectors online", 20_000);
		await kill(first);
		await eventually(async () => (await online(name)).length === 1, "one connector left");
		for (let i = 0; i < 3; i++) {
			const client = await legacyClient(name, key);
			expect((await client.listTools()).tools.map((tool) => tool.name)).toContain("echo");
			await client.close();
		}
	});
});

describe("an oauth server reached through a connector (--upstream)", () => {
	let oauthUpstream: RunningOAuthUpstream;

	beforeAll(async () => {
		oauthUpstream = await startOAuthUpstream();
	});
	afterAll(async () => {
		await oauthUpstream?.close();
	});

	it("a person connects their account at the upstream's authorization server through the connector, and their calls reach the upstream with their token", async () => {
		const { name, token, key } = await connectorServer({ type: "oauth" });
		connector(name, token, ["--upstream", oauthUpstream.url]);
		await eventually(async () => (await online(name)).length === 1, "the connector online", 20_000);
		// Not connected yet: the initialize is answered -32042 with the link that connects the account.
		const link = await connectLinkOf(await rawInitialize(name, key));
		expect(new URL(link).pathname).toBe(`/connect/${name}`);
		// The link leads, by the metadata the gateway read through the connector, to the upstream's own sign-in.
		const browser = new Browser();
		const form = await browser.get(link);
		expect(form.url.origin).toBe(oauthUpstream.origin);
		const done = await browser.submit(form, { fields: { user: "alice" } });
		expect(done.status, done.html).toBe(200);
		expect(done.html).toContain(`Connected to ${name}`);
		// One code exchanged; the upstream takes only tokens for its own (private) address, which its
		// metadata names as the resource: the call below is answered only if the token was asked for it.
		const stats = (await (await fetch(`${oauthUpstream.origin}/_stats`)).json()) as OAuthUpstreamStats;
		expect(stats.codeExchanges).toBe(1);
		const client = await legacyClient(name, key);
		const who = await client.callTool({ name: "whoami", arguments: {} });
		expect(who.content).toEqual([{ type: "text", text: "alice" }]);
		await client.close();
	});

	it("a stdio server has no protected resource metadata: connecting an account is refused with a sentence", async () => {
		const { name, token, key } = await connectorServer({ type: "oauth" });
		connect(name, token);
		await eventually(async () => (await online(name)).length === 1, "the connector online", 20_000);
		const page = await new Browser().get(await connectLinkOf(await rawInitialize(name, key)));
		expect(page.html).toContain("publishes no protected resource metadata");
	});
});
