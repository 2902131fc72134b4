import { runInDurableObject } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ERROR_META_KEY } from "../src/mcp/failure-reply.ts";
import type { SessionDO } from "../src/session/session-do.ts";
import { eventually } from "./support/eventually.ts";
import {
	admin,
	createKey,
	gatewayFetch,
	mcpHeaders,
	messagesOf,
	openSession,
	postInitialize,
	readReply,
	rpc,
	uniqueName,
} from "./support/gateway.ts";
import { hostileLog, hostileUrl, registerHostile } from "./support/hostile.ts";
import { ENVELOPE, modernPost } from "./support/modern.ts";
import { sessionObject } from "./support/session-object.ts";
import { registerServer } from "./support/upstreams.ts";

/** A tool result as the gateway gives it, failures carrying their kind in `_meta`. */
type ToolResult = {
	isError?: boolean;
	content: Array<{ type: string; text?: string }>;
	_meta?: Record<string, { kind?: string; server?: string }>;
};

/** An aggregate endpoint over the given servers (a virtual server), with a key and an open session. */
async function aggregateOf(servers: string[]) {
	const name = uniqueName("vs");
	const created = await admin("PUT", `/virtual-servers/${name}`, { servers });
	if (created.status !== 201) throw new Error(`virtual server: ${created.status} ${await created.text()}`);
	const path = `/mcp/${name}`;
	const { key } = await createKey();
	const sessionId = await openSession(path, key);
	let id = 1;
	const send = async (method: string, params?: Record<string, unknown>) => {
		const response = await rpc(path, key, sessionId, { jsonrpc: "2.0", id: id++, method, params });
		return { status: response.status, text: await response.text(), type: response.headers.get("content-type") ?? "" };
	};
	const call = async (method: string, params?: Record<string, unknown>) => {
		const { text, type } = await send(method, params);
		const replies = messagesOf(text, type).filter((message) => message.id !== undefined && !message.method);
		return replies[replies.length - 1] as {
			result?: Record<string, unknown>;
			error?: { code: number; message: string; data?: { kind?: string; server?: string } };
		};
	};
	return { path, key, sessionId, send, call };
}

afterEach(() => {
	vi.restoreAllMocks();
});

describe("upstream redirects are never followed", () => {
	it("an upstream answering 307 to a second server: that server receives nothing, and the error names the server, not the target", async () => {
		const sinkTag = uniqueName("sink");
		const sink = hostileUrl("sink", sinkTag);
		const { name, tag } = await registerHostile(
			"redirect",
			{ to: sink },
			{ Authorization: "Bearer ${UPSTREAM_ALPHA_TOKEN}" },
		);
		const { key } = await createKey();
		const response = await postInitialize(`/mcp/${name}`, key);
		expect(response.headers.get("mcp-session-id")).toBeNull();
		const reply = await readReply(response);
		expect(reply.error?.data).toEqual({ kind: "upstream_error", server: name });
		expect(reply.error?.message).toMatch(/redirect \(HTTP 307\)/);
		expect(reply.error?.message).not.toContain("sink");
		expect(reply.error?.message).not.toContain("127.0.0.1");
		expect((await hostileLog(tag)).map((entry) => entry.httpMethod)).toEqual(["POST"]);
		expect(await hostileLog(sinkTag)).toEqual([]);
	});

	it("a redirecting member of an aggregate: calls to it fail naming it, the other members work, the target receives nothing", async () => {
		const sinkTag = uniqueName("sink");
		const redirecting = await registerHostile("redirect", { to: hostileUrl("sink", sinkTag) });
		const beta = await registerServer("beta");
		const { call } = await aggregateOf([redirecting.name, beta]);
		const failed = await call("tools/call", { name: `${redirecting.name}__ok`, arguments: {} });
		expect(failed.result?.isError).toBe(true);
		expect(JSON.stringify(failed.result)).toContain(redirecting.name);
		expect(JSON.stringify(failed.result)).not.toContain("sink");
		const echoed = await call("tools/call", { name: `${beta}__echo`, arguments: { text: "still here" } });
		expect(echoed.result?.content).toEqual([{ type: "text", text: "still here" }]);
		expect(await hostileLog(sinkTag)).toEqual([]);
	});
});

