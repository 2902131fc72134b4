import { createExecutionContext, env, runInDurableObject } from "cloudflare:test";
import { normalizeCode } from "@cloudflare/codemode";
import { CallToolResultSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it, vi } from "vitest";
import { guardLoops, guardLoopsMapped } from "../src/codemode/loop-guard.ts";
import { writtenPosition } from "../src/codemode/program-position.ts";
import worker from "../src/index.ts";
import type { SessionDO } from "../src/session/session-do.ts";
import { eventually } from "./support/eventually.ts";
import {
	admin,
	BASE,
	connectClient,
	createKey,
	openSession,
	readReply,
	rpc,
	TEST_ADMIN_BEARER,
	uniqueName,
} from "./support/gateway.ts";
import { connectModernClient, ENVELOPE, modernPost } from "./support/modern.ts";
import { objectMadeBy, sessionObject } from "./support/session-object.ts";
import { createdTask, openWith, taskRequest } from "./support/tasks.ts";
import { registerServer, toolCallsOf, upstreamGate, upstreamLog } from "./support/upstreams.ts";

/**
 * An aggregate in code mode (docs/code-mode.md): `tools/list` answers
 * search_tools and execute_code; a program runs in a fresh isolate through
 * the Worker Loader, and each of its inner calls is a call of this caller,
 * through the session's own request path. SDK client (2025-11-25) on /mcp of a key.
 */

const policies: string[] = [];
afterEach(async () => {
	for (const name of policies.splice(0)) await admin("DELETE", `/policies/${name}`);
	vi.restoreAllMocks();
});

function uniqueNumber(): number {
	return 1_000_000 + Math.floor(Math.random() * 1_000_000_000);
}

/** The `tool_call` events logged through `log` (a spy on console.log), in order. */
function toolCallEvents(log: { mock: { calls: unknown[][] } }): Array<Record<string, unknown>> {
	return log.mock.calls
		.map(([line]) => (typeof line === "string" && line.startsWith('{"event":"tool_call"') ? JSON.parse(line) : null))
		.filter((entry) => entry !== null);
}

/** A 2025-11-25 `tools/call` of execute_code running `code`, asked as a task. */
function heldProgram(code: string) {
	return {
		jsonrpc: "2.0",
		id: 2,
		method: "tools/call",
		params: { name: "execute_code", arguments: { code }, task: {} },
	};
}

interface ProgramAnswer {
	isError?: boolean;
	content: Array<{ type: string; text?: string }>;
	structuredContent?: { result: unknown; logs: string[] };
}

async function codeClient(servers: string[]) {
	const { key } = await createKey({ servers, disclosure: "code" });
	const { client } = await connectClient("/mcp", key);
	const run = async (code: string, timeoutMs?: number) =>
		(await client.callTool({
			name: "execute_code",
			arguments: { code, ...(timeoutMs !== undefined ? { timeoutMs } : {}) },
		})) as ProgramAnswer;
	return { client, run };
}

/** A key in code mode for `server`, under a confirm policy on its `add` (removed after the test). */
async function codeKeyConfirmingAdd(server: string) {
	const policy = uniqueName("policy");
	const put = await admin("PUT", `/policies/${policy}`, {
		expression: 'tool.name == "add"',
		effect: "confirm",
		applies: { servers: [server] },
	});
	expect(put.status).toBe(201);
	policies.push(policy);
	return createKey({ servers: [server], disclosure: "code" });
}

/** An execute_code whose program returns the sum of `server`'s add of `a` and 2, or the message of what that call threw. */
function addOrMessage(server: string, a: number) {
	return {
		name: "execute_code",
		arguments: {
			code: `try { return (await codemode.${server.replaceAll("-", "_")}__add({ a: ${a}, b: 2 })).sum; } catch (error) { return error.message; }`,
		},
	};
}

/** The tools the upstream `which` was called with, in order, by the calls whose arguments hold one of `marks`. */
async function callsNaming(which: "alpha" | "beta", marks: string[]): Promise<unknown[]> {
	return (await upstreamLog(which))
		.filter((entry) => {
			const args = JSON.stringify(entry.body?.params?.arguments ?? {});
			return entry.body?.method === "tools/call" && marks.some((mark) => args.includes(mark));
		})
		.map((entry) => entry.body?.params?.name);
}

