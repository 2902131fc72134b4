/**
 * A recording, fault-injecting upstream MCP server that runs as its own
 * process, so tests can crash, kill and restart it on the same port (see
 * test/fault-supervisor.ts). Run: `node scripts/fault-upstream.ts <port> <stateDir>`.
 * Prints `ready <port> <pid>` once it listens.
 *
 * State that must outlive a restart lives in files under <stateDir>:
 * - `log.jsonl`: every inbound MCP request (any path not under `/_`), appended
 *   on arrival as `{kind:"request", seq, at, pid, method, path, sessionId,
 *   protocolVersion, authorization, body}` (so a body is on record even when
 *   the process dies handling it), then `{kind:"status", seq, status, reason}`
 *   once its status is sent and `{kind:"end", seq}` once its response is
 *   complete. `GET /_log` merges them into one entry per request: `status` is
 *   null when no status was ever sent, `completed` false when the response was
 *   cut short (crash, kill, stream closed by the client).
 * - `auth401`: how many more MCP requests to answer 401.
 * - `expired-calls`: how many requests got 404 for a stale session id.
 * - `break-get`: present while GET streams are broken.
 *
 * Control API (handled before MCP):
 * - `POST /_control/auth401 {"count": n}`: the next n MCP requests get 401.
 * - `POST /_control/expire {"hold"?: n}`: forget every live session (their
 *   streams close); later requests carrying one of those ids get 404. With
 *   `hold`, the next n `tools/call`s with a stale id are held until n have
 *   arrived, then all are answered 404 together.
 * - `POST /_control/break-get`: close every open GET stream; answer later
 *   GETs 500 until `POST /_control/heal`.
 * - `GET /_gates/<name>`, `POST /_gates/<name>/release`: the gates of the
 *   `gate` tool (see scripts/upstream-server.ts); they live in this process.
 * - `GET /_stats`: `{expiredCalls, expiredToolCalls, pid, sessions, held}`.
 * - `GET /_log`: the merged log as a JSON array. `POST /_reset`: truncate the
 *   log, zero the counters, clear every control (held requests are answered 404).
 */
import { randomUUID } from "node:crypto";
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { join } from "node:path";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";
import { Gates, handleGateControl, registerGateTool } from "./upstream-server.ts";

const pid = process.pid;
/** The `gate` tool's gates, shared by every session of this process. */
const gates = new Gates();

/** A 1x1 transparent PNG. */
const TINY_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/** A valid 8 kHz mono 8-bit WAV holding two samples of silence. */
function tinyWav(): string {
	const data = Buffer.from([128, 128]);
	const header = Buffer.alloc(44);
	header.write("RIFF", 0, "ascii");
	header.writeUInt32LE(36 + data.length, 4);
	header.write("WAVE", 8, "ascii");
	header.write("fmt ", 12, "ascii");
	header.writeUInt32LE(16, 16);
	header.writeUInt16LE(1, 20);
	header.writeUInt16LE(1, 22);
	header.writeUInt32LE(8000, 24);
	header.writeUInt32LE(8000, 28);
	header.writeUInt16LE(1, 32);
	header.writeUInt16LE(8, 34);
	header.write("data", 36, "ascii");
	header.writeUInt32LE(data.length, 40);
	return Buffer.concat([header, data]).toString("base64");
}
const TINY_WAV = tinyWav();

const sleep = (ms: number | undefined) =>
	ms ? new Promise<void>((resolve) => setTimeout(resolve, ms)) : Promise.resolve();