describe("replies are capped by MAX_REPLY_BYTES everywhere", () => {
	for (const behaviour of ["huge-init-json", "huge-init-sse"]) {
		it(`an initialize reply over the cap fails as reply_too_large naming the server (${behaviour})`, async () => {
			const { name } = await registerHostile(behaviour);
			const { key } = await createKey();
			const response = await postInitialize(`/mcp/${name}`, key);
			expect(response.headers.get("mcp-session-id")).toBeNull();
			const reply = await readReply(response);
			expect(reply.error?.data).toEqual({ kind: "reply_too_large", server: name });
		});
	}

	it("a member whose list pages together pass the cap is left out of the list, and its pages stop being fetched at the cap", async () => {
		// Five pages of 600 KiB: each fits under the 2 MiB cap, the four first together do not.
		const huge = await registerHostile("huge-catalog", { pages: "5", pageKiB: "600" });
		const beta = await registerServer("beta");
		const { call } = await aggregateOf([huge.name, beta]);
		const listed = await call("tools/list");
		const names = ((listed.result?.tools ?? []) as Array<{ name: string }>).map((tool) => tool.name);
		expect(names).toContain(`${beta}__echo`);
		expect(names.some((tool) => tool.startsWith(`${huge.name}__`))).toBe(false);
		const pages = (await hostileLog(huge.tag)).filter((entry) => entry.rpcMethod === "tools/list");
		expect(pages.length).toBe(4);
	});

	it("resource templates are matched in time linear in the URI: a template built to make a backtracking matcher explode answers at once", async () => {
		const redos = await registerHostile("redos-template");
		const { call } = await aggregateOf([redos.name]);
		const templates = await call("resources/templates/list");
		expect(templates.result?.resourceTemplates).toHaveLength(1);
		// Almost a match: the final '/' cannot be taken by the last simple expression.
		const uri = `${"a".repeat(10_000)}x${"b".repeat(4_000)}/`;
		const read = await call("resources/read", { uri });
		expect(read.error?.code).toBe(-32002);
		const matching = `${"a".repeat(40)}x${"b".repeat(30)}`;
		expect((await call("resources/read", { uri: matching })).result).toBeDefined();
	});

	it("a member flooding list_changed costs at most one list per 250 ms (the longest a refresh waits for quiet)", async () => {
		const flood = await registerHostile("flood", { ms: "400" });
		const { path, key, sessionId, call } = await aggregateOf([flood.name]);
		await call("tools/list");
		const listsBefore = (await hostileLog(flood.tag)).filter((entry) => entry.rpcMethod === "tools/list").length;
		const started = Date.now();
		const events = await gatewayFetch(path, {
			headers: mcpHeaders(key, sessionId, { accept: "text/event-stream" }),
		});
		expect(events.status).toBe(200);
		await eventually(
			async () =>
				(await hostileLog(flood.tag)).filter((entry) => entry.rpcMethod === "tools/list").length > listsBefore,
			"a refresh while the member floods",
		);
		await events.body?.cancel();
		await runInDurableObject(await sessionObject(sessionId), (instance: SessionDO) => instance.settled());
		const elapsed = Date.now() - started;
		const lists = (await hostileLog(flood.tag)).filter((entry) => entry.rpcMethod === "tools/list").length;
		expect(lists - listsBefore).toBeLessThanOrEqual(Math.ceil(elapsed / 250) + 2);
	});
});

