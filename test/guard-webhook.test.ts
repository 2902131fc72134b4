import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, inject, it, vi } from "vitest";
import { GUARD_META_KEY } from "../src/mcp/guard-notes.ts";
import { eventually } from "./support/eventually.ts";
import { admin, connectClient, createKey, uniqueName } from "./support/gateway.ts";
import { echoingServer, modernServer, texts, toolCallLines } from "./support/guarded-servers.ts";
import { connectModernClient } from "./support/modern.ts";
import { toolCallsOf, upstreamUrl } from "./support/upstreams.ts";

/**
 * Webhook guards (docs/guards.md, "Webhook guards"): a guard sends the stage's
 * content to an organisation's own scanner, the receiver of
 * scripts/fixtures/guard-webhook.ts in its own process, which checks the
 * signature (401 when it does not verify), records each POST (`GET /log`) and
 * answers by rule: `block-me` blocks, `rewrite-me` is modified to `rewritten`,
 * `/hang` never answers, `/broken` answers 500. 2025 clients are served by a
 * session over the `mutable` upstream's echoing `profile` tool; 2026-07-28
 * clients of the `modern` upstream's `echo` tool at the edge.
 */

const RECEIVER = `http://127.0.0.1:${inject("guardWebhookPort")}`;
const SECRET = "${UPSTREAM_GUARD_WEBHOOK_SECRET}";
const BLOCK_REASON = "the scanner found a phrase it blocks";

interface Received {
	path: string;
	signatureValid: boolean;
	body: { guard?: string; [field: string]: unknown };
}

const made: string[] = [];
afterEach(async () => {
	vi.restoreAllMocks();
	for (const name of made.splice(0)) await admin("DELETE", `/guards/${name}`);
});

async function putGuard(body: Record<string, unknown>): Promise<string> {
	const name = uniqueName("hook");
	const response = await admin("PUT", `/guards/${name}`, body);
	if (response.status !== 201) throw new Error(`guard: ${response.status} ${await response.text()}`);
	made.push(name);
	return name;
}

/** A webhook guard of `stage` on `server`, to the receiver's `path`, with the webhook fields `extra`. */
function webhookGuard(stage: "request" | "response", server: string, path = "/", extra: Record<string, unknown> = {}) {
	return putGuard({
		stage,
		applies: { servers: [server] },
		webhook: { url: `${RECEIVER}${path}`, secret: SECRET, ...extra },
	});
}

/** What the receiver recorded for `guard`, oldest first. */
async function received(guard: string): Promise<Received[]> {
	const log = (await (await fetch(`${RECEIVER}/log`)).json()) as Received[];
	return log.filter((entry) => entry.body?.guard === guard);
}

describe("admin: webhook guards", () => {
	it("a guard with both detect and a webhook, or a secret that is not a reference, is refused 400 with a sentence and nothing is kept", async () => {
		const name = uniqueName("hook");
		const both = await admin("PUT", `/guards/${name}`, {
			stage: "request",
			detect: ["email"],
			action: "block",
			webhook: { url: `${RECEIVER}/`, secret: SECRET },
		});
		expect(both.status).toBe(400);
		expect(JSON.stringify(await both.json())).toContain(
			"a guard has either detect and action (the built-in detectors) or a webhook (its own scanner), not both",
		);
		const literal = await admin("PUT", `/guards/${name}`, {
			stage: "request",
			webhook: { url: `${RECEIVER}/`, secret: "the-secret-itself" },
		});
		expect(literal.status).toBe(400);
		expect(JSON.stringify(await literal.json())).toContain("UPSTREAM_");
		const tooLong = await admin("PUT", `/guards/${name}`, {
			stage: "request",
			webhook: { url: `${RECEIVER}/`, secret: SECRET, timeoutMs: 60_000 },
		});
		expect(tooLong.status).toBe(400);
		expect((await admin("GET", `/guards/${name}`)).status).toBe(404);
	});

	it("a webhook guard is kept with its timeout and onFailure defaults (2000 ms, block) and shown with its secret's reference only", async () => {
		const name = await putGuard({ stage: "response", webhook: { url: `${RECEIVER}/`, secret: SECRET } });
		const shown = await (await admin("GET", `/guards/${name}`)).json();
		expect(shown).toMatchObject({
			name,
			stage: "response",
			detect: [],
			action: null,
			webhook: { url: `${RECEIVER}/`, secret: SECRET, timeoutMs: 2000, onFailure: "block" },
		});
	});
});