/** The fixture's tools, registered on each session's server. */
export function registerFaultTools(server: McpServer): void {
	server.registerTool(
		"read_note",
		{
			description: "Reads a note (read-only), after an optional delay.",
			inputSchema: { ms: z.number().int().min(0).optional() },
			annotations: { readOnlyHint: true },
		},
		async ({ ms }) => {
			await sleep(ms);
			return { content: [{ type: "text", text: `note from ${pid}` }] };
		},
	);
	server.registerTool(
		"write_note",
		{
			description: "Writes a note (not read-only), after an optional delay.",
			inputSchema: { text: z.string(), ms: z.number().int().min(0).optional() },
			annotations: { readOnlyHint: false },
		},
		async ({ text, ms }) => {
			await sleep(ms);
			return { content: [{ type: "text", text: `wrote ${text} in ${pid}` }] };
		},
	);
	server.registerTool(
		"crash",
		{ description: "Exits the upstream process without answering.", annotations: { readOnlyHint: false } },
		() => process.exit(1),
	);
	server.registerTool(
		"slow",
		{
			description: "Waits the given milliseconds, then answers.",
			inputSchema: { ms: z.number().int().min(0) },
			annotations: { readOnlyHint: false },
		},
		async ({ ms }) => {
			await sleep(ms);
			return { content: [{ type: "text", text: "slow done" }] };
		},
	);
	server.registerTool(
		"rich",
		{
			description: "Returns content of every type, structured content and _meta.",
			outputSchema: { ok: z.boolean(), n: z.number() },
			annotations: { readOnlyHint: true },
		},
		async () => ({
			content: [
				{ type: "text", text: "rich text" },
				{ type: "image", data: TINY_PNG, mimeType: "image/png" },
				{ type: "audio", data: TINY_WAV, mimeType: "audio/wav" },
				{ type: "resource_link", uri: "fault://doc", name: "doc" },
				{ type: "resource", resource: { uri: "fault://doc", text: "doc", mimeType: "text/plain" } },
			],
			structuredContent: { ok: true, n: 1 },
			_meta: { "fixture/meta": "kept" },
		}),
	);
	server.registerTool("empty_error", { description: "Fails with an empty content list." }, async () => ({
		content: [],
		isError: true,
	}));
	server.registerTool(
		"echo_args",
		{ description: "Echoes its arguments as JSON text.", inputSchema: z.looseObject({}) },
		async (args) => ({ content: [{ type: "text", text: JSON.stringify(args) }] }),
	);
	registerGateTool(server, gates);
}

interface LogRequestLine {
	kind: "request";
	seq: string;
	at: number;
	pid: number;
	method: string;
	path: string;
	sessionId: string | null;
	protocolVersion: string | null;
	authorization: string | null;
	body: unknown;
}

interface LogStatusLine {
	kind: "status";
	seq: string;
	status: number | null;
	reason: string;
}

interface LogEndLine {
	kind: "end";
	seq: string;
}

export interface FaultLogEntry extends Omit<LogRequestLine, "kind"> {
	status: number | null;
	/** Why the fixture answered as it did: mcp, auth401, expired, no-session, break-get, aborted. */
	reason: string | null;
	/** Whether the whole response was sent. */
	completed: boolean;
}

