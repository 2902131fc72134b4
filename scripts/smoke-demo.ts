/**
 * A smoke check of what `npm start` offers that acts as the caller, run
 * against a running `npm start` (the API key it printed as the argument):
 * on `oauth-demo`, a 2025 client's initialize answers -32042 with a connect
 * link; the scripted browser opens it, picks alice at the upstream's own
 * sign-in form and lands on the gateway's "Connected" page; a new session's
 * `whoami` then answers alice. On `whoami-demo`, `whoami` answers `key:<id>`.
 *
 *   node scripts/smoke-demo.ts <api key> [--port <base>]   (exits 0 when every step held)
 *
 * The base port is npm start's (8787, or the `--port` / `PORT` it was started with).
 */
import { Browser } from "./fixtures/browser.ts";
import { basePortFrom, localPorts } from "./local-ports.ts";
import { HOST } from "./processes.ts";

const options = basePortFrom(process.argv.slice(2), process.env, { positionals: true });
const key = "problem" in options ? undefined : options.positionals[0];
if ("problem" in options || !key) {
	if ("problem" in options) console.error(options.problem);
	console.error("Usage: node scripts/smoke-demo.ts <api key printed by npm start> [--port <npm start's base port>]");
	process.exit(2);
}
const PORTS = localPorts(options.base);
const GATEWAY = `http://${HOST}:${PORTS.gateway}`;

interface Reply {
	result?: { content?: Array<{ text?: string }>; structuredContent?: Record<string, unknown> };
	error?: { code: number; message: string; data?: { elicitations?: Array<{ url?: string }> } };
}

/** POSTs one JSON-RPC message to a 2025 endpoint; the reply (JSON or the SSE event) and the session id. */
async function rpc(
	path: string,
	message: object,
	sessionId?: string,
): Promise<{ reply: Reply; sessionId: string | null }> {
	const response = await fetch(`${GATEWAY}${path}`, {
		method: "POST",
		headers: {
			authorization: `Bearer ${key}`,
			"content-type": "application/json",
			accept: "application/json, text/event-stream",
			...(sessionId ? { "mcp-session-id": sessionId, "mcp-protocol-version": "2025-11-25" } : {}),
		},
		body: JSON.stringify(message),
	});
	const text = await response.text();
	const data = response.headers.get("content-type")?.includes("text/event-stream")
		? ([...text.matchAll(/^data: ?(.*)$/gm)].map((match) => match[1]).find((line) => line?.includes('"id"')) ?? "{}")
		: text || "{}";
	return { reply: JSON.parse(data) as Reply, sessionId: response.headers.get("mcp-session-id") };
}

const initialize = {
	jsonrpc: "2.0",
	id: 1,
	method: "initialize",
	params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "smoke", version: "1" } },
};

/** whoami over a new 2025 session on `path`. */
async function whoami(path: string): Promise<Reply> {
	const opened = await rpc(path, initialize);
	if (!opened.sessionId) throw new Error(`${path}: initialize opened no session: ${JSON.stringify(opened.reply)}`);
	await rpc(path, { jsonrpc: "2.0", method: "notifications/initialized" }, opened.sessionId);
	const { reply } = await rpc(
		path,
		{ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "whoami", arguments: {} } },
		opened.sessionId,
	);
	return reply;
}

function check(condition: boolean, what: string, detail: unknown): void {
	console.log(`${condition ? "ok  " : "FAIL"} ${what}${condition ? "" : `: ${JSON.stringify(detail).slice(0, 400)}`}`);
	if (!condition) process.exitCode = 1;
}

const refused = (await rpc("/mcp/oauth-demo", initialize)).reply;
check(refused.error?.code === -32042, "oauth-demo: initialize before connecting answers -32042", refused);
const link = refused.error?.data?.elicitations?.[0]?.url ?? "";
check(link.startsWith(`${GATEWAY}/connect/oauth-demo?link=`), "the error carries the connect link", link);

const browser = new Browser();
const form = await browser.get(link);
check(
	form.url.origin === `http://${HOST}:${PORTS.oauthUpstream}` && form.html.includes('value="alice"'),
	"the link leads to the upstream's sign-in form",
	form.url.href,
);
const done = await browser.submit(form, { fields: { user: "alice" } });
check(
	done.url.href.startsWith(`${GATEWAY}/connect/callback`) &&
		done.status === 200 &&
		done.html.includes("Connected to oauth-demo"),
	"picking alice ends on the gateway's page saying it is connected",
	{ url: done.url.href, status: done.status, html: done.html.slice(0, 300) },
);

const person = await whoami("/mcp/oauth-demo");
check(person.result?.content?.[0]?.text === "alice", "oauth-demo's whoami answers alice", person);

const asserted = await whoami("/mcp/whoami-demo");
const sub = asserted.result?.content?.[0]?.text ?? "";
check(
	/^key:/.test(sub) && asserted.result?.structuredContent?.iss === GATEWAY,
	"whoami-demo's whoami answers key:<id>, asserted by the gateway",
	asserted,
);
console.log(`whoami-demo answered ${sub} (key_id ${String(asserted.result?.structuredContent?.key_id)})`);
