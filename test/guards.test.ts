import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it, vi } from "vitest";
import { type GuardSource, guardCall } from "../src/governance/guards/guarded-call.ts";
import { policyPrincipal } from "../src/governance/policies.ts";
import { GUARD_META_KEY } from "../src/mcp/guard-notes.ts";
import type { Telemetry } from "../src/telemetry/telemetry.ts";
import { eventually } from "./support/eventually.ts";
import { admin, connectClient, createKey, uniqueName } from "./support/gateway.ts";
import { echoingServer, modernServer, texts, toolCallLines } from "./support/guarded-servers.ts";
import { parsedCall } from "./support/messages.ts";
import { connectModernClient } from "./support/modern.ts";
import { createdTask, openWith, taskRequest } from "./support/tasks.ts";
import { toolCallsOf, upstreamLog, upstreamUrl } from "./support/upstreams.ts";

/**
 * Content guards (docs/guards.md): a guard scans a call's arguments (stage
 * request) or its result (stage response) with the built-in detectors and
 * redacts, blocks or only notes what it finds. 2025 clients are served by a
 * session, over the `mutable` upstream's `profile` tool, which answers with its
 * arguments as text and as structured content; 2026-07-28 clients of the
 * `modern` upstream are served at the edge (decision 0114). Every guard
 * applies to the test's own server only.
 */

/** A made-up AWS access key id: gitleaks' rules allow AWS's documented `…EXAMPLE` keys, so this one is not one. */
const AWS_KEY = "AKIAZ52QW7XJ4RTGMN3H";
const EMAIL = "ada.lovelace@example.com";
const PLANTED = `key ${AWS_KEY} mail ${EMAIL}`;
const REDACTED = "key [redacted:secrets] mail [redacted:email]";

const made: string[] = [];
afterEach(async () => {
	vi.restoreAllMocks();
	for (const name of made.splice(0)) await admin("DELETE", `/guards/${name}`);
});

async function putGuard(body: Record<string, unknown>): Promise<string> {
	const name = uniqueName("guard");
	const response = await admin("PUT", `/guards/${name}`, body);
	if (response.status !== 201) throw new Error(`guard: ${response.status} ${await response.text()}`);
	made.push(name);
	return name;
}

describe("admin: /admin/guards", () => {
	it("creates, shows, lists and deletes a guard", async () => {
		const server = await echoingServer();
		const name = uniqueName("guard");
		const body = {
			stage: "response",
			applies: { servers: [server], tools: ["prof*"] },
			detect: ["email"],
			action: "log",
		};
		const created = await admin("PUT", `/guards/${name}`, body);
		expect(created.status).toBe(201);
		made.push(name);
		expect(await (await admin("GET", `/guards/${name}`)).json()).toMatchObject({ name, ...body });
		const listed = (await (await admin("GET", "/guards")).json()) as { guards: Array<{ name: string }> };
		expect(listed.guards.map((guard) => guard.name)).toContain(name);
		expect((await admin("DELETE", `/guards/${name}`)).status).toBe(204);
		expect((await admin("GET", `/guards/${name}`)).status).toBe(404);
	});

	it("refuses a guard naming a server that does not exist, or a detector that is not built in, and keeps nothing", async () => {
		const name = uniqueName("guard");
		const unknownServer = await admin("PUT", `/guards/${name}`, {
			stage: "response",
			applies: { servers: ["no-such-server"] },
			detect: ["email"],
			action: "redact",
		});
		expect(unknownServer.status).toBe(400);
		expect(JSON.stringify(await unknownServer.json())).toContain("no server named 'no-such-server'");
		const unknownKind = await admin("PUT", `/guards/${name}`, { stage: "response", detect: ["ssn"], action: "redact" });
		expect(unknownKind.status).toBe(400);
		expect((await admin("GET", `/guards/${name}`)).status).toBe(404);
	});
});