describe("request-stage webhook guards", () => {
	it("blocks one call (the upstream never hears of it) and modifies another (the upstream receives the modified arguments once), 2025", async () => {
		const server = await echoingServer();
		const guard = await webhookGuard("request", server);
		const { key, id: keyId } = await createKey();
		const { client } = await connectClient(`/mcp/${server}`, key);
		const lines = toolCallLines(server);
		const blocked = `block-me ${uniqueName("call")}`;
		await expect(client.callTool({ name: "profile", arguments: { note: blocked } })).rejects.toThrow(
			`The gateway's guard '${guard}' blocked this call's arguments (its scanner said: ${BLOCK_REASON}), so it was not sent; ask its operator.`,
		);
		expect(await toolCallsOf("mutable", "profile", { note: blocked })).toEqual([]);

		const unique = uniqueName("call");
		const result = (await client.callTool({
			name: "profile",
			arguments: { note: `rewrite-me ${unique}` },
		})) as CallToolResult;
		expect(texts(result)).toEqual([`rewritten ${unique}`]);
		expect(await toolCallsOf("mutable", "profile", { note: `rewritten ${unique}` })).toHaveLength(1);
		expect(await toolCallsOf("mutable", "profile", { note: `rewrite-me ${unique}` })).toEqual([]);

		// The scanner was told the call, signed, in the documented shape.
		const posts = await received(guard);
		expect(posts.map((post) => post.signatureValid)).toEqual([true, true]);
		expect(posts[1]?.body).toEqual({
			guard,
			stage: "request",
			server,
			tool: "profile",
			method: "tools/call",
			caller: { kind: "key", id: keyId },
			content: { note: `rewrite-me ${unique}` },
		});
		// Each verdict noted on its tool_call record, without the content or the reason.
		await eventually(() => (lines.length >= 2 ? lines : null), "two tool_call lines");
		expect(lines.map((line) => line.guards)).toEqual([
			[{ guard, action: "block", kinds: {} }],
			[{ guard, action: "modify", kinds: {} }],
		]);
		expect(JSON.stringify(lines)).not.toContain(BLOCK_REASON);
		await client.close();
	});

	it("a block's reason reaches the caller cut to 200 characters on one line", async () => {
		const server = await echoingServer();
		const guard = await webhookGuard("request", server);
		const { key } = await createKey();
		const { client } = await connectClient(`/mcp/${server}`, key);
		const refusal = await client.callTool({ name: "profile", arguments: { note: "long-reason" } }).then(
			() => "",
			(error: unknown) => String(error),
		);
		const reason = `first line ${"x".repeat(189)}…`;
		expect(refusal).toContain(
			`The gateway's guard '${guard}' blocked this call's arguments (its scanner said: ${reason}), so it was not sent`,
		);
		await client.close();
	});

	it("blocks and modifies a 2026-07-28 call at the edge", async () => {
		const server = await modernServer();
		const guard = await webhookGuard("request", server);
		const { key } = await createKey();
		const client = await connectModernClient(`/mcp/${server}`, key);
		const blocked = `block-me ${uniqueName("call")}`;
		await expect(client.callTool({ name: "echo", arguments: { text: blocked } })).rejects.toThrow(
			`guard '${guard}' blocked this call's arguments`,
		);
		expect(await toolCallsOf("modern", "echo", { text: blocked })).toEqual([]);
		const unique = uniqueName("call");
		const result = (await client.callTool({
			name: "echo",
			arguments: { text: `rewrite-me ${unique}` },
		})) as CallToolResult;
		expect(texts(result)).toEqual([`rewritten ${unique}`]);
		expect(await toolCallsOf("modern", "echo", { text: `rewritten ${unique}` })).toHaveLength(1);
		await client.close();
	});

	it("a modified argument that a 2026-07-28 tool mirrors in an Mcp-Param header goes out modified in both", async () => {
		const server = await modernServer();
		await webhookGuard("request", server);
		const { key } = await createKey();
		const client = await connectModernClient(`/mcp/${server}`, key);
		const unique = uniqueName("call");
		const result = (await client.callTool({
			name: "region_echo",
			arguments: { region: `rewrite-me ${unique}` },
		})) as CallToolResult;
		// The fixture answers with the argument and the header it received: both modified, so it accepted the call.
		expect(result.structuredContent).toEqual({ region: `rewritten ${unique}`, header: `rewritten ${unique}` });
		await client.close();
	});
});