describe("code mode", () => {
	it("lists search_tools and execute_code, whose description carries the calling convention and the typed API of a small catalog", async () => {
		const beta = await registerServer("beta");
		const { client } = await codeClient([beta]);
		const { tools } = await client.listTools();
		expect(tools.map((tool) => tool.name)).toEqual(["search_tools", "execute_code"]);
		const description = tools[1]?.description ?? "";
		expect(description).toContain("await codemode.<tool name>(arguments)");
		expect(description).toContain(`${beta.replaceAll("-", "_")}__add: (input:`);
		await client.close();
	});

	it("lists the tools alwaysList names after the gateway's two", async () => {
		const beta = await registerServer("beta");
		const { key } = await createKey({ servers: [beta], disclosure: "code", alwaysList: [`${beta}__echo`] });
		const { client } = await connectClient("/mcp", key);
		const { tools } = await client.listTools();
		expect(tools.map((tool) => tool.name)).toEqual(["search_tools", "execute_code", `${beta}__echo`]);
		await client.close();
	});

	it("search_tools gives each match its TypeScript signature", async () => {
		const beta = await registerServer("beta");
		const { client } = await codeClient([beta]);
		const found = (await client.callTool({ name: "search_tools", arguments: { query: "adds two numbers" } })) as {
			structuredContent?: { tools: Array<{ name: string; signature?: string }> };
		};
		const add = (found.structuredContent?.tools ?? []).find((tool) => tool.name === `${beta}__add`);
		expect(add?.signature).toContain("a: number;");
		await client.close();
	});

	it("a program calls two tools and combines their results; the upstream gets exactly those two calls", async () => {
		const beta = await registerServer("beta");
		const { client, run } = await codeClient([beta]);
		const api = beta.replaceAll("-", "_");
		const a = uniqueNumber();
		const text = `code-${a}`;
		const answer = await run(`
			const sum = await codemode.${api}__add({ a: ${a}, b: 2 });
			const echoed = await codemode.${api}__echo({ text: "${text}" });
			console.log("sum is", sum.sum);
			return { total: sum.sum + 1, echoed };
		`);
		expect(answer.isError).not.toBe(true);
		expect(answer.structuredContent).toEqual({ result: { total: a + 3, echoed: text }, logs: [`sum is ${a + 2}`] });
		expect(await toolCallsOf("beta", "add", { a, b: 2 })).toHaveLength(1);
		expect(await toolCallsOf("beta", "echo", { text })).toHaveLength(1);
		await client.close();
	});

	it("each inner call is accounted as a tool_call event of its own, within execute_code, beside the program's own", async () => {
		const beta = await registerServer("beta");
		const { client, run } = await codeClient([beta]);
		const log = vi.spyOn(console, "log");
		const a = uniqueNumber();
		const text = `accounted-${a}`;
		await run(`
			await codemode.${beta.replaceAll("-", "_")}__add({ a: ${a}, b: 1 });
			return await codemode.${beta.replaceAll("-", "_")}__echo({ text: "${text}" });
		`);
		const events = () =>
			log.mock.calls
				.map(([line]) =>
					typeof line === "string" && line.startsWith('{"event":"tool_call"') ? JSON.parse(line) : null,
				)
				.filter((entry) => entry !== null);
		const program = await eventually(() => events().find((entry) => entry.tool === "execute_code"));
		const inner = events().filter((entry) => entry.within === "execute_code");
		expect(program).toMatchObject({ tool: "execute_code", outcome: "ok" });
		expect(program.within).toBeUndefined();
		expect(inner).toEqual([
			expect.objectContaining({ server: beta, tool: `${beta}__add`, tool_real: "add", outcome: "ok" }),
			expect.objectContaining({ server: beta, tool: `${beta}__echo`, tool_real: "echo", outcome: "ok" }),
		]);
		expect(inner[0].principal).toEqual(program.principal);
		await client.close();
	});

	it("an inner call's progress reaches the client on the execute_code call, under its own token", async () => {
		// delta answers on an SSE stream, where progress can travel (beta answers plain JSON).
		const delta = await registerServer("delta");
		const { client } = await codeClient([delta]);
		const seen: number[] = [];
		const result = await client.callTool(
			{
				name: "execute_code",
				arguments: { code: `return await codemode.${delta.replaceAll("-", "_")}__progress({ steps: 3 });` },
			},
			CallToolResultSchema,
			{ onprogress: (progress) => seen.push(progress.progress) },
		);
		expect(result.structuredContent).toEqual({ result: "done in 3 steps", logs: [] });
		expect(seen).toEqual([1, 2, 3]);
		await client.close();
	});

	it("an upstream's elicitation during an inner call reaches the client, and its answer reaches the upstream", async () => {
		const delta = await registerServer("delta");
		const { key } = await createKey({ servers: [delta], disclosure: "code" });
		const { client } = await connectClient("/mcp", key, {
			capabilities: { elicitation: { form: {} } },
			setup: (peer) =>
				peer.setRequestHandler(ElicitRequestSchema, async (request) => ({
					action: "accept",
					content: { answer: `yes to ${request.params.message}` },
				})),
		});
		const result = await client.callTool({
			name: "execute_code",
			arguments: { code: `return await codemode.${delta.replaceAll("-", "_")}__ask_user({});` },
		});
		expect(result.structuredContent).toEqual({ result: "delta got accept: yes to delta needs an answer", logs: [] });
		await client.close();
	});

	it("a confirm policy asks the client before an inner call is sent: declined, it throws and nothing reaches the upstream; accepted, it is sent", async () => {
		const beta = await registerServer("beta");
		const { key } = await codeKeyConfirmingAdd(beta);
		const asked: string[] = [];
		const confirming = async (action: "accept" | "decline") => {
			const { client } = await connectClient("/mcp", key, {
				capabilities: { elicitation: { form: {} } },
				setup: (peer) =>
					peer.setRequestHandler(ElicitRequestSchema, async (request) => {
						asked.push(request.params.message);
						return action === "accept" ? { action, content: { confirm: true } } : { action };
					}),
			});
			return client;
		};
		const program = (a: number) => addOrMessage(beta, a);
		const declining = await confirming("decline");
		const declined = uniqueNumber();
		const refused = (await declining.callTool(program(declined))) as ProgramAnswer;
		expect(String(refused.structuredContent?.result)).toMatch(/was not confirmed, so the gateway did not send it/);
		expect(await toolCallsOf("beta", "add", { a: declined, b: 2 })).toEqual([]);
		await declining.close();

		const accepting = await confirming("accept");
		const accepted = uniqueNumber();
		const answered = (await accepting.callTool(program(accepted))) as ProgramAnswer;
		expect(answered.structuredContent?.result).toBe(accepted + 2);
		expect(await toolCallsOf("beta", "add", { a: accepted, b: 2 })).toHaveLength(1);
		expect(asked).toHaveLength(2);
		expect(asked[0]).toContain("add");
		await accepting.close();
	});

	it("a tool a policy denies throws inside the program with the sentence its direct call gets, and never reaches the upstream", async () => {
		const beta = await registerServer("beta");
		const policy = uniqueName("policy");
		const response = await admin("PUT", `/policies/${policy}`, {
			expression: 'tool.name == "add"',
			effect: "deny",
			applies: { servers: [beta] },
		});
		expect(response.status).toBe(201);
		policies.push(policy);
		const { client, run } = await codeClient([beta]);
		const a = uniqueNumber();
		const answer = await run(`
			try { await codemode.${beta.replaceAll("-", "_")}__add({ a: ${a}, b: 1 }); return "called"; }
			catch (error) { return error.message; }
		`);
		const direct = await client.callTool({ name: `${beta}__add`, arguments: { a, b: 1 } }).catch((e: unknown) => e);
		expect(String(direct)).toContain(`policy '${policy}'`);
		// The SDK's error reads "MCP error <code>: <message>"; the program got the message itself.
		expect(String(direct)).toContain(String(answer.structuredContent?.result));
		expect(answer.structuredContent?.result).toContain(`policy '${policy}'`);
		expect(await toolCallsOf("beta", "add", { a, b: 1 })).toEqual([]);
		await client.close();
	});

	it("fetch inside a program is stopped with a sentence", async () => {
		const beta = await registerServer("beta");
		const { client, run } = await codeClient([beta]);
		const answer = await run(`const r = await fetch("${BASE}/healthz"); return r.status;`);
		expect(answer.isError).toBe(true);
		expect(answer.content[0]?.text).toContain("not permitted to access the internet");
		await client.close();
	});

	it("a loop that never ends is stopped by the program's bound with a sentence", async () => {
		const beta = await registerServer("beta");
		const { client, run } = await codeClient([beta]);
		const answer = await run("let n = 0; while (true) { n++; }");
		expect(answer.isError).toBe(true);
		expect(answer.content[0]?.text).toContain("is there a loop that never ends?");
		await client.close();
	});

	it("a program that waits longer than its timeoutMs is stopped with a sentence", async () => {
		const beta = await registerServer("beta");
		const { client, run } = await codeClient([beta]);
		const answer = await run("await new Promise(() => {});", 200);
		expect(answer.isError).toBe(true);
		expect(answer.content[0]?.text).toBe(
			"The program was stopped after 200 ms, its time bound: make it do less, or pass a larger timeoutMs.",
		);
		await client.close();
	});

	it("a thrown error is a tool error with its message, beside what the program logged", async () => {
		const beta = await registerServer("beta");
		const { client, run } = await codeClient([beta]);
		const answer = await run('console.log("before"); throw new Error("no such issue");');
		expect(answer).toMatchObject({
			isError: true,
			content: [
				{ type: "text", text: "no such issue (thrown at line 1, column 30 of the program)" },
				{ type: "text", text: "console:\nbefore" },
			],
		});
		await client.close();
	});

	it("a thrown error names the line and column where the program threw it, counted in the program as written, past loops the guard rewrote", async () => {
		const beta = await registerServer("beta");
		const { client, run } = await codeClient([beta]);
		const answer = await run(
			[
				"",
				"  let total = 0;",
				"  for (let i = 0; i < 3; i++) total += i;",
				'  if (total === 3) { const items = [1, 2].map((n) => n * 2); throw new Error("total is " + total); }',
				"  return total;",
			].join("\n"),
		);
		expect(answer.isError).toBe(true);
		expect(answer.content[0]?.text).toBe("total is 3 (thrown at line 4, column 68 of the program)");
		await client.close();
	});

	it("an inner call's error the program does not catch names the line of its call", async () => {
		const beta = await registerServer("beta");
		const { client, run } = await codeClient([beta]);
		const answer = await run("const a = 1;\nawait codemode.nowhere__nothing({});\nreturn a;");
		expect(answer.isError).toBe(true);
		expect(answer.content[0]?.text).toMatch(
			/^Unknown tool: 'nowhere__nothing' is not offered by this endpoint\..* \(thrown at line 2, column \d+ of the program\)$/,
		);
		await client.close();
	});

	it("the 51st inner call of a program throws: at most 50 calls reach the upstream", async () => {
		const beta = await registerServer("beta");
		const { client, run } = await codeClient([beta]);
		const a = uniqueNumber();
		const answer = await run(`
			let calls = 0;
			try { for (let i = 0; i < 60; i++) { await codemode.${beta.replaceAll("-", "_")}__add({ a: ${a}, b: 0 }); calls++; } }
			catch (error) { return { calls, error: error.message }; }
		`);
		expect(answer.structuredContent?.result).toEqual({
			calls: 50,
			error: "This program made more than 50 tool calls, the most one program may make.",
		});
		expect(await toolCallsOf("beta", "add", { a, b: 0 })).toHaveLength(50);
		await client.close();
	});

	it("a tool the endpoint does not offer throws inside the program with the sentence its direct call gets", async () => {
		const beta = await registerServer("beta");
		const { client, run } = await codeClient([beta]);
		const answer = await run("try { await codemode.nowhere__nothing({}); } catch (error) { return error.message; }");
		const direct = await client.callTool({ name: "nowhere__nothing", arguments: {} }).catch(String);
		expect(answer.structuredContent?.result).toContain(
			"Unknown tool: 'nowhere__nothing' is not offered by this endpoint.",
		);
		expect(direct).toContain(String(answer.structuredContent?.result));
		await client.close();
	});

	it("a returned value larger than the bound is cut, still JSON, with a marker", async () => {
		const beta = await registerServer("beta");
		const { client, run } = await codeClient([beta]);
		const answer = await run('return { text: "x".repeat(300000) };');
		const text = answer.content[0]?.text ?? "";
		expect(text.length).toBeLessThan(110_000);
		expect(text).toContain("--- TRUNCATED ---");
		expect(JSON.parse(text)).toHaveProperty("text");
		await client.close();
	});

	it("execute_code without code is invalid params with a sentence, and nothing runs", async () => {
		const beta = await registerServer("beta");
		const { client } = await codeClient([beta]);
		const refused = await client.callTool({ name: "execute_code", arguments: { code: "" } }).catch(String);
		expect(refused).toContain("Invalid params: execute_code: code must be the program; it is empty.");
		const slow = await client
			.callTool({ name: "execute_code", arguments: { code: "return 1;", timeoutMs: 60_000 } })
			.catch(String);
		expect(slow).toContain("timeoutMs must be between 1 and 30000");
		await client.close();
	});

	it("execute_code asked as a task by a 2025-11-25 task client is answered at once with the task; tasks/result gives the program's combined result, and the upstream gets exactly its inner calls", async () => {
		const alpha = await registerServer("alpha");
		const { key } = await createKey({ servers: [alpha], disclosure: "code" });
		const { client } = await connectClient("/mcp", key, { capabilities: { tasks: { list: {}, cancel: {} } } });
		const listed = (await client.listTools()).tools.find((tool) => tool.name === "execute_code");
		expect(listed?.execution?.taskSupport).toBe("optional");
		const gate = upstreamGate("alpha");
		const api = alpha.replaceAll("-", "_");
		const a = uniqueNumber();
		const seen: string[] = [];
		let answer: unknown;
		for await (const message of client.experimental.tasks.callToolStream({
			name: "execute_code",
			arguments: {
				code: `
					const passed = await codemode.${api}__gate({ name: "${gate.name}" });
					const sum = await codemode.${api}__add({ a: ${a}, b: 3 });
					return { passed, sum: sum.sum };
				`,
			},
		})) {
			seen.push(message.type);
			// The task is created before the program's first call is let through: the program runs after the answer.
			if (message.type === "taskCreated") {
				await gate.arrived();
				await gate.release();
			}
			if (message.type === "result") answer = message.result;
			if (message.type === "error") throw message.error;
		}
		expect(seen[0]).toBe("taskCreated");
		expect(seen.at(-1)).toBe("result");
		expect(answer).toMatchObject({
			structuredContent: { result: { passed: `gate ${gate.name} passed`, sum: a + 3 }, logs: [] },
		});
		// Every call of this program the upstream saw, in order: its two inner calls, once each, and nothing else.
		expect(await callsNaming("alpha", [gate.name, String(a)])).toEqual(["gate", "add"]);
		await client.close();
	});

	it("a held program's two inner calls are accounted exactly once, as two tool_call events within execute_code, however often tasks/result is read", async () => {
		const alpha = await registerServer("alpha");
		const { key } = await createKey({ servers: [alpha], disclosure: "code" });
		const { send } = await openWith("/mcp", key);
		const log = vi.spyOn(console, "log");
		const api = alpha.replaceAll("-", "_");
		const a = uniqueNumber();
		const created = createdTask(
			await send(
				heldProgram(`const sum = await codemode.${api}__add({ a: ${a}, b: 6 });
			return await codemode.${api}__echo({ text: String(sum.sum) });`),
			),
		);
		const first = await send(taskRequest(3, "tasks/result", created.taskId));
		const second = await send(taskRequest(4, "tasks/result", created.taskId));
		expect(first.result).toMatchObject({ structuredContent: { logs: [] } });
		expect(second.result).toEqual(first.result);
		// The accounts are the gateway's: the client's result carries none.
		expect(JSON.stringify(first.result)).not.toContain("mcp-edge-gateway/inner-calls");
		const events = () => toolCallEvents(log).filter((entry) => entry.endpoint === "/mcp");
		const program = await eventually(() => events().find((entry) => entry.tool === "execute_code"));
		const inner = events().filter((entry) => entry.server === alpha);
		expect(inner).toEqual([
			expect.objectContaining({ tool: `${alpha}__add`, tool_real: "add", outcome: "ok", within: "execute_code" }),
			expect.objectContaining({ tool: `${alpha}__echo`, tool_real: "echo", outcome: "ok", within: "execute_code" }),
		]);
		expect(inner[0]?.principal).toEqual(program.principal);
		expect(inner[0]?.era).toBe("2025");
	});

	it("tasks/cancel of a held program cancels its inner call in flight upstream, and its later inner calls throw and are never sent; the call it made is accounted", async () => {
		const alpha = await registerServer("alpha");
		const { key } = await createKey({ servers: [alpha], disclosure: "code" });
		const { sessionId, send } = await openWith("/mcp", key);
		const log = vi.spyOn(console, "log");
		const gate = upstreamGate("alpha");
		const api = alpha.replaceAll("-", "_");
		const a = uniqueNumber();
		const created = createdTask(
			await send(
				heldProgram(`try { await codemode.${api}__gate({ name: "${gate.name}" }); } catch {}
			return await codemode.${api}__add({ a: ${a}, b: 5 });`),
			),
		);
		await gate.arrived();
		const cancelled = await send(taskRequest(3, "tasks/cancel", created.taskId));
		expect(cancelled.result).toMatchObject({ taskId: created.taskId, status: "cancelled" });
		await eventually(async () => (await gate.status()).cancelled === 1, "the inner call cancelled at the gate");
		// The program has ended once the session has nothing in flight: its call after the cancel was never sent.
		const stub = await sessionObject(sessionId);
		await eventually(() => runInDurableObject(stub, (instance: SessionDO) => instance.stats().inFlight === 0));
		expect((await gate.status()).passed).toBe(0);
		expect(await toolCallsOf("alpha", "add", { a, b: 5 })).toEqual([]);
		// The one inner call it made is accounted, once; the call never sent is not.
		const inner = await eventually(() => {
			const found = toolCallEvents(log).filter((entry) => entry.server === alpha && entry.within === "execute_code");
			return found.length > 0 ? found : undefined;
		});
		expect(inner).toEqual([expect.objectContaining({ tool: `${alpha}__gate`, tool_real: "gate" })]);
	});

	it("a client's notifications/cancelled of execute_code cancels its inner call in flight upstream; its next inner call throws inside the program and is never sent", async () => {
		const beta = await registerServer("beta");
		const { key } = await createKey({ servers: [beta], disclosure: "code" });
		const sessionId = await openSession("/mcp", key);
		const gate = upstreamGate("beta");
		const api = beta.replaceAll("-", "_");
		const a = uniqueNumber();
		const id = `cancel-${a}`;
		const pending = rpc("/mcp", key, sessionId, {
			jsonrpc: "2.0",
			id,
			method: "tools/call",
			params: {
				name: "execute_code",
				arguments: {
					code: `try { await codemode.${api}__gate({ name: "${gate.name}" }); } catch {}
						return await codemode.${api}__add({ a: ${a}, b: 6 });`,
				},
			},
		});
		await gate.arrived();
		const cancel = await rpc("/mcp", key, sessionId, {
			jsonrpc: "2.0",
			method: "notifications/cancelled",
			params: { requestId: id, reason: "user" },
		});
		expect(cancel.status).toBe(202);
		const answer = await readReply(await pending);
		expect(answer.result).toMatchObject({
			isError: true,
			content: [
				{ type: "text", text: expect.stringContaining(`The program was cancelled: ${beta}__add was not called.`) },
			],
		});
		await eventually(async () => (await gate.status()).cancelled === 1, "the inner call cancelled at the gate");
		expect((await gate.status()).passed).toBe(0);
		expect(await toolCallsOf("beta", "add", { a, b: 6 })).toEqual([]);
	});

	it("execute_code asked as a task with bad arguments is invalid params with a sentence, and no task is held", async () => {
		const beta = await registerServer("beta");
		const { key } = await createKey({ servers: [beta], disclosure: "code" });
		const { send } = await openWith("/mcp", key);
		const refused = await send({
			jsonrpc: "2.0",
			id: 2,
			method: "tools/call",
			params: { name: "execute_code", arguments: { code: "" }, task: {} },
		});
		expect(refused.error?.code).toBe(-32602);
		expect(refused.error?.message).toContain("execute_code: code must be the program; it is empty.");
		const listed = await send({ jsonrpc: "2.0", id: 3, method: "tasks/list", params: {} });
		expect(listed.result).toEqual({ tasks: [] });
	});

	it("a program that is not JavaScript is refused with the parser's sentence, and nothing runs", async () => {
		const beta = await registerServer("beta");
		const { client, run } = await codeClient([beta]);
		const answer = await run("return (;");
		expect(answer.isError).toBe(true);
		expect(answer.content[0]?.text).toMatch(/^The program is not valid JavaScript: .*\(\d+:\d+\)\.$/);
		await client.close();
	});
});