describe("response guards", () => {
	it("a redact guard replaces a planted AWS key and e-mail address in text and structured content (2025 session)", async () => {
		const server = await echoingServer();
		const guard = await putGuard({
			stage: "response",
			applies: { servers: [server] },
			detect: ["secrets", "email"],
			action: "redact",
		});
		const { key } = await createKey();
		const { client } = await connectClient(`/mcp/${server}`, key);
		const lines = toolCallLines(server);
		const result = (await client.callTool({ name: "profile", arguments: { note: PLANTED } })) as CallToolResult;
		expect(texts(result)).toEqual([REDACTED]);
		expect(result.structuredContent).toEqual({ echoed: { note: REDACTED }, nested: [{ again: [REDACTED] }] });
		expect(JSON.stringify(result)).not.toContain(AWS_KEY);
		expect(JSON.stringify(result)).not.toContain(EMAIL);
		// Three of each: the text block, `echoed.note` and `nested[0].again[0]`.
		const noted = [{ guard, action: "redact", kinds: { secrets: 3, email: 3 } }];
		expect(result._meta?.[GUARD_META_KEY]).toEqual(noted);
		const [line] = await eventually(() => (lines.length > 0 ? lines : null), "the tool_call line");
		expect(line).toMatchObject({ outcome: "ok", guards: noted });
		expect(JSON.stringify(line)).not.toContain(EMAIL);
		await client.close();
	});

	it("a redact guard replaces a planted AWS key and e-mail address in text and structured content (2026-07-28, at the edge)", async () => {
		const server = await modernServer();
		await putGuard({
			stage: "response",
			applies: { servers: [server] },
			detect: ["secrets", "email"],
			action: "redact",
		});
		const { key } = await createKey();
		const client = await connectModernClient(`/mcp/${server}`, key);
		const result = (await client.callTool({ name: "region_echo", arguments: { region: PLANTED } })) as CallToolResult;
		expect(texts(result)).toEqual([REDACTED]);
		expect(result.structuredContent).toEqual({ region: REDACTED, header: REDACTED });
		await client.close();
	});

	it("a block guard replaces the result with an error result naming the guard, in both eras", async () => {
		const legacy = await echoingServer();
		const modern = await modernServer();
		const guard = await putGuard({
			stage: "response",
			applies: { servers: [legacy, modern] },
			detect: ["secrets"],
			action: "block",
		});
		const { key } = await createKey();
		const { client } = await connectClient(`/mcp/${legacy}`, key);
		const blocked = (await client.callTool({ name: "profile", arguments: { note: PLANTED } })) as CallToolResult;
		expect(blocked.isError).toBe(true);
		expect(texts(blocked)).toEqual([
			`The gateway's guard '${guard}' found 3 secrets in this result, so it was withheld; ask its operator.`,
		]);
		expect(blocked.structuredContent).toBeUndefined();
		await client.close();
		const modernClient = await connectModernClient(`/mcp/${modern}`, key);
		const modernBlocked = (await modernClient.callTool({
			name: "region_echo",
			arguments: { region: PLANTED },
		})) as CallToolResult;
		expect(modernBlocked.isError).toBe(true);
		expect(texts(modernBlocked)[0]).toContain(`guard '${guard}'`);
		expect(JSON.stringify(modernBlocked)).not.toContain(AWS_KEY);
		await modernClient.close();
	});

	it("a log guard changes nothing of the result and only notes the kinds it found", async () => {
		const server = await echoingServer();
		const guard = await putGuard({
			stage: "response",
			applies: { servers: [server] },
			detect: ["email"],
			action: "log",
		});
		const { key } = await createKey();
		const { client } = await connectClient(`/mcp/${server}`, key);
		const result = (await client.callTool({ name: "profile", arguments: { note: PLANTED } })) as CallToolResult;
		expect(texts(result)).toEqual([PLANTED]);
		expect(result.structuredContent).toEqual({ echoed: { note: PLANTED }, nested: [{ again: [PLANTED] }] });
		expect(result._meta?.[GUARD_META_KEY]).toEqual([{ guard, action: "log", kinds: { email: 3 } }]);
		await client.close();
	});

	it("on an aggregate, a guard naming the tool without its server__ prefix redacts the member's result", async () => {
		const server = await echoingServer();
		await putGuard({
			stage: "response",
			applies: { servers: [server], tools: ["profile"] },
			detect: ["email"],
			action: "redact",
		});
		const { key } = await createKey({ servers: [server] });
		const { client } = await connectClient("/mcp", key);
		const result = (await client.callTool({
			name: `${server}__profile`,
			arguments: { note: `mail ${EMAIL}` },
		})) as CallToolResult;
		expect(texts(result)).toEqual(["mail [redacted:email]"]);
		expect(result.structuredContent).toEqual({
			echoed: { note: "mail [redacted:email]" },
			nested: [{ again: ["mail [redacted:email]"] }],
		});
		await client.close();
	});

	it("on an aggregate, a 2026-07-28 client's call of a 2025 member is redacted in the session that bridges it", async () => {
		const server = await echoingServer();
		await putGuard({ stage: "response", applies: { servers: [server] }, detect: ["secrets"], action: "redact" });
		const { key } = await createKey({ servers: [server] });
		const client = await connectModernClient("/mcp", key);
		const result = (await client.callTool({
			name: `${server}__profile`,
			arguments: { note: AWS_KEY },
		})) as CallToolResult;
		expect(texts(result)).toEqual(["[redacted:secrets]"]);
		expect(JSON.stringify(result)).not.toContain(AWS_KEY);
		await client.close();
	});

	it("a call the gateway holds as a task has its result redacted when the client reads it (tasks/result)", async () => {
		const server = await echoingServer();
		await putGuard({ stage: "response", applies: { servers: [server] }, detect: ["email"], action: "redact" });
		const { key } = await createKey();
		const { send } = await openWith(`/mcp/${server}`, key);
		const call = { name: "profile", arguments: { note: EMAIL }, task: {} };
		const task = createdTask(await send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: call }));
		const result = (await send(taskRequest(3, "tasks/result", task.taskId))).result as CallToolResult;
		expect(texts(result)).toEqual(["[redacted:email]"]);
		expect(JSON.stringify(result)).not.toContain(EMAIL);
	});

	it("a guard for a virtual server redacts results there, and not on the member's own endpoint", async () => {
		const server = await echoingServer();
		const virtual = uniqueName("guarded-vs");
		const made = await admin("PUT", `/virtual-servers/${virtual}`, { servers: [server] });
		expect(made.status).toBe(201);
		await putGuard({
			stage: "response",
			applies: { virtualServers: [virtual] },
			detect: ["secrets"],
			action: "redact",
		});
		const { key } = await createKey();
		const through = await connectClient(`/mcp/${virtual}`, key);
		// A virtual server names its members' tools `server__tool`.
		const profile = (await through.client.listTools()).tools.find((tool) => tool.name.endsWith("profile"))?.name;
		const guarded = (await through.client.callTool({
			name: profile ?? "",
			arguments: { note: AWS_KEY },
		})) as CallToolResult;
		expect(texts(guarded)).toEqual(["[redacted:secrets]"]);
		await through.client.close();
		const direct = await connectClient(`/mcp/${server}`, key);
		const plain = (await direct.client.callTool({ name: "profile", arguments: { note: AWS_KEY } })) as CallToolResult;
		expect(texts(plain)).toEqual([AWS_KEY]);
		await direct.client.close();
		await admin("DELETE", `/virtual-servers/${virtual}`);
	});

	it("a redact guard without tools redacts a resource read's text", async () => {
		const server = uniqueName("guarded-beta");
		const response = await admin("PUT", `/servers/${server}`, { url: upstreamUrl("beta") });
		expect(response.status).toBe(201);
		await putGuard({ stage: "response", applies: { servers: [server] }, detect: ["email"], action: "redact" });
		const { key } = await createKey();
		const { client } = await connectClient(`/mcp/${server}`, key);
		const read = await client.readResource({ uri: `demo://beta/notes/${EMAIL}` });
		expect(read.contents).toEqual([{ uri: `demo://beta/notes/${EMAIL}`, text: "note [redacted:email]" }]);
		await client.close();
	});

	it("a guard that applies to another server leaves this server's results as they came, with no note", async () => {
		const server = await echoingServer();
		const other = await echoingServer();
		await putGuard({
			stage: "response",
			applies: { servers: [other] },
			detect: ["secrets", "email"],
			action: "redact",
		});
		const { key } = await createKey();
		const { client } = await connectClient(`/mcp/${server}`, key);
		const result = (await client.callTool({ name: "profile", arguments: { note: PLANTED } })) as CallToolResult;
		expect(texts(result)).toEqual([PLANTED]);
		expect(result._meta?.[GUARD_META_KEY]).toBeUndefined();
		await client.close();
	});
});