describe("response-stage webhook guards", () => {
	it("modifies a result and blocks another, noting the verdict in the result's _meta (2025)", async () => {
		const server = await echoingServer();
		const guard = await webhookGuard("response", server);
		const { key } = await createKey();
		const { client } = await connectClient(`/mcp/${server}`, key);
		const unique = uniqueName("call");
		const modified = (await client.callTool({
			name: "profile",
			arguments: { note: `rewrite-me ${unique}` },
		})) as CallToolResult;
		expect(texts(modified)).toEqual([`rewritten ${unique}`]);
		expect(modified.structuredContent).toEqual({
			echoed: { note: `rewritten ${unique}` },
			nested: [{ again: [`rewritten ${unique}`] }],
		});
		expect(modified._meta?.[GUARD_META_KEY]).toEqual([{ guard, action: "modify", kinds: {} }]);
		// The upstream was sent the arguments as they came: this guard reads results only.
		expect(await toolCallsOf("mutable", "profile", { note: `rewrite-me ${unique}` })).toHaveLength(1);

		const blocked = (await client.callTool({
			name: "profile",
			arguments: { note: `block-me ${uniqueName("call")}` },
		})) as CallToolResult;
		expect(blocked.isError).toBe(true);
		expect(texts(blocked)).toEqual([
			`The gateway's guard '${guard}' blocked this result (its scanner said: ${BLOCK_REASON}), so it was withheld; ask its operator.`,
		]);
		expect(blocked.structuredContent).toBeUndefined();
		expect(blocked._meta?.[GUARD_META_KEY]).toEqual([{ guard, action: "block", kinds: {} }]);
		await client.close();
	});

	it("modifies a resource read's contents, and blocks another with a refusal", async () => {
		const server = uniqueName("hooked-beta");
		expect((await admin("PUT", `/servers/${server}`, { url: upstreamUrl("beta") })).status).toBe(201);
		const guard = await webhookGuard("response", server);
		const { key } = await createKey();
		const { client } = await connectClient(`/mcp/${server}`, key);
		const read = await client.readResource({ uri: "demo://beta/notes/rewrite-me" });
		expect(read.contents).toEqual([{ uri: "demo://beta/notes/rewritten", text: "note rewritten" }]);
		await expect(client.readResource({ uri: "demo://beta/notes/block-me" })).rejects.toThrow(
			`The gateway's guard '${guard}' blocked this result (its scanner said: ${BLOCK_REASON}), so it was withheld; ask its operator.`,
		);
		const posts = await received(guard);
		expect(posts[0]?.body).toMatchObject({ stage: "response", tool: null, method: "resources/read" });
		await client.close();
	});

	it("modifies and blocks a 2026-07-28 result at the edge", async () => {
		const server = await modernServer();
		const guard = await webhookGuard("response", server);
		const { key } = await createKey();
		const client = await connectModernClient(`/mcp/${server}`, key);
		const unique = uniqueName("call");
		const modified = (await client.callTool({
			name: "echo",
			arguments: { text: `rewrite-me ${unique}` },
		})) as CallToolResult;
		expect(texts(modified)).toEqual([`rewritten ${unique}`]);
		const blocked = (await client.callTool({ name: "echo", arguments: { text: "block-me" } })) as CallToolResult;
		expect(blocked.isError).toBe(true);
		expect(texts(blocked)[0]).toContain(`guard '${guard}' blocked this result`);
		await client.close();
	});
});