describe("code mode on a virtual server, with a 2026-07-28 client", () => {
	it("a program calls two members' tools by the virtual server's names and combines them; each upstream gets its one call", async () => {
		const beta = await registerServer("beta");
		const delta = await registerServer("delta");
		const name = uniqueName("coding");
		const put = await admin("PUT", `/virtual-servers/${name}`, { servers: [beta, delta], disclosure: "code" });
		expect(put.status).toBe(201);
		const { key } = await createKey({ servers: [beta, delta] });
		const client = await connectModernClient(`/mcp/${name}`, key);
		const listed = await client.listTools();
		expect(listed.tools.map((tool) => tool.name)).toEqual(["search_tools", "execute_code"]);
		const a = uniqueNumber();
		const text = `virtual-${a}`;
		const answer = (await client.callTool({
			name: "execute_code",
			arguments: {
				code: `
					const one = await codemode["${beta}__add"]({ a: ${a}, b: 1 });
					const two = await codemode.${delta.replaceAll("-", "_")}__echo({ text: "${text}" });
					return [one.sum, two];
				`,
			},
		})) as ProgramAnswer;
		expect(answer.isError).not.toBe(true);
		expect(answer.structuredContent).toEqual({ result: [a + 1, text], logs: [] });
		expect(await toolCallsOf("beta", "add", { a, b: 1 })).toHaveLength(1);
		expect(await toolCallsOf("delta", "echo", { text })).toHaveLength(1);
		await client.close();
	});
});

