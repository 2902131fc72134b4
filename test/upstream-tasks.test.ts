import { describe, expect, it } from "vitest";
import { eventually } from "./support/eventually.ts";
import type { Gate } from "./support/gates.ts";
import { createKey, gatewayFetch, mcpHeaders } from "./support/gateway.ts";
import { eventReader } from "./support/sse-events.ts";
import { createdTask, openWith, taskCall, taskRequest } from "./support/tasks.ts";
import { registerServer, toolCallsOf, upstreamGate, upstreamLog } from "./support/upstreams.ts";

/**
 * Tasks a 2025-11-25 upstream holds itself (the `tasking` fixture: `task_gate` requires a task,
 * `maybe_task_gate` takes one), passed through the gateway's sessions under ids of its own.
 */

/** A task client's session on `path`. */
const taskSession = (path: string, key: string) => openWith(path, key);
const request = taskRequest;

/** A gate tool's call as a task with a one-minute ttl. */
const upstreamTaskCall = (gate: Gate, id: number, tool: string) => taskCall(gate, id, tool, 60_000);

describe("tasks a 2025-11-25 upstream holds itself", () => {
	for (const endpoint of ["transparent", "aggregate"] as const) {
		it(`${endpoint}: a task-required tool's call goes to the upstream as a task; its task reaches the client under the gateway's id, and tasks/get and tasks/result follow it there`, async () => {
			const server = await registerServer("tasking");
			const { key } = await createKey({ servers: [server] });
			const path = endpoint === "transparent" ? `/mcp/${server}` : "/mcp";
			const tool = endpoint === "transparent" ? "task_gate" : `${server}__task_gate`;
			const { send } = await taskSession(path, key);
			if (endpoint === "aggregate") await send({ jsonrpc: "2.0", id: 0, method: "tools/list" });
			const gate = upstreamGate("tasking");
			const task = createdTask(await send(upstreamTaskCall(gate, 1, tool)));
			expect(task.taskId.startsWith("up.")).toBe(true);
			// The upstream got the call as a task, once, and holds it.
			const calls = await toolCallsOf("tasking", "task_gate", { name: gate.name });
			expect(calls).toHaveLength(1);
			expect(calls[0]?.body?.params?.task).toEqual({ ttl: 60_000 });
			await gate.arrived();
			expect((await send(request(2, "tasks/get", task.taskId))).result).toMatchObject({
				taskId: task.taskId,
				status: "working",
			});
			await gate.release();
			await eventually(async () => (await send(request(3, "tasks/get", task.taskId))).result?.status === "completed");
			const answered = await send(request(4, "tasks/result", task.taskId));
			expect(answered.result).toMatchObject({ content: [{ type: "text", text: expect.stringContaining(gate.name) }] });
			// The upstream was asked under its own id, which the client never sees.
			const asked = (await upstreamLog("tasking")).filter(
				(entry) => entry.sessionId === calls[0]?.sessionId && entry.body?.method === "tasks/result",
			);
			const upstreamTaskId = String(asked[0]?.body?.params?.taskId);
			expect(asked).toHaveLength(1);
			expect(upstreamTaskId).not.toBe(task.taskId);
			expect(JSON.stringify(answered)).not.toContain(upstreamTaskId);
			expect(answered.result?._meta).toEqual({ "io.modelcontextprotocol/related-task": { taskId: task.taskId } });
		});
	}

	for (const endpoint of ["transparent", "aggregate"] as const) {
		it(`${endpoint}: tasks/list lists the session's own tasks and then its upstream's, each under the gateway's id`, async () => {
			const server = await registerServer("tasking");
			const { key } = await createKey({ servers: [server] });
			const path = endpoint === "transparent" ? `/mcp/${server}` : "/mcp";
			const named = (tool: string) => (endpoint === "transparent" ? tool : `${server}__${tool}`);
			const { send } = await taskSession(path, key);
			if (endpoint === "aggregate") await send({ jsonrpc: "2.0", id: 0, method: "tools/list" });
			// `gate` runs synchronously upstream, so the session holds its task; `task_gate` is the upstream's.
			const heldGate = upstreamGate("tasking");
			const held = createdTask(await send(upstreamTaskCall(heldGate, 1, named("gate"))));
			const theirGate = upstreamGate("tasking");
			const theirs = createdTask(await send(upstreamTaskCall(theirGate, 2, named("task_gate"))));
			expect(held.taskId.startsWith("up.")).toBe(false);
			expect(theirs.taskId.startsWith("up.")).toBe(true);
			const listed = await send({ jsonrpc: "2.0", id: 3, method: "tasks/list" });
			const ids = ((listed.result?.tasks ?? []) as Array<{ taskId: string }>).map((task) => task.taskId);
			expect(ids).toEqual([held.taskId, theirs.taskId]);
			expect(listed.result?.nextCursor).toBeUndefined();
		});
	}

	for (const endpoint of ["transparent", "aggregate"] as const) {
		it(`${endpoint}: the upstream's notifications/tasks/status reach the client's listening stream under the gateway's id`, async () => {
			const server = await registerServer("tasking");
			const { key } = await createKey({ servers: [server] });
			const path = endpoint === "transparent" ? `/mcp/${server}` : "/mcp";
			const tool = endpoint === "transparent" ? "task_gate" : `${server}__task_gate`;
			const { sessionId, send } = await taskSession(path, key);
			if (endpoint === "aggregate") await send({ jsonrpc: "2.0", id: 0, method: "tools/list" });
			const listening = await gatewayFetch(path, {
				method: "GET",
				headers: mcpHeaders(key, sessionId, { accept: "text/event-stream" }),
			});
			expect(listening.status).toBe(200);
			const events = eventReader<{ method?: string; params?: { taskId?: string; status?: string } }>(
				listening.body as ReadableStream<Uint8Array>,
			);
			// The gateway listens on the upstream's GET stream before the task changes.
			await eventually(
				async () =>
					(await upstreamLog("tasking")).some(
						(entry) => entry.method === "GET" && entry.authorization === null && entry.sessionId !== null,
					),
				"the upstream's GET stream listened to",
			);
			const gate = upstreamGate("tasking");
			const task = createdTask(await send(upstreamTaskCall(gate, 1, tool)));
			await gate.arrived();
			await gate.release();
			for (;;) {
				const event = await events.next();
				if (event.method !== "notifications/tasks/status") continue;
				expect(event.params?.taskId).toBe(task.taskId);
				if (event.params?.status === "completed") break;
			}
			await events.cancel();
		});
	}

	it("tasks/cancel of an upstream's task reaches the upstream, which stops it", async () => {
		const server = await registerServer("tasking");
		const { key } = await createKey({ servers: [server] });
		const { send } = await taskSession(`/mcp/${server}`, key);
		const gate = upstreamGate("tasking");
		const task = createdTask(await send(upstreamTaskCall(gate, 1, "task_gate")));
		await gate.arrived();
		const cancelled = await send(request(2, "tasks/cancel", task.taskId));
		expect(cancelled.result).toMatchObject({ taskId: task.taskId, status: "cancelled" });
		await eventually(async () => (await gate.status()).cancelled === 1);
	});

	it("another session of the same key does not know an upstream's task: -32602, and the task goes on", async () => {
		const server = await registerServer("tasking");
		const { key } = await createKey({ servers: [server] });
		const first = await taskSession(`/mcp/${server}`, key);
		const second = await taskSession(`/mcp/${server}`, key);
		const gate = upstreamGate("tasking");
		const task = createdTask(await first.send(upstreamTaskCall(gate, 1, "task_gate")));
		await gate.arrived();
		for (const method of ["tasks/get", "tasks/result", "tasks/cancel"]) {
			const refused = await second.send(request(2, method, task.taskId));
			expect(refused.error?.code).toBe(-32602);
		}
		expect((await gate.status()).cancelled).toBe(0);
		expect((await first.send(request(3, "tasks/get", task.taskId))).result?.status).toBe("working");
		await gate.release();
	});
});