describe("a webhook that fails", () => {
	it("with onFailure block, a scanner that never answers refuses the call within its timeout, saying it did not answer", async () => {
		const server = await echoingServer();
		const guard = await webhookGuard("request", server, "/hang", { timeoutMs: 300, onFailure: "block" });
		const { key } = await createKey();
		const { client } = await connectClient(`/mcp/${server}`, key);
		const note = uniqueName("call");
		const started = Date.now();
		await expect(client.callTool({ name: "profile", arguments: { note } })).rejects.toThrow(
			`The gateway's guard '${guard}' could not check this call's arguments: its scanner did not answer, so it was not sent; ask its operator.`,
		);
		// A generous bound for a 300 ms timeout on a loaded machine: the point is that it does not wait for the call's own timeout.
		expect(Date.now() - started).toBeLessThan(5_000);
		expect(await toolCallsOf("mutable", "profile", { note })).toEqual([]);
		expect(await received(guard)).toHaveLength(1);
		await client.close();
	});

	it("with onFailure allow, a scanner that never answers lets the call pass unchanged, noted as failed", async () => {
		const server = await echoingServer();
		const guard = await webhookGuard("response", server, "/hang", { timeoutMs: 300, onFailure: "allow" });
		const { key } = await createKey();
		const { client } = await connectClient(`/mcp/${server}`, key);
		const note = `rewrite-me ${uniqueName("call")}`;
		const result = (await client.callTool({ name: "profile", arguments: { note } })) as CallToolResult;
		expect(texts(result)).toEqual([note]);
		expect(result._meta?.[GUARD_META_KEY]).toEqual([{ guard, action: "failed", kinds: {} }]);
		await client.close();
	});

	it("an answer over 1 MiB is a failure: onFailure block refuses the call", async () => {
		const server = await echoingServer();
		const guard = await webhookGuard("request", server, "/huge");
		const { key } = await createKey();
		const { client } = await connectClient(`/mcp/${server}`, key);
		const note = uniqueName("call");
		await expect(client.callTool({ name: "profile", arguments: { note } })).rejects.toThrow(
			`guard '${guard}' could not check this call's arguments: its scanner did not answer`,
		);
		expect(await toolCallsOf("mutable", "profile", { note })).toEqual([]);
		await client.close();
	});

	it("a scanner that answers 500 is a failure: onFailure block refuses the call", async () => {
		const server = await echoingServer();
		const guard = await webhookGuard("request", server, "/broken");
		const { key } = await createKey();
		const { client } = await connectClient(`/mcp/${server}`, key);
		await expect(client.callTool({ name: "profile", arguments: { note: uniqueName("call") } })).rejects.toThrow(
			`guard '${guard}' could not check this call's arguments: its scanner did not answer`,
		);
		await client.close();
	});

	it("signed with the wrong secret, the receiver answers 401 and onFailure block refuses the call", async () => {
		const server = await echoingServer();
		const guard = await putGuard({
			stage: "request",
			applies: { servers: [server] },
			webhook: { url: `${RECEIVER}/`, secret: "${UPSTREAM_GUARD_WEBHOOK_WRONG}" },
		});
		const { key } = await createKey();
		const { client } = await connectClient(`/mcp/${server}`, key);
		const note = uniqueName("call");
		await expect(client.callTool({ name: "profile", arguments: { note } })).rejects.toThrow(
			`guard '${guard}' could not check this call's arguments: its scanner did not answer`,
		);
		expect((await received(guard)).map((post) => post.signatureValid)).toEqual([false]);
		expect(await toolCallsOf("mutable", "profile", { note })).toEqual([]);
		await client.close();
	});

	it("a secret reference no Worker secret resolves fails the webhook without sending it, and the operator's log names the variable", async () => {
		const server = await echoingServer();
		const warnings: string[] = [];
		vi.spyOn(console, "warn").mockImplementation((line: unknown) => warnings.push(String(line)));
		const guard = await putGuard({
			stage: "request",
			applies: { servers: [server] },
			webhook: { url: `${RECEIVER}/`, secret: "${UPSTREAM_GUARD_WEBHOOK_NOT_SET}" },
		});
		const { key } = await createKey();
		const { client } = await connectClient(`/mcp/${server}`, key);
		await expect(client.callTool({ name: "profile", arguments: { note: uniqueName("call") } })).rejects.toThrow(
			`guard '${guard}' could not check this call's arguments: its scanner did not answer`,
		);
		expect(await received(guard)).toEqual([]);
		const logged = warnings.find((line) => line.includes(`guard ${guard}`));
		expect(logged).toContain("${UPSTREAM_GUARD_WEBHOOK_NOT_SET}");
		await client.close();
	});
});