describe("code mode with a 2026-07-28 client on /mcp", () => {
	it("an upstream's elicitation during an inner call comes back as input_required, and the retry's answer reaches the upstream; the program ran once", async () => {
		const delta = await registerServer("delta");
		const { key } = await createKey({ servers: [delta], disclosure: "code" });
		const client = await connectModernClient("/mcp", key, { elicitation: { form: {} } });
		client.setRequestHandler("elicitation/create", async (request) => ({
			action: "accept",
			content: { answer: `yes to ${request.params.message}` },
		}));
		const result = (await client.callTool({
			name: "execute_code",
			arguments: { code: `return await codemode.${delta.replaceAll("-", "_")}__ask_user({});` },
		})) as ProgramAnswer & { _meta?: Record<string, unknown> };
		expect(result.structuredContent).toEqual({ result: "delta got accept: yes to delta needs an answer", logs: [] });
		// The answer's own account of its inner calls: one, answered, not a second run of the program.
		expect(result._meta?.["mcp-edge-gateway/inner-calls"]).toEqual([
			expect.objectContaining({ tool: `${delta}__ask_user`, outcome: "ok" }),
		]);
		await client.close();
	});
});

describe("code mode with a 2026-07-28 client that declares the tasks extension", () => {
	const envelope = {
		...ENVELOPE,
		"io.modelcontextprotocol/clientCapabilities": { extensions: { "io.modelcontextprotocol/tasks": {} } },
	};
	const post = async (key: string, id: string, method: string, params: Record<string, unknown>) => {
		const name = params.name ?? params.taskId;
		const response = await modernPost(
			"/mcp",
			key,
			{ id, method, params: { ...params, _meta: envelope } },
			typeof name === "string" ? { "mcp-name": name } : {},
		);
		return (await response.json()) as { result?: Record<string, unknown>; error?: { message: string } };
	};

	/** A key in code mode for `server`, and the session object a quick program made, its time manual. */
	const quickSession = async (server: string) => {
		const { key } = await createKey({ servers: [server], disclosure: "code" });
		const quick = await objectMadeBy(() =>
			post(key, "quick", "tools/call", { name: "execute_code", arguments: { code: "return 1;" } }),
		);
		return { key, quick };
	};

	/**
	 * `code` run by execute_code on the session `quick` made: once its inner call waits at `gate`, the
	 * promotion delay passes, and the answer is the task's creation.
	 */
	const promotedProgram = async (
		key: string,
		quick: Awaited<ReturnType<typeof quickSession>>["quick"],
		gate: { arrived(): Promise<unknown> },
		code: string,
	) => {
		const pending = post(key, "long", "tools/call", { name: "execute_code", arguments: { code } });
		await gate.arrived();
		await eventually(() => quick.timers.count > 0);
		quick.clock.advance(5_000);
		await runInDurableObject(quick.stub, () => quick.timers.runDue());
		return pending;
	};

	/** The task's `tasks/get` once it has completed. */
	const completed = (key: string, taskId: string) =>
		eventually(async () => {
			const got = await post(key, "get", "tasks/get", { taskId });
			return got.result?.status === "completed" ? got.result : undefined;
		});

	it("a program still running after the promotion delay becomes a task; tasks/get gives its combined result, and the upstream gets exactly its inner calls", async () => {
		const beta = await registerServer("beta");
		const { key, quick } = await quickSession(beta);
		expect(quick.made.result).toMatchObject({ resultType: "complete", structuredContent: { result: 1, logs: [] } });
		const gate = upstreamGate("beta");
		const api = beta.replaceAll("-", "_");
		const a = uniqueNumber();
		const created = await promotedProgram(
			key,
			quick,
			gate,
			`const passed = await codemode.${api}__gate({ name: "${gate.name}" });
					const sum = await codemode.${api}__add({ a: ${a}, b: 4 });
					return { passed, sum: sum.sum };`,
		);
		expect(created.result).toMatchObject({ resultType: "task", status: "working" });
		const taskId = String(created.result?.taskId);
		await gate.release();
		const done = await completed(key, taskId);
		expect(done.result).toMatchObject({
			structuredContent: { result: { passed: `gate ${gate.name} passed`, sum: a + 4 }, logs: [] },
		});
		expect(await callsNaming("beta", [gate.name, String(a)])).toEqual(["gate", "add"]);
	});

	it("a promoted program's two inner calls are accounted exactly once, as two tool_call events within execute_code, however often tasks/get is read", async () => {
		const beta = await registerServer("beta");
		const { key, quick } = await quickSession(beta);
		const log = vi.spyOn(console, "log");
		const gate = upstreamGate("beta");
		const api = beta.replaceAll("-", "_");
		const a = uniqueNumber();
		const created = await promotedProgram(
			key,
			quick,
			gate,
			`await codemode.${api}__gate({ name: "${gate.name}" });
					return await codemode.${api}__add({ a: ${a}, b: 7 });`,
		);
		const taskId = String(created.result?.taskId);
		await gate.release();
		const done = await completed(key, taskId);
		const again = await post(key, "again", "tasks/get", { taskId });
		expect(again.result?.result).toEqual(done.result);
		expect(JSON.stringify(done.result)).not.toContain("mcp-edge-gateway/inner-calls");
		const inner = toolCallEvents(log).filter((entry) => entry.server === beta && entry.within !== undefined);
		expect(inner).toEqual([
			expect.objectContaining({ tool: `${beta}__gate`, outcome: "ok", within: "execute_code", era: "2026-07-28" }),
			expect.objectContaining({ tool: `${beta}__add`, outcome: "ok", within: "execute_code", era: "2026-07-28" }),
		]);
	});
});