describe("aggregate members are isolated from each other", () => {
	it("a member answering with other requests' ids: only the response to its own request reaches the client, nothing after it; its request to the client arrives under a gateway-minted id", async () => {
		const liar = await registerHostile("lying-ids");
		const beta = await registerServer("beta");
		const { send } = await aggregateOf([liar.name, beta]);
		await send("tools/list");
		const { text, type } = await send("tools/call", {
			name: `${liar.name}__ok`,
			arguments: {},
			_meta: { progressToken: "mine" },
		});
		const messages = messagesOf(text, type);
		const responses = messages.filter((message) => message.id !== undefined && message.method === undefined);
		expect(responses).toHaveLength(1);
		expect(responses[0]?.id).toBe(2);
		expect(JSON.stringify(responses[0])).toContain("real");
		expect(text).not.toContain("forged");
		const requests = messages.filter((message) => message.id !== undefined && message.method !== undefined);
		expect(requests.map((request) => request.method)).toEqual(["sampling/createMessage"]);
		expect(String(requests[0]?.id)).toMatch(/^gw-[\w-]{22}$/);
		expect(text).not.toContain("someone-elses-token");
	});

	it("a member whose JSON reply carries another request's id gets its call failed, not delivered", async () => {
		const liar = await registerHostile("lying-ids", { json: "1" });
		const { call } = await aggregateOf([liar.name]);
		await call("tools/list");
		const reply = await call("tools/call", { name: `${liar.name}__ok`, arguments: {} });
		expect(reply.result?.isError).toBe(true);
		expect(reply.result?._meta).toEqual({ "mcp-edge-gateway/error": { kind: "upstream_error", server: liar.name } });
		expect(JSON.stringify(reply)).not.toContain("forged");
	});

	it("a catch-all template {+u} on one member never takes another member's URIs: exact listings, then the most specific template", async () => {
		const catchAll = await registerHostile("catch-all");
		const beta = await registerServer("beta");
		const { call } = await aggregateOf([catchAll.name, beta]);
		// The templates are known to the session, the resources not yet.
		await call("resources/templates/list");
		const readme = await call("resources/read", { uri: "demo://beta/readme" });
		expect(JSON.stringify(readme.result)).toContain("This is beta.");
		const note = await call("resources/read", { uri: "demo://beta/notes/7" });
		expect(JSON.stringify(note.result)).toContain("note 7");
		const other = await call("resources/read", { uri: "other://anything/else" });
		expect(JSON.stringify(other.result)).toContain("catch-all read other://anything/else");
		const reads = (await hostileLog(catchAll.tag)).filter((entry) => entry.rpcMethod === "resources/read");
		expect(reads).toHaveLength(1);
	});

	it("two members listing the same URI: it is left out of the list, its reads are refused as ambiguous, and the operator is told once", async () => {
		const warnings: string[] = [];
		vi.spyOn(console, "warn").mockImplementation((line: unknown) => {
			warnings.push(String(line));
		});
		const dup = await registerHostile("dup-uri", { uri: "demo://beta/readme" });
		const beta = await registerServer("beta");
		const { call } = await aggregateOf([dup.name, beta]);
		const listed = await call("resources/list");
		const uris = ((listed.result?.resources ?? []) as Array<{ uri: string }>).map((resource) => resource.uri);
		expect(uris).not.toContain("demo://beta/readme");
		const read = await call("resources/read", { uri: "demo://beta/readme" });
		expect(read.error?.code).toBe(-32602);
		expect(read.error?.message).toContain(`several servers of this endpoint (${dup.name}, ${beta})`);
		await call("resources/list");
		const conflicts = warnings.filter((line) => line.includes('"resource_conflict"') && line.includes(dup.name));
		expect(conflicts).toHaveLength(1);
		expect(JSON.parse(conflicts[0] ?? "{}")).toMatchObject({ uri: "demo://beta/readme", servers: [dup.name, beta] });
		expect((await hostileLog(dup.tag)).some((entry) => entry.rpcMethod === "resources/read")).toBe(false);
	});
});

describe("upstream lists are parsed, not cast", () => {
	it("invalid tool entries are dropped with one log line naming the server; valid ones are listed", async () => {
		const warnings: string[] = [];
		vi.spyOn(console, "warn").mockImplementation((line: unknown) => {
			warnings.push(String(line));
		});
		const invalid = await registerHostile("invalid-tools");
		const { call } = await aggregateOf([invalid.name]);
		const listed = await call("tools/list");
		expect(((listed.result?.tools ?? []) as Array<{ name: string }>).map((tool) => tool.name)).toEqual([
			`${invalid.name}__good`,
		]);
		const dropped = warnings.filter((line) => line.includes(`upstream ${invalid.name}: dropped`));
		expect(dropped).toEqual([`upstream ${invalid.name}: dropped 3 invalid tools entries of its tools/list reply`]);
	});
});