describe("request guards", () => {
	it("a block guard refuses a call whose arguments hold a secret, naming the guard, and the upstream never hears of it (2025)", async () => {
		const server = await echoingServer();
		const guard = await putGuard({
			stage: "request",
			applies: { servers: [server] },
			detect: ["secrets"],
			action: "block",
		});
		const { key } = await createKey();
		const { client } = await connectClient(`/mcp/${server}`, key);
		const note = `${PLANTED} ${uniqueName("call")}`;
		const lines = toolCallLines(server);
		await expect(client.callTool({ name: "profile", arguments: { note } })).rejects.toThrow(
			`The gateway's guard '${guard}' found 1 secrets in this call's arguments, so it was not sent; ask its operator.`,
		);
		const log = await upstreamLog("mutable");
		expect(log.filter((entry) => JSON.stringify(entry.body ?? {}).includes(note))).toEqual([]);
		// Accounted as a refusal, with what the guard found and not the text.
		const [line] = await eventually(() => (lines.length > 0 ? lines : null), "the tool_call line");
		expect(line).toMatchObject({
			outcome: "refused_policy",
			guards: [{ guard, action: "block", kinds: { secrets: 1 } }],
		});
		expect(JSON.stringify(line)).not.toContain(AWS_KEY);
		await client.close();
	});

	it("a block guard refuses a 2026-07-28 call at the edge, and the upstream never hears of it", async () => {
		const server = await modernServer();
		const guard = await putGuard({
			stage: "request",
			applies: { servers: [server] },
			detect: ["email"],
			action: "block",
		});
		const { key } = await createKey();
		const client = await connectModernClient(`/mcp/${server}`, key);
		const text = `${EMAIL} ${uniqueName("call")}`;
		await expect(client.callTool({ name: "echo", arguments: { text } })).rejects.toThrow(`guard '${guard}'`);
		expect(await toolCallsOf("modern", "echo", { text })).toEqual([]);
		await client.close();
	});

	it("a redact guard at the edge redacts an argument and the Mcp-Param header that mirrors it alike (2026-07-28)", async () => {
		const server = await modernServer();
		await putGuard({ stage: "request", applies: { servers: [server] }, detect: ["email"], action: "redact" });
		const { key } = await createKey();
		const client = await connectModernClient(`/mcp/${server}`, key);
		const region = `eu ${EMAIL} ${uniqueName("call")}`;
		const result = (await client.callTool({ name: "region_echo", arguments: { region } })) as CallToolResult;
		const redacted = region.replace(EMAIL, "[redacted:email]");
		// The fixture answers with the argument and the header it received: neither holds the address.
		expect(result.structuredContent).toEqual({ region: redacted, header: redacted });
		expect(JSON.stringify(await upstreamLog("modern"))).not.toContain(region);
		await client.close();
	});

	it("a redact guard sends the call with its arguments redacted", async () => {
		const server = await echoingServer();
		await putGuard({
			stage: "request",
			applies: { servers: [server], tools: ["prof*"] },
			detect: ["email"],
			action: "redact",
		});
		const { key } = await createKey();
		const { client } = await connectClient(`/mcp/${server}`, key);
		const result = (await client.callTool({ name: "profile", arguments: { note: `mail ${EMAIL}` } })) as CallToolResult;
		expect(texts(result)).toEqual(["mail [redacted:email]"]);
		await client.close();
	});
});