/** Starts the fixture on 127.0.0.1:<port>; resolves once it listens. */
export async function startFaultUpstream(port: number, stateDir: string): Promise<void> {
	mkdirSync(stateDir, { recursive: true });
	const file = (name: string) => join(stateDir, name);
	const logFile = file("log.jsonl");
	const readCount = (name: string) => {
		try {
			const value = Number.parseInt(readFileSync(file(name), "utf8"), 10);
			return Number.isFinite(value) ? value : 0;
		} catch {
			return 0;
		}
	};
	const writeCount = (name: string, value: number) => writeFileSync(file(name), String(value));

	const sessions = new Map<string, StreamableHTTPServerTransport>();
	const openGets = new Set<ServerResponse>();
	/** Requests held by `expire {hold}`: each is released with whether it still counts. */
	let holdRemaining = 0;
	let held: Array<(count: boolean) => void> = [];
	let sequence = 0;

	const releaseHeld = (count: boolean) => {
		const waiting = held;
		held = [];
		for (const release of waiting) release(count);
	};

	const readLog = (): FaultLogEntry[] => {
		let text = "";
		try {
			text = readFileSync(logFile, "utf8");
		} catch {
			return [];
		}
		const entries: FaultLogEntry[] = [];
		const bySeq = new Map<string, FaultLogEntry>();
		for (const line of text.split("\n")) {
			if (!line) continue;
			let record: LogRequestLine | LogStatusLine | LogEndLine;
			try {
				record = JSON.parse(line) as LogRequestLine | LogStatusLine | LogEndLine;
			} catch {
				continue;
			}
			if (record.kind === "request") {
				const { kind: _kind, ...rest } = record;
				const entry: FaultLogEntry = { ...rest, status: null, reason: null, completed: false };
				entries.push(entry);
				bySeq.set(record.seq, entry);
			} else {
				const entry = bySeq.get(record.seq);
				if (!entry) continue;
				if (record.kind === "status") {
					entry.status = record.status;
					entry.reason = record.reason;
				} else entry.completed = true;
			}
		}
		return entries;
	};

	const json = (res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}) => {
		res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(value));
	};
	const rpcError = (res: ServerResponse, status: number, message: string) =>
		json(res, status, { jsonrpc: "2.0", id: null, error: { code: -32000, message } });

	const stats = () => ({
		expiredCalls: readCount("expired-calls"),
		expiredToolCalls: readCount("expired-tool-calls"),
		pid,
		sessions: sessions.size,
		held: held.length,
	});

	const handleControl = async (req: IncomingMessage, res: ServerResponse, path: string) => {
		if (path.startsWith("/_gates/")) {
			req.resume();
			if (!handleGateControl(gates, req, res, path)) json(res, 404, { error: `no gate route ${path}` });
			return;
		}
		const method = req.method ?? "GET";
		const route = `${method} ${path}`;
		const input = method === "POST" ? await readBody(req) : { json: null };
		const body = (input.json ?? {}) as Record<string, unknown>;
		switch (route) {
			case "GET /_log":
				return json(res, 200, readLog());
			case "GET /_stats":
				return json(res, 200, stats());
			case "POST /_reset":
				writeFileSync(logFile, "");
				for (const name of ["auth401", "expired-calls", "expired-tool-calls", "break-get"])
					rmSync(file(name), { force: true });
				holdRemaining = 0;
				releaseHeld(false);
				return json(res, 200, stats());
			case "POST /_control/auth401": {
				const count = Number(body.count ?? 1);
				if (!Number.isInteger(count) || count < 0) return json(res, 400, { error: "count must be an integer >= 0" });
				writeCount("auth401", count);
				return json(res, 200, { auth401: count });
			}
			case "POST /_control/expire": {
				const hold = Number(body.hold ?? 0);
				if (!Number.isInteger(hold) || hold < 0) return json(res, 400, { error: "hold must be an integer >= 0" });
				const forgotten = [...sessions.entries()];
				sessions.clear();
				for (const [, transport] of forgotten) void transport.close().catch(() => {});
				holdRemaining = hold;
				return json(res, 200, { expired: forgotten.map(([id]) => id), hold });
			}
			case "POST /_control/break-get": {
				writeFileSync(file("break-get"), "1");
				const streams = [...openGets];
				for (const transport of sessions.values()) transport.closeStandaloneSSEStream();
				// Whatever the transports did not end cleanly is cut off.
				setTimeout(() => {
					for (const stream of streams) if (!stream.writableEnded) stream.destroy();
				}, 50);
				return json(res, 200, { closed: streams.length });
			}
			case "POST /_control/heal":
				rmSync(file("break-get"), { force: true });
				return json(res, 200, { healed: true });
			default:
				return json(res, 404, { error: `no control ${route}` });
		}
	};

	const handleMcp = async (req: IncomingMessage, res: ServerResponse, path: string) => {
		const method = req.method ?? "GET";
		const input = method === "POST" ? await readBody(req) : { json: null, text: undefined };
		const sessionId = header(req, "mcp-session-id");
		const seq = `${pid}-${++sequence}`;
		const line: LogRequestLine = {
			kind: "request",
			seq,
			at: Date.now(),
			pid,
			method,
			path,
			sessionId,
			protocolVersion: header(req, "mcp-protocol-version"),
			authorization: header(req, "authorization"),
			body: input.json,
		};
		appendFileSync(logFile, `${JSON.stringify(line)}\n`);
		let reason = "mcp";
		let recorded = false;
		const record = (status: number | null) => {
			if (recorded) return;
			recorded = true;
			const statusLine: LogStatusLine = { kind: "status", seq, status, reason };
			appendFileSync(logFile, `${JSON.stringify(statusLine)}\n`);
		};
		const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => ServerResponse;
		res.writeHead = ((...args: unknown[]) => {
			record(typeof args[0] === "number" ? args[0] : res.statusCode);
			return writeHead(...args);
		}) as typeof res.writeHead;
		res.on("finish", () => {
			const endLine: LogEndLine = { kind: "end", seq };
			appendFileSync(logFile, `${JSON.stringify(endLine)}\n`);
		});
		res.on("close", () => {
			if (res.headersSent) record(res.statusCode);
			else {
				reason = "aborted";
				record(null);
			}
		});

		const auth401 = readCount("auth401");
		if (auth401 > 0) {
			writeCount("auth401", auth401 - 1);
			reason = "auth401";
			return json(
				res,
				401,
				{ error: "invalid_token", error_description: "fault fixture: token rejected" },
				{ "www-authenticate": 'Bearer error="invalid_token", realm="fault"' },
			);
		}

		let transport = sessionId ? sessions.get(sessionId) : undefined;
		if (sessionId && !transport) {
			const isToolCall = rpcMethods(input.json).includes("tools/call");
			if (isToolCall && holdRemaining > 0) {
				holdRemaining--;
				const counted = await new Promise<boolean>((resolve) => {
					held.push(resolve);
					if (holdRemaining === 0) releaseHeld(true);
				});
				if (!counted) {
					reason = "expired";
					return rpcError(res, 404, "Session not found");
				}
			}
			writeCount("expired-calls", readCount("expired-calls") + 1);
			if (isToolCall) writeCount("expired-tool-calls", readCount("expired-tool-calls") + 1);
			reason = "expired";
			return rpcError(res, 404, "Session not found");
		}
		if (!transport) {
			if (!rpcMethods(input.json).includes("initialize")) {
				reason = "no-session";
				return rpcError(res, 400, "Bad Request: Mcp-Session-Id header is required");
			}
			const created = new StreamableHTTPServerTransport({
				sessionIdGenerator: () => randomUUID(),
				onsessioninitialized: (id) => {
					sessions.set(id, created);
				},
			});
			created.onclose = () => {
				const id = created.sessionId;
				if (id && sessions.get(id) === created) sessions.delete(id);
			};
			const server = new McpServer({ name: "fault", version: "1.0.0" }, { instructions: "Fault-injecting fixture." });
			registerFaultTools(server);
			await server.connect(created);
			transport = created;
		}
		if (method === "GET") {
			if (existsSync(file("break-get"))) {
				reason = "break-get";
				return json(res, 500, { error: "GET streams are broken (fault fixture)" });
			}
			openGets.add(res);
			res.on("close", () => openGets.delete(res));
		}
		await transport.handleRequest(req, res, input.json ?? input.text);
	};

	const server = createServer((req, res) => {
		const path = new URL(req.url ?? "/", "http://localhost").pathname;
		const handler = path.startsWith("/_") ? handleControl : handleMcp;
		handler(req, res, path).catch((error: unknown) => {
			console.error(`fault upstream ${pid}:`, error);
			if (!res.headersSent) res.writeHead(500).end();
			else res.destroy();
		});
	});

	// A restart may race the previous process's socket release: retry briefly.
	for (let attempt = 0; ; attempt++) {
		try {
			await new Promise<void>((resolve, reject) => {
				server.once("error", reject);
				server.listen(port, "127.0.0.1", () => {
					server.off("error", reject);
					resolve();
				});
			});
			return;
		} catch (error) {
			if ((error as NodeJS.ErrnoException).code !== "EADDRINUSE" || attempt >= 40) throw error;
			await sleep(50);
		}
	}
}