describe("client-visible errors", () => {
	it("an unreachable upstream is a sentence and a kind: no host, path or raw fetch error; the operator's log has the detail", async () => {
		const warnings: string[] = [];
		vi.spyOn(console, "warn").mockImplementation((line: unknown) => {
			warnings.push(String(line));
		});
		const name = uniqueName("gone");
		await admin("PUT", `/servers/${name}`, { url: "http://127.0.0.1:9/some/path?token=x" });
		const { key } = await createKey();
		const reply = await readReply(await postInitialize(`/mcp/${name}`, key));
		expect(reply.error?.data).toEqual({ kind: "upstream_unavailable", server: name });
		expect(reply.error?.message).toBe(`Upstream server '${name}' is unreachable.`);
		const detail = warnings.find((line) => line.startsWith(`upstream ${name}:`)) ?? "";
		expect(detail).toContain("http://127.0.0.1:9/some/path");
		expect(detail).not.toContain("token=x");
	});
});

describe("the stateless path passes on only what MCP allows from a 2026-07-28 upstream", () => {
	/** A 2026-07-28 upstream (the hostile one, found out by its server/discover) failing as `query` says. */
	async function failing(query: Record<string, string>) {
		const upstream = await registerHostile("modern-failing", query);
		const { key } = await createKey({ servers: [upstream.name] });
		const post = (id: number, method: string, params: Record<string, unknown> = {}) =>
			modernPost(`/mcp/${upstream.name}`, key, { id, method, params: { ...params, _meta: ENVELOPE } });
		return { ...upstream, post };
	}
	const callOk = { name: "ok", arguments: {} };

	it("an upstream's 401 is the upstream refusing the gateway: HTTP 200, no WWW-Authenticate, an upstream_auth_required result naming the server", async () => {
		const { name, tag, post } = await failing({ status: "401" });
		const response = await post(1, "tools/call", callOk);
		expect(response.status).toBe(200);
		expect(response.headers.get("www-authenticate")).toBeNull();
		expect(response.headers.get("content-type")).toMatch(/^application\/json/);
		const result = (await readReply(response)).result as ToolResult;
		expect(result.isError).toBe(true);
		expect(result._meta?.[ERROR_META_KEY]).toMatchObject({ kind: "upstream_auth_required", server: name });
		expect(result.content[0]?.text).toMatch(new RegExp(`'${name}' rejected the gateway's credentials \\(HTTP 401\\)`));
		expect((await hostileLog(tag)).filter((entry) => entry.rpcMethod === "tools/call")).toHaveLength(1);
	});

	it("an upstream's 401 outside a tool call is a JSON-RPC error of the same kind, with HTTP 200", async () => {
		const { name, post } = await failing({ status: "401" });
		const response = await post(2, "tools/list");
		expect(response.status).toBe(200);
		expect(response.headers.get("www-authenticate")).toBeNull();
		const reply = await readReply(response);
		expect(reply.id).toBe(2);
		expect(reply.error?.data).toMatchObject({ kind: "upstream_auth_required", server: name });
	});

	it("an upstream's 500 is an upstream_error naming the server and the status, with HTTP 200", async () => {
		const { name, post } = await failing({ status: "500" });
		const response = await post(3, "tools/list");
		expect(response.status).toBe(200);
		const reply = await readReply(response);
		expect(reply.error?.data).toEqual({ kind: "upstream_error", server: name });
		expect(reply.error?.message).toBe(`Upstream server '${name}' failed tools/list: it answered HTTP 500.`);
	});

	it("an upstream's HTML with HTTP 200 is never served from the gateway: the client gets an upstream_error as JSON, labelled nosniff", async () => {
		const { name, post } = await failing({ status: "200", type: "text/html" });
		const response = await post(4, "tools/call", callOk);
		expect(response.status).toBe(200);
		expect(response.headers.get("content-type")).toMatch(/^application\/json/);
		expect(response.headers.get("x-content-type-options")).toBe("nosniff");
		const text = await response.text();
		expect(text).not.toContain("<script");
		const result = (JSON.parse(text) as { result: ToolResult }).result;
		expect(result.isError).toBe(true);
		expect(result._meta?.[ERROR_META_KEY]).toMatchObject({ kind: "upstream_error", server: name });
		expect(result.content[0]?.text).toMatch(/unexpected content type \(text\/html\)/);
	});

	it("an upstream's HTML with an error status is not passed on either, whatever the status", async () => {
		for (const status of ["403", "404", "502"]) {
			const { name, post } = await failing({ status });
			const response = await post(5, "tools/list");
			expect(response.status).toBe(200);
			expect(response.headers.get("content-type")).toMatch(/^application\/json/);
			const reply = await readReply(response);
			expect(reply.error?.data).toMatchObject({ kind: "upstream_error", server: name });
		}
	});
});