describe("code mode with a 2026-07-28 client confirming an inner call", () => {
	it("a confirm policy on an inner call asks through input_required: declined, it throws inside the program and nothing is sent; accepted, it is sent once", async () => {
		const beta = await registerServer("beta");
		const { key } = await codeKeyConfirmingAdd(beta);
		const asked: string[] = [];
		const confirming = async (action: "accept" | "decline") => {
			const client = await connectModernClient("/mcp", key, { elicitation: { form: {} } });
			client.setRequestHandler("elicitation/create", async (request) => {
				asked.push(String(request.params.message));
				return action === "accept" ? { action, content: { confirm: true } } : { action };
			});
			return client;
		};
		const program = (a: number) => addOrMessage(beta, a);
		const declining = await confirming("decline");
		const declined = uniqueNumber();
		const refused = (await declining.callTool(program(declined))) as ProgramAnswer;
		expect(refused.isError).not.toBe(true);
		expect(String(refused.structuredContent?.result)).toMatch(/was not confirmed, so the gateway did not send it/);
		expect(asked).toHaveLength(1);
		expect(asked[0]).toContain(`server '${beta}'`);
		expect(await toolCallsOf("beta", "add", { a: declined, b: 2 })).toEqual([]);
		await declining.close();

		const accepting = await confirming("accept");
		const accepted = uniqueNumber();
		const answered = (await accepting.callTool(program(accepted))) as ProgramAnswer;
		expect(answered.structuredContent?.result).toBe(accepted + 2);
		expect(asked).toHaveLength(2);
		expect(await toolCallsOf("beta", "add", { a: accepted, b: 2 })).toHaveLength(1);
		await accepting.close();
	});
});

