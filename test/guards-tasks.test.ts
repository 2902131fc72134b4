import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { admin, createKey, uniqueName } from "./support/gateway.ts";
import { ENVELOPE, modernPost } from "./support/modern.ts";
import { createdTask, openWith, taskRequest } from "./support/tasks.ts";
import { registerServer, toolCallsOf, upstreamLog } from "./support/upstreams.ts";

/**
 * A response guard and tasks an upstream would hold itself (decision 0130): a result read later
 * from the upstream's own task would pass no guard, so a server a guard may apply to has its
 * tasks held by the gateway, which reads the call's reply as any call's. The `tasking` (2025) and
 * `modernTasking` (2026-07-28) fixtures' `task_echo` answers the text it was given.
 */

const TASKS = "io.modelcontextprotocol/tasks";
const EMAIL = "ada.lovelace@example.com";
const PLANTED = `write to ${EMAIL} today`;
const REDACTED = "write to [redacted:email] today";

const made: string[] = [];
afterEach(async () => {
	for (const name of made.splice(0)) await admin("DELETE", `/guards/${name}`);
});

/** A response guard redacting e-mail addresses, on `server` only. */
async function redactEmailOn(server: string): Promise<void> {
	const name = uniqueName("task-guard");
	const body = { stage: "response", applies: { servers: [server] }, detect: ["email"], action: "redact" };
	const response = await admin("PUT", `/guards/${name}`, body);
	if (response.status !== 201) throw new Error(`guard: ${response.status} ${await response.text()}`);
	made.push(name);
}

describe("2025-11-25: a task-capable tool on a server a response guard applies to", () => {
	it("without a guard the upstream holds the task (an up. id); with one the gateway holds it, sends a plain call, and tasks/result answers the redacted result", async () => {
		const server = await registerServer("tasking");
		const { key } = await createKey({ servers: [server] });
		const path = `/mcp/${server}`;
		const unguarded = await openWith(path, key);
		const before = `${PLANTED} ${crypto.randomUUID()}`;
		const theirs = createdTask(
			await unguarded.send({
				jsonrpc: "2.0",
				id: 1,
				method: "tools/call",
				params: { name: "task_echo", arguments: { text: before }, task: {} },
			}),
		);
		expect(theirs.taskId.startsWith("up.")).toBe(true);

		await redactEmailOn(server);
		const { send } = await openWith(path, key);
		const text = `${PLANTED} ${crypto.randomUUID()}`;
		const asked = await send({
			jsonrpc: "2.0",
			id: 2,
			method: "tools/call",
			params: { name: "task_echo", arguments: { text }, task: {} },
		});
		const task = createdTask(asked);
		expect(task.taskId.startsWith("up.")).toBe(false);
		const result = (await send(taskRequest(3, "tasks/result", task.taskId))).result as CallToolResult;
		expect(result.content).toEqual([{ type: "text", text: text.replace(PLANTED, REDACTED) }]);
		expect(JSON.stringify(result)).not.toContain(EMAIL);
		// The upstream got one plain call (no params.task) and was never asked about a task of this call.
		const calls = await toolCallsOf("tasking", "task_echo", { text });
		expect(calls).toHaveLength(1);
		expect(calls[0]?.body?.params?.task).toBeUndefined();
		const sessionRequests = (await upstreamLog("tasking")).filter((entry) => entry.sessionId === calls[0]?.sessionId);
		expect(sessionRequests.filter((entry) => String(entry.body?.method).startsWith("tasks/"))).toEqual([]);
	});
});

describe("2026-07-28: a server with the tasks extension that a response guard applies to", () => {
	const tasking = { ...ENVELOPE, "io.modelcontextprotocol/clientCapabilities": { extensions: { [TASKS]: {} } } };
	const echo = (id: string, text: string) => ({
		id,
		method: "tools/call",
		params: { name: "task_echo", arguments: { text }, _meta: tasking },
	});

	it("without a guard the upstream makes the task (an up. id); with one the gateway holds the call, the upstream is never offered the extension, and the result is redacted", async () => {
		const server = await registerServer("modernTasking");
		const { key } = await createKey({ servers: [server] });
		const path = `/mcp/${server}`;
		const headers = { "mcp-name": "task_echo" };
		const theirs = (await (await modernPost(path, key, echo("a", PLANTED), headers)).json()) as {
			result?: Record<string, unknown>;
		};
		expect(theirs.result).toMatchObject({ resultType: "task" });
		expect(String(theirs.result?.taskId).startsWith("up.")).toBe(true);

		await redactEmailOn(server);
		const text = `${PLANTED} ${crypto.randomUUID()}`;
		const reply = (await (await modernPost(path, key, echo("b", text), headers)).json()) as {
			result?: Record<string, unknown>;
		};
		expect(reply.result).toMatchObject({
			resultType: "complete",
			content: [{ type: "text", text: text.replace(PLANTED, REDACTED) }],
		});
		expect(JSON.stringify(reply)).not.toContain(EMAIL);
		// The call reached the upstream once, from a client that does not declare the tasks extension: no task of it there.
		const calls = (await upstreamLog("modernTasking")).filter(
			(entry) => entry.body?.method === "tools/call" && JSON.stringify(entry.body).includes(text),
		);
		expect(calls).toHaveLength(1);
		expect(JSON.stringify(calls[0]?.body)).not.toContain(TASKS);
	});
});
