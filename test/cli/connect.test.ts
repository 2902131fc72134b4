/**
 * `mcpgw connect`, the connector, as a process: dialled into a fake gateway
 * that speaks the frames of src/connectors/frames.ts, serving real servers
 * (server-everything and server-filesystem over stdio, an SDK server over
 * HTTP) to requests sent as the ConnectorDO sends them.
 */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { InitializeResultSchema, ListToolsResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { backoffDelayMs, DEFAULT_BACKOFF } from "../../scripts/cli/connect/backoff.ts";
import { chunkFrames } from "../../scripts/cli/connect/frame-chunks.ts";
import { GatewayLink, MAX_BUFFERED_BYTES } from "../../scripts/cli/connect/gateway-link.ts";
import { HttpUpstream } from "../../scripts/cli/connect/http-upstream.ts";
import { RequestRuns } from "../../scripts/cli/connect/request-runs.ts";
import { challengeThroughConnector, upstreamMetadataUrls } from "../../scripts/cli/connect/resource-metadata.ts";
import { systemTimers } from "../../scripts/cli/connect/timers.ts";
import { type RunningUpstream, startUpstream } from "../../scripts/fixtures/upstream-server.ts";
import { type ConnectorFrame, MAX_FRAME_BYTES } from "../../src/connectors/frames.ts";
import { mintConnectorToken } from "../../src/registry/connector-tokens.ts";
import { eventually } from "../support/eventually.ts";
import { alive, ConnectorProcess, connected, FramedSession, messagesOf, ROOT, replyTo } from "./connector-process.ts";
import { FakeGateway } from "./fake-gateway.ts";

const SERVER = "files";
const TOKEN = mintConnectorToken().token;
const EVERYTHING = [
	process.execPath,
	join(ROOT, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
	"stdio",
];
const FILESYSTEM = [process.execPath, join(ROOT, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")];
const ENV_ECHO = [process.execPath, join(ROOT, "scripts/fixtures/env-echo-stdio.ts")];
const PACKAGE_VERSION = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string }).version;

let gateway: FakeGateway;
const processes: ConnectorProcess[] = [];
const upstreams: RunningUpstream[] = [];

beforeEach(async () => {
	gateway = await FakeGateway.start(SERVER, TOKEN);
});

afterEach(async () => {
	await Promise.all(processes.splice(0).map((connector) => connector.stop()));
	await Promise.all(upstreams.splice(0).map((upstream) => upstream.close()));
	await gateway.close();
});

/** `mcpgw connect files --url <fake gateway> <args>`, the token from MCPGW_CONNECTOR_TOKEN, backoff in tens of ms. */
function connect(args: string[], env: Record<string, string> = {}): ConnectorProcess {
	const connector = new ConnectorProcess([SERVER, "--url", gateway.url, ...args], {
		MCPGW_CONNECTOR_TOKEN: TOKEN,
		MCPGW_CONNECT_BACKOFF_MS: "20",
		...env,
	});
	processes.push(connector);
	return connector;
}

async function toolNames(session: FramedSession): Promise<string[]> {
	const list = await session.post("tools/list");
	const reply = replyTo(list, list.rpcId);
	if (!("result" in reply)) throw new Error(JSON.stringify(reply));
	return ListToolsResultSchema.parse(reply.result).tools.map((tool) => tool.name);
}

async function gateStatus(upstream: RunningUpstream, name: string): Promise<{ waiting: number }> {
	const response = await fetch(new URL(`/_gates/${name}`, upstream.url));
	return (await response.json()) as { waiting: number };
}

describe("dialling the gateway", () => {
	test("the connector dials /connector/<server> with its token as a bearer and no Origin, says hello, and sends heartbeats", async () => {
		connect(["--max-sessions", "3", "--", ...EVERYTHING], { MCPGW_CONNECT_HEARTBEAT_MS: "50" });
		await connected(gateway);
		const [dial] = gateway.dials;
		expect(dial?.path).toBe(`/connector/${SERVER}`);
		expect(dial?.headers.authorization).toBe(`Bearer ${TOKEN}`);
		expect(dial?.headers.origin).toBeUndefined();
		expect(gateway.framesOf("hello")).toEqual([
			expect.objectContaining({ type: "hello", protocol: 1, version: PACKAGE_VERSION, mode: "stdio", maxSessions: 3 }),
		]);
		await eventually(() => gateway.pings >= 2, "two heartbeats");
	});

	test("the gateway closing the socket (a deploy, 1001) makes the connector dial again after a backoff", async () => {
		const connector = connect(["--", ...EVERYTHING]);
		await connected(gateway);
		gateway.closeConnector(1001, "deploy");
		await connected(gateway, 2);
		expect(connector.stderr).toMatch(/disconnected \(closed by the gateway \(1001: deploy\)\); reconnecting in \d+ ms/);
		expect(connector.stderr).toContain("connected to");
	});

	test("heartbeats left unanswered for two intervals count as a dead connection: the connector dials again", async () => {
		gateway.answerPings = false;
		const connector = connect(["--", ...EVERYTHING], { MCPGW_CONNECT_HEARTBEAT_MS: "50" });
		await connected(gateway, 2);
		expect(connector.stderr).toContain("disconnected (no heartbeat answer from the gateway)");
	});

	test("a refused upgrade (401) exits 1 with a sentence naming the server, without dialling again", async () => {
		const connector = connect(["--", ...EVERYTHING], { MCPGW_CONNECTOR_TOKEN: mintConnectorToken().token });
		expect(await connector.exited).toBe(1);
		expect(connector.stderr).toContain(
			"mcpgw: the gateway refused the connector token for files: HTTP 401: this connector token is not one of this server's",
		);
		expect(gateway.dials).toHaveLength(1);
	});

	test("close code 4001 (the token revoked) exits 1 with a sentence, without dialling again", async () => {
		const connector = connect(["--", ...EVERYTHING]);
		await connected(gateway);
		gateway.closeConnector(4001, "the token was revoked");
		expect(await connector.exited).toBe(1);
		expect(connector.stderr).toContain(
			"mcpgw: the gateway refused the connector token for files: it was revoked or the server deleted (the token was revoked)",
		);
		expect(gateway.dials).toHaveLength(1);
	});

	test("a goodbye frame (the server deleted) exits 1 with the gateway's reason", async () => {
		const connector = connect(["--", ...EVERYTHING]);
		await connected(gateway);
		gateway.send({ type: "goodbye", reason: "the server files was deleted" });
		expect(await connector.exited).toBe(1);
		expect(connector.stderr).toContain(
			"mcpgw: the gateway refused the connector token for files: it was revoked or the server deleted (the server files was deleted)",
		);
	});
});

describe("stdio: one child per session", () => {
	test("server-everything over stdio: a session initializes, lists its tools and calls echo through the connector", async () => {
		connect(["--", ...EVERYTHING]);
		await connected(gateway);
		const session = new FramedSession(gateway);
		const init = await session.initialize();
		expect(init.status).toBe(200);
		const reply = replyTo(init, 1);
		expect("result" in reply && InitializeResultSchema.parse(reply.result).serverInfo.name).toBeTruthy();
		expect(await toolNames(session)).toEqual(expect.arrayContaining(["echo", "trigger-long-running-operation"]));
		expect(await session.callText("echo", { message: "through the connector" })).toBe("Echo: through the connector");
	});

	test("a call's progress notifications reach the gateway on that call's own stream, before its result", async () => {
		connect(["--", ...EVERYTHING]);
		await connected(gateway);
		const session = new FramedSession(gateway);
		await session.initialize();
		const call = await session.post("tools/call", {
			name: "trigger-long-running-operation",
			arguments: { duration: 0.1, steps: 2 },
			_meta: { progressToken: "op-1" },
		});
		const messages = messagesOf(call);
		const progress = messages.filter((message) => "method" in message && message.method === "notifications/progress");
		expect(progress.map((message) => ("params" in message ? message.params : undefined))).toEqual([
			expect.objectContaining({ progressToken: "op-1", progress: 1, total: 2 }),
			expect.objectContaining({ progressToken: "op-1", progress: 2, total: 2 }),
		]);
		expect(messages.at(-1)).toEqual(expect.objectContaining({ id: call.rpcId, result: expect.anything() }));
	});

	test("two sessions get two children (two pids), each answering only its own session", async () => {
		const connector = connect(["--", ...ENV_ECHO]);
		await connected(gateway);
		const first = new FramedSession(gateway);
		const second = new FramedSession(gateway);
		await first.initialize();
		await second.initialize();
		expect(first.sessionId).not.toBe(second.sessionId);
		const pids = [await first.callText("pid"), await second.callText("pid")].map(Number);
		expect(new Set(pids).size).toBe(2);
		expect(connector.startedPids().sort()).toEqual([...pids].sort());
	});

	test("a lost connection ends the children of its sessions, which the gateway cannot reach again, and frees their places", async () => {
		const connector = connect(["--max-sessions", "1", "--", ...ENV_ECHO]);
		await connected(gateway);
		const session = new FramedSession(gateway);
		await session.initialize();
		const pid = Number(await session.callText("pid"));
		expect(alive(pid)).toBe(true);
		gateway.closeConnector(1001, "deploy");
		await eventually(() => !alive(pid), "the child to exit");
		await connected(gateway, 2);
		// The one place under --max-sessions is free again: a new session opens on the new connection.
		const next = new FramedSession(gateway);
		await next.initialize();
		expect(Number(await next.callText("pid"))).not.toBe(pid);
		expect(connector.startedPids()).toHaveLength(2);
	});

	test("DELETE ends the session's child, and the session's next request is 404", async () => {
		connect(["--", ...ENV_ECHO]);
		await connected(gateway);
		const session = new FramedSession(gateway);
		await session.initialize();
		const pid = Number(await session.callText("pid"));
		expect(alive(pid)).toBe(true);
		expect((await session.delete()).status).toBe(200);
		await eventually(() => !alive(pid), "the child to exit");
		expect((await session.post("tools/list")).status).toBe(404);
	});

	test("with --max-sessions 1, a second session is answered 503 with a JSON-RPC error saying so", async () => {
		connect(["--max-sessions", "1", "--", ...ENV_ECHO]);
		await connected(gateway);
		await new FramedSession(gateway).initialize();
		const refused = await new FramedSession(gateway).initialize();
		expect(refused.status).toBe(503);
		expect(replyTo(refused, 1)).toEqual({
			jsonrpc: "2.0",
			id: 1,
			error: { code: -32000, message: "this connector already runs 1 sessions (--max-sessions)" },
		});
	});

	test("a child that exits mid-call fails that call with a sentence, and its session is then 404", async () => {
		const connector = connect(["--", ...ENV_ECHO]);
		await connected(gateway);
		const session = new FramedSession(gateway);
		await session.initialize();
		const call = session.send("tools/call", { name: "exit", arguments: {} });
		expect(await call.ended).toEqual({
			kind: "fail",
			message: "the session's server process exited; the call may have run",
		});
		expect((await session.post("tools/list")).status).toBe(404);
		await eventually(() =>
			expect(connector.stderr).toMatch(/session ended \(child pid \d+\): the server process exited/),
		);
	});

	test("a command that cannot be started answers the initialize 502 with a sentence, and the connector stays up", async () => {
		const connector = connect(["--", "/nonexistent/stdio-server"]);
		await connected(gateway);
		const refused = await new FramedSession(gateway).initialize();
		expect(refused.status).toBe(502);
		expect(replyTo(refused, 1)).toEqual(
			expect.objectContaining({
				error: { code: -32000, message: "the connector could not start /nonexistent/stdio-server; see its log" },
			}),
		);
		expect(connector.child.exitCode).toBeNull();
	});

	test("--env puts the initialize request's header into that session's child environment, and never the connector token", async () => {
		connect(["--env", "SERVICE_TOKEN=header:X-Service-Token", "--", ...ENV_ECHO], {
			SERVICE_TOKEN: "the-operators-own",
		});
		await connected(gateway);
		const alice = new FramedSession(gateway, { "x-service-token": "alice-credential" });
		const bob = new FramedSession(gateway, { "x-service-token": "bob-credential" });
		const nobody = new FramedSession(gateway);
		await alice.initialize();
		await bob.initialize();
		await nobody.initialize();
		expect(await alice.callText("env", { name: "SERVICE_TOKEN" })).toBe("alice-credential");
		expect(await bob.callText("env", { name: "SERVICE_TOKEN" })).toBe("bob-credential");
		expect(await nobody.callText("env", { name: "SERVICE_TOKEN" })).toBe("(unset)");
		expect(await alice.callText("env", { name: "MCPGW_CONNECTOR_TOKEN" })).toBe("(unset)");
	});

	test("server-filesystem over stdio lists, reads and writes files of its folder", async () => {
		const folder = mkdtempSync(join(tmpdir(), "connector-files-"));
		writeFileSync(join(folder, "hello.txt"), "hello from the folder");
		connect(["--", ...FILESYSTEM, folder]);
		await connected(gateway);
		const session = new FramedSession(gateway);
		await session.initialize();
		expect(await session.callText("list_directory", { path: folder })).toContain("[FILE] hello.txt");
		expect(await session.callText("read_text_file", { path: join(folder, "hello.txt") })).toBe("hello from the folder");
		await session.callText("write_file", {
			path: join(folder, "written.txt"),
			content: "written through the connector",
		});
		expect(readFileSync(join(folder, "written.txt"), "utf8")).toBe("written through the connector");
	});
});

describe("--upstream: an HTTP server on the connector's network", () => {
	test("calls reach the upstream, and the Authorization the gateway sends for it arrives unchanged", async () => {
		const upstream = await startUpstream({ name: "private", requireToken: "upstream-secret" });
		upstreams.push(upstream);
		connect(["--upstream", upstream.url]);
		await connected(gateway);
		expect(gateway.framesOf("hello")[0]?.mode).toBe("http");
		const session = new FramedSession(gateway, { authorization: "Bearer upstream-secret" });
		expect((await session.initialize()).status).toBe(200);
		expect(await session.callText("echo", { text: "over http" })).toBe("over http");
		const log = (await (await fetch(new URL("/_log", upstream.url))).json()) as { authorization: string | null }[];
		expect(log.length).toBeGreaterThanOrEqual(3);
		expect(new Set(log.map((entry) => entry.authorization))).toEqual(new Set(["Bearer upstream-secret"]));
	});

	test("an upstream that cannot be reached fails the request with a sentence naming it", async () => {
		connect(["--upstream", "http://127.0.0.1:9/mcp"]);
		await connected(gateway);
		const answer = new FramedSession(gateway).send("initialize", {});
		const ended = await answer.ended;
		expect(ended.kind).toBe("fail");
		expect(ended.kind === "fail" && ended.message).toContain(
			"the upstream http://127.0.0.1:9/mcp could not be reached from the connector",
		);
	});

	test("a cancelled request gets nothing more: no end and no fail, even once its upstream answers", async () => {
		const upstream = await startUpstream({ name: "private", gates: true });
		upstreams.push(upstream);
		connect(["--upstream", upstream.url]);
		await connected(gateway);
		const session = new FramedSession(gateway);
		await session.initialize();
		const call = session.send("tools/call", { name: "gate", arguments: { name: "cancelled" } });
		await eventually(async () => (await gateStatus(upstream, "cancelled")).waiting === 1, "the call at its gate");
		gateway.send({ type: "cancel", id: call.id });
		// A later call answered in full: the connector reads frames in order, so it has handled the cancel.
		expect(await session.callText("echo", { text: "after" })).toBe("after");
		await fetch(new URL("/_gates/cancelled/release", upstream.url), { method: "POST" });
		// Another full call after the gate opened: whatever the upstream answered the cancelled call has come and gone.
		expect(await session.callText("echo", { text: "later" })).toBe("later");
		const endings = gateway.frames.filter(
			(frame) => (frame.type === "end" || frame.type === "fail") && frame.id === call.id,
		);
		expect(endings).toEqual([]);
	});

	test("SIGTERM sends draining, refuses new sessions with 503, lets the call in flight finish, closes 1000 and exits 0", async () => {
		const upstream = await startUpstream({ name: "private", gates: true });
		upstreams.push(upstream);
		const connector = connect(["--upstream", upstream.url]);
		await connected(gateway);
		const session = new FramedSession(gateway);
		await session.initialize();
		const call = session.send("tools/call", { name: "gate", arguments: { name: "drain" } });
		await eventually(async () => (await gateStatus(upstream, "drain")).waiting === 1, "the call at its gate");
		connector.child.kill("SIGTERM");
		await eventually(() => gateway.framesOf("draining").length === 1, "draining");
		const refused = await new FramedSession(gateway).initialize();
		expect(refused.status).toBe(503);
		expect(connector.child.exitCode).toBeNull();
		await fetch(new URL("/_gates/drain/release", upstream.url), { method: "POST" });
		expect(await call.ended).toEqual({ kind: "end" });
		expect(replyTo(call, call.rpcId)).toEqual(expect.objectContaining({ result: expect.anything() }));
		expect(await connector.exited).toBe(0);
		await eventually(() => gateway.closes.includes(1000), "close 1000");
		await eventually(() => expect(connector.stderr).toMatch(/draining: 1 call\(s\) in flight[\s\S]*stopped/));
	});
});

/** An HTTP server whose every answer is `bytes` of text, written as fast as its reader takes them. */
async function largeBodyServer(bytes: number): Promise<{ url: string; close: () => Promise<void> }> {
	const piece = "x".repeat(64 * 1024);
	const server = createServer((_req, res) => {
		res.writeHead(200, { "content-type": "text/plain" });
		let left = bytes;
		const write = () => {
			while (left > 0) {
				const next = piece.slice(0, Math.min(piece.length, left));
				left -= next.length;
				if (!res.write(next)) {
					res.once("drain", write);
					return;
				}
			}
			res.end();
		};
		write();
	});
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
	return {
		url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
		close: () =>
			new Promise<void>((resolve) => {
				server.closeAllConnections();
				server.close(() => resolve());
			}),
	};
}

describe("backpressure toward the gateway", () => {
	test("a large body waits while the socket's buffered bytes are above the bound: a gateway that reads slowly never has more than the bound and one frame piled up at the connector", async () => {
		const BODY_BYTES = 48 * 1024 * 1024;
		const upstream = await largeBodyServer(BODY_BYTES);
		// The connector's own parts, in this process, so the socket's bufferedAmount can be read at each send.
		let link: GatewayLink | undefined;
		let beforeChunks = 0;
		let afterChunks = 0;
		const send = (frame: ConnectorFrame) => {
			if (frame.type === "chunk" && link) beforeChunks = Math.max(beforeChunks, link.bufferedAmount);
			link?.send(frame);
			if (frame.type === "chunk" && link) afterChunks = Math.max(afterChunks, link.bufferedAmount);
		};
		const http = new HttpUpstream(upstream.url, SERVER);
		const runs = new RequestRuns(
			send,
			(call) => http.handle(call),
			() => link?.writable() ?? Promise.resolve(),
		);
		let welcomed = false;
		link = new GatewayLink({
			url: `${gateway.url.replace(/^http/, "ws")}/connector/${SERVER}`,
			token: TOKEN,
			hello: { type: "hello", protocol: 1, version: "test", host: "test", mode: "http", maxSessions: 1 },
			heartbeatMs: 60_000,
			timers: systemTimers,
			welcomed: () => {
				welcomed = true;
			},
			received: (frame) => {
				if (frame.type === "request") runs.start(frame);
			},
		});
		try {
			await eventually(() => welcomed, "welcomed");
			gateway.pauseReading();
			const answer = gateway.request("GET", {});
			// The gateway reads nothing until the connector's side holds more than the bound.
			await eventually(
				() => (link?.bufferedAmount ?? 0) > MAX_BUFFERED_BYTES,
				"the connector's buffer past the bound",
				20_000,
			);
			gateway.resumeReading();
			expect(await answer.ended).toEqual({ kind: "end" });
			expect(answer.body.length).toBe(BODY_BYTES);
			// No chunk was sent while more than the bound waited; one sent on top adds at most a frame.
			expect(beforeChunks).toBeLessThanOrEqual(MAX_BUFFERED_BYTES);
			expect(afterChunks).toBeLessThanOrEqual(MAX_BUFFERED_BYTES + MAX_FRAME_BYTES);
		} finally {
			link.close();
			await upstream.close();
		}
	});
});

describe("pieces", () => {
	test("backoff is exponential with full jitter from 0.5 s, capped at 30 s", () => {
		const top = () => 0.999_999;
		expect([0, 1, 2, 3, 6, 7, 20].map((attempt) => backoffDelayMs(attempt, DEFAULT_BACKOFF, top))).toEqual([
			499, 999, 1999, 3999, 29_999, 29_999, 29_999,
		]);
		expect(backoffDelayMs(5, DEFAULT_BACKOFF, () => 0)).toBe(0);
		expect(backoffDelayMs(2, DEFAULT_BACKOFF, () => 0.5)).toBe(1000);
	});

	test("a body is cut into chunk frames that each fit MAX_FRAME_BYTES once serialised, escapes included", () => {
		const text = `${"\u0001".repeat(300_000)}${"é".repeat(600_000)}`;
		const frames = chunkFrames(7, text);
		expect(frames.map((frame) => frame.data).join("")).toBe(text);
		for (const frame of frames) expect(Buffer.byteLength(JSON.stringify(frame))).toBeLessThanOrEqual(MAX_FRAME_BYTES);
	});

	test("a 401 naming its upstream's metadata names the connector address of it instead; metadata on another host is left alone", () => {
		const upstream = "http://10.0.0.5:8080/mcp";
		expect(
			challengeThroughConnector(
				'Bearer error="invalid_token", resource_metadata="http://10.0.0.5:8080/.well-known/oauth-protected-resource/mcp", scope="mcp"',
				upstream,
				SERVER,
			),
		).toBe(
			'Bearer error="invalid_token", resource_metadata="https://connector.invalid/.well-known/oauth-protected-resource/files/mcp", scope="mcp"',
		);
		const elsewhere = 'Bearer resource_metadata="https://auth.example/.well-known/oauth-protected-resource"';
		expect(challengeThroughConnector(elsewhere, upstream, SERVER)).toBe(elsewhere);
		expect(upstreamMetadataUrls(upstream, "/.well-known/oauth-protected-resource")).toEqual([
			"http://10.0.0.5:8080/.well-known/oauth-protected-resource/mcp",
			"http://10.0.0.5:8080/.well-known/oauth-protected-resource",
		]);
	});
});