describe("code mode's program guard", () => {
	it("puts a step at the start of every loop body and function body, single statements included", () => {
		expect(guardLoops("async () => { while (x) y(); for (;;) { z(); } const f = () => 1; }")).toBe(
			"async () => {__gatewayStep(); while (x) {__gatewayStep();y();} for (;;) {__gatewayStep(); z(); } const f = () => (__gatewayStep(), 1); }",
		);
	});
});

describe("code mode's place of a thrown error", () => {
	const at = (code: string, line: number, column: number) => {
		const normalized = normalizeCode(code);
		return writtenPosition(code, normalized, guardLoopsMapped(normalized), { line, column });
	};

	it("maps a place in the guarded program back to the program as written: past a fence, blank lines, a step and a returned last expression", () => {
		const code = "\n```js\nconst xs = [1];\nfor (const x of xs) y(x);\nz(xs)\n```\n";
		const normalized = normalizeCode(code);
		expect(normalized).toBe("async () => {\nconst xs = [1];\nfor (const x of xs) y(x);\nreturn (z(xs))\n}");
		// `y` on the loop's line, after the step the guard put before it.
		const guarded = guardLoopsMapped(normalized).code.split("\n")[2] ?? "";
		expect(at(code, 3, guarded.indexOf("y(x)") + 1)).toEqual({ line: 4, column: 21 });
		// `z`, after the `return (` normalizeCode put before the last expression.
		expect(at(code, 4, 9)).toEqual({ line: 5, column: 1 });
		expect(at("return 1;", 2, 8)).toEqual({ line: 1, column: 8 });
		// The function normalizeCode wraps a body in is not the program: no place there.
		expect(at("return 1;", 1, 1)).toBeNull();
	});
});