describe("a 2025 session over a 2026-07-28 upstream", () => {
	it("a call goes out even when the tool list that gives its Mcp-Param headers fails, and the operator's log says so, naming the server", async () => {
		const warnings: string[] = [];
		vi.spyOn(console, "warn").mockImplementation((line: unknown) => {
			warnings.push(String(line));
		});
		// Pinned: a 2025 session would otherwise open with the initialize this upstream also answers.
		const name = uniqueName("modern-failing");
		const tag = uniqueName("tag");
		const url = hostileUrl("modern-failing", tag, { fail: "tools/list", status: "500" });
		expect((await admin("PUT", `/servers/${name}`, { url, protocol: "2026-07-28" })).status).toBe(201);
		const { key } = await createKey({ servers: [name] });
		const sessionId = await openSession(`/mcp/${name}`, key);
		const call = { jsonrpc: "2.0", method: "tools/call", params: { name: "ok", arguments: {} } };
		for (const id of [2, 3]) {
			const reply = await readReply(await rpc(`/mcp/${name}`, key, sessionId, { ...call, id }));
			expect((reply.result as ToolResult | undefined)?.content[0]?.text).toBe("ok from modern-failing");
		}
		const said = warnings.filter((line) => line.startsWith(`upstream ${name}: its tool list could not be read`));
		expect(said).toHaveLength(2);
		expect(said[0]).toMatch(/goes out without Mcp-Param-\* headers/);
		// A failed list is not remembered as empty: each call asked for it again.
		const methods = (await hostileLog(tag)).map((entry) => entry.rpcMethod);
		expect(methods.filter((method) => method === "tools/list")).toHaveLength(2);
		expect(methods.filter((method) => method === "tools/call")).toHaveLength(2);
	});
});

describe("every answer of the gateway is labelled nosniff", () => {
	it("its own pages and refusals, the admin API, a session's answers and a 2026-07-28 upstream's passed-on reply all carry X-Content-Type-Options: nosniff", async () => {
		const modern = await registerServer("modern");
		const legacy = await registerServer("beta");
		const { key } = await createKey({ servers: [modern, legacy] });
		const sessionId = await openSession(`/mcp/${legacy}`, key);
		const answers: Record<string, Response> = {
			health: await gatewayFetch("/healthz"),
			"unknown path": await gatewayFetch("/nowhere"),
			"foreign host": await exports.default.fetch(new Request("http://elsewhere.test/healthz")),
			"no key": await gatewayFetch(`/mcp/${legacy}`, { method: "POST", body: "{}" }),
			admin: await admin("GET", "/servers"),
			"session initialize": await postInitialize(`/mcp/${legacy}`, key),
			"session call": await rpc(`/mcp/${legacy}`, key, sessionId, {
				jsonrpc: "2.0",
				id: 2,
				method: "tools/list",
			}),
			"2026-07-28 upstream": await modernPost(`/mcp/${modern}`, key, {
				id: 3,
				method: "tools/list",
				params: { _meta: ENVELOPE },
			}),
		};
		const labels = Object.fromEntries(
			await Promise.all(
				Object.entries(answers).map(async ([what, response]) => {
					await response.body?.cancel();
					return [what, `${response.status} ${response.headers.get("x-content-type-options")}`] as const;
				}),
			),
		);
		expect(labels).toEqual({
			health: "200 nosniff",
			"unknown path": "404 nosniff",
			"foreign host": "403 nosniff",
			"no key": "401 nosniff",
			admin: "200 nosniff",
			"session initialize": "200 nosniff",
			"session call": "200 nosniff",
			"2026-07-28 upstream": "200 nosniff",
		});
	});
});