describe("scanning is skipped when no guard applies", () => {
	const call = parsedCall({
		jsonrpc: "2.0",
		id: 1,
		method: "tools/call",
		params: { name: "echo", arguments: { text: PLANTED } },
	});

	function countingSource(guards: Awaited<ReturnType<GuardSource["guards"]>>) {
		const asked: string[] = [];
		const source: GuardSource = {
			guards: async () => {
				asked.push("guards");
				return guards;
			},
			asker: () => {
				asked.push("asker");
				return { principal: policyPrincipal("key_abcdefghijkl", null, null), virtualServer: null, now: 0 };
			},
			guardWebhook: async () => {
				asked.push("guardWebhook");
				return new Response(null, { status: 500 });
			},
			telemetry: { enabled: false } as unknown as Telemetry,
		};
		return { source, asked };
	}

	it("with no guard published, a call asks only for the cached list and goes on as it came, unscanned", async () => {
		const { source, asked } = countingSource([]);
		const verdict = await guardCall(source, "files", call, call);
		expect(asked).toEqual(["guards"]);
		expect(verdict).toEqual({ send: call, guardNotes: [], responseGuards: [] });
		expect("send" in verdict && verdict.send).toBe(call);
	});

	it("with guards only for other servers, the call is sent as it came and its reply is given no guard", async () => {
		const guard = {
			name: "elsewhere",
			stage: "request" as const,
			applies: { servers: ["other"] },
			detect: ["secrets" as const],
			action: "block" as const,
			webhook: null,
			createdAt: 0,
			updatedAt: 0,
		};
		const { source } = countingSource([guard, { ...guard, stage: "response" }]);
		const verdict = await guardCall(source, "files", call, call);
		expect(verdict).toEqual({ send: call, guardNotes: [], responseGuards: [] });
	});
});