describe("code mode needs the Worker Loader binding", () => {
	it("a key in code mode is refused at creation with a sentence when the Worker has no LOADER binding, and nothing is created", async () => {
		const name = uniqueName("no-loader");
		const { LOADER: _loader, ...withoutLoader } = env;
		const response = await worker.fetch(
			new Request(`${BASE}/admin/keys`, {
				method: "POST",
				headers: { authorization: `Bearer ${TEST_ADMIN_BEARER}`, "content-type": "application/json" },
				body: JSON.stringify({ name, servers: [], disclosure: "code" }),
			}),
			withoutLoader,
			createExecutionContext(),
		);
		expect(response.status).toBe(400);
		expect(await response.text()).toContain('disclosure \\"code\\" runs programs through a Worker Loader binding');
		const keys = (await (await admin("GET", "/keys")).json()) as { keys: Array<{ name: string }> };
		expect(keys.keys.map((key) => key.name)).not.toContain(name);
	});

	it("a virtual server in code mode is refused at PUT with the same sentence when the Worker has no LOADER binding, and nothing is written", async () => {
		const beta = await registerServer("beta");
		const name = uniqueName("no-loader-vs");
		const { LOADER: _loader, ...withoutLoader } = env;
		const response = await worker.fetch(
			new Request(`${BASE}/admin/virtual-servers/${name}`, {
				method: "PUT",
				headers: { authorization: `Bearer ${TEST_ADMIN_BEARER}`, "content-type": "application/json" },
				body: JSON.stringify({ servers: [beta], disclosure: "code" }),
			}),
			withoutLoader,
			createExecutionContext(),
		);
		expect(response.status).toBe(400);
		expect(await response.text()).toContain('disclosure \\"code\\" runs programs through a Worker Loader binding');
		expect((await admin("GET", `/virtual-servers/${name}`)).status).toBe(404);
	});
});
