import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type RunningGateway, startGateway } from "../../scripts/conformance/gateway.ts";
import { type RunningUpstream, startUpstream } from "../../scripts/fixtures/upstream-server.ts";
import { Processes } from "../../scripts/processes.ts";

/**
 * Many sessions at once through one gateway runtime, nothing configured: the
 * Worker and every session's Durable Object share an isolate under `wrangler
 * dev`, as many objects share one in production, so what one of them loads
 * (a key, an endpoint, the policy list, a server's pins) must never be
 * awaited by another. Every call must answer, and the runtime must never say
 * it failed. The gateway is this file's own (the project's build, served
 * apart), so its load neither meets nor changes what the other files register.
 */

const SESSIONS = 200;
const CALLS_PER_SESSION = 8;
const KEYS = 20;
const AT_ONCE = 50;
const VERSION = "2025-11-25";

/** What the runtime prints when one object's I/O is used from another's context, or a request fails unexpectedly. */
const RUNTIME_FAILURES = /Cannot perform I\/O on behalf of a different|The gateway failed unexpectedly|Uncaught/;

const procs = new Processes();
let upstream: RunningUpstream;
let running: RunningGateway;
/** Every line the gateway's runtime printed. */
const printed: string[] = [];
const gateway = () => running.url;

async function admin<T>(method: string, path: string, body: unknown): Promise<T> {
	const response = await fetch(`${gateway()}/admin${path}`, {
		method,
		headers: { authorization: `Bearer ${running.adminToken}`, "content-type": "application/json" },
		body: JSON.stringify(body),
	});
	const text = await response.text();
	if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
	return JSON.parse(text) as T;
}

beforeAll(async () => {
	// Connections kept past any pause of the run: a pooled connection the upstream closes under a call
	// makes that call's outcome uncertain (correctly), which is the upstream's doing, not what this measures.
	upstream = await startUpstream({ name: "load", keepAliveTimeoutMs: 120_000 });
	running = await startGateway(
		procs,
		{ entry: inject("cliGatewayEntry") },
		{ name: "gateway for the many-sessions test (wrangler dev)", dir: procs.tempDir("mcp-edge-load-") },
	);
	running.child.onLine((line) => printed.push(line));
	// A build served under `wrangler dev` starts in seconds; more on a busy machine.
}, 90_000);

afterAll(async () => {
	await Promise.all([procs.stopAll(), upstream?.close()]);
});

/** One POST of a JSON-RPC message in the 2025 era, and its whole answer as text. */
async function post(path: string, key: string, message: object, session?: string) {
	const headers: Record<string, string> = {
		authorization: `Bearer ${key}`,
		"content-type": "application/json",
		accept: "application/json, text/event-stream",
		"mcp-protocol-version": VERSION,
	};
	if (session) headers["mcp-session-id"] = session;
	const response = await fetch(`${gateway()}${path}`, { method: "POST", headers, body: JSON.stringify(message) });
	return { status: response.status, session: response.headers.get("mcp-session-id"), text: await response.text() };
}

/** A whole session: initialize, initialized, `calls` echoes (each answer checked), DELETE. Returns what went wrong. */
async function session(path: string, tool: string, key: string, n: number): Promise<string[]> {
	const failures: string[] = [];
	const opened = await post(path, key, {
		jsonrpc: "2.0",
		id: 0,
		method: "initialize",
		params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: "many-sessions", version: "1" } },
	});
	if (opened.status !== 200 || !opened.session || !opened.text.includes('"result"')) {
		return [`session ${n}: initialize answered ${opened.status} ${opened.text.slice(0, 300)}`];
	}
	await post(path, key, { jsonrpc: "2.0", method: "notifications/initialized" }, opened.session);
	for (let call = 1; call <= CALLS_PER_SESSION; call++) {
		const text = `session ${n} call ${call}`;
		const answer = await post(
			path,
			key,
			{ jsonrpc: "2.0", id: call, method: "tools/call", params: { name: tool, arguments: { text } } },
			opened.session,
		);
		if (answer.status !== 200 || !answer.text.includes(text) || answer.text.includes('"isError":true')) {
			failures.push(`session ${n} call ${call}: ${answer.status} ${answer.text.slice(0, 300)}`);
		}
	}
	const ended = await fetch(`${gateway()}${path}`, {
		method: "DELETE",
		headers: { authorization: `Bearer ${key}`, "mcp-session-id": opened.session, "mcp-protocol-version": VERSION },
	});
	if (ended.status !== 200 && ended.status !== 204) failures.push(`session ${n}: DELETE answered ${ended.status}`);
	return failures;
}

describe("many sessions at once", () => {
	it(`${SESSIONS} sessions of ${CALLS_PER_SESSION} calls over ${KEYS} keys, ${AT_ONCE} at a time, half on /mcp/<server> and half on /mcp, lose no call, and the runtime reports no failure`, async () => {
		const server = "load";
		await admin("PUT", `/servers/${server}?check=false`, { url: upstream.url });
		const keys: string[] = [];
		for (let i = 0; i < KEYS; i++) {
			const made = await admin<{ key: string }>("POST", "/keys", { name: `load-${i}`, servers: [server] });
			keys.push(made.key);
		}
		const failures: string[] = [];
		let next = 0;
		await Promise.all(
			Array.from({ length: AT_ONCE }, async () => {
				while (next < SESSIONS) {
					const n = next++;
					const key = keys[n % KEYS] ?? "";
					// Transparent and merged endpoints both: the merged one reads the server list and its pins too.
					const [path, tool] = n % 2 === 0 ? [`/mcp/${server}`, "echo"] : ["/mcp", `${server}__echo`];
					failures.push(...(await session(path, tool, key, n)));
				}
			}),
		);
		expect(failures).toEqual([]);
		expect(printed.filter((line) => RUNTIME_FAILURES.test(line))).toEqual([]);
	}, 240_000);
});