/** The JSON-RPC methods in a body (a message or a batch). */
function rpcMethods(body: unknown): string[] {
	const messages = Array.isArray(body) ? body : [body];
	return messages.flatMap((message) =>
		message && typeof message === "object" && typeof (message as { method?: unknown }).method === "string"
			? [(message as { method: string }).method]
			: [],
	);
}

function header(req: IncomingMessage, name: string): string | null {
	const value = req.headers[name];
	return typeof value === "string" ? value : null;
}

/** The body as parsed JSON (null when empty or not JSON) and its raw text. */
async function readBody(req: IncomingMessage): Promise<{ json: unknown; text: string | undefined }> {
	const chunks: Buffer[] = [];
	for await (const chunk of req) chunks.push(chunk as Buffer);
	const text = Buffer.concat(chunks).toString("utf8");
	if (!text) return { json: null, text: undefined };
	try {
		return { json: JSON.parse(text), text };
	} catch {
		return { json: null, text };
	}
}

if (import.meta.url === `file://${process.argv[1]}`) {
	const port = Number(process.argv[2]);
	const stateDir = process.argv[3];
	if (!Number.isInteger(port) || port <= 0 || !stateDir) {
		console.error("usage: node scripts/fault-upstream.ts <port> <stateDir>");
		process.exit(2);
	}
	// Under the supervisor, stdin is a pipe from it: exit with it rather than linger as an orphan.
	if (process.env.FAULT_UPSTREAM_EXIT_WITH_STDIN === "1") {
		process.stdin.on("end", () => process.exit(0));
		process.stdin.on("error", () => process.exit(0));
		process.stdin.resume();
	}
	await startFaultUpstream(port, stateDir);
	process.stdout.write(`ready ${port} ${pid}\n`);
}
