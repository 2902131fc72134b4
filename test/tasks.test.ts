import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { type HeldTask, parseTaskId, type SessionDO } from "../src/session/session-do.ts";
import { eventually } from "./support/eventually.ts";
import { connectClient, createKey, gatewayFetch, mcpHeaders, readReply, rpc } from "./support/gateway.ts";
import { ManualTimers } from "./support/manual-timers.ts";
import { parsedCall } from "./support/messages.ts";
import { instrumentSession, sessionObject } from "./support/session-object.ts";
import { eventReader } from "./support/sse-events.ts";
import { createdTask, openWith, TASKS_CLIENT, taskCall, taskRequest } from "./support/tasks.ts";
import { registerServer, toolCallsOf, upstreamGate, upstreamLog } from "./support/upstreams.ts";

const RELATED_TASK = "io.modelcontextprotocol/related-task";

/** A transparent endpoint on alpha and a task client's session on it. */
async function transparentTaskSession() {
	const server = await registerServer("alpha");
	const { key } = await createKey({ servers: [server] });
	const path = `/mcp/${server}`;
	const { sessionId } = await openWith(path, key);
	const send = async (message: unknown) => readReply(await rpc(path, key, sessionId, message));
	return { server, key, path, sessionId, send };
}

const get = (id: number, taskId: string) => taskRequest(id, "tasks/get", taskId);
const result = (id: number, taskId: string) => taskRequest(id, "tasks/result", taskId);
const cancel = (id: number, taskId: string) => taskRequest(id, "tasks/cancel", taskId);

/** The task's record in the session's storage (undefined: none). */
async function storedTask(sessionId: string, taskId: string) {
	return runInDurableObject(await sessionObject(sessionId), (_i: SessionDO, state) =>
		state.storage.get<Record<string, unknown>>(`task:${taskId}`),
	);
}

describe("tasks the gateway holds (2025-11-25)", () => {
	it("initialize declares the tasks the gateway honours to a client that declared tasks, and none to one that did not, transparent and aggregate", async () => {
		const server = await registerServer("alpha");
		const { key } = await createKey({ servers: [server] });
		for (const path of [`/mcp/${server}`, "/mcp"]) {
			const declared = await openWith(path, key);
			expect(declared.result.capabilities).toMatchObject({
				tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
			});
			const plain = await openWith(path, key, {});
			expect(plain.result.capabilities).not.toHaveProperty("tasks");
		}
	});

	it("a task-augmented call is answered at once with CreateTaskResult; tasks/get says working while the upstream holds it; once released tasks/result gives exactly the call's result", async () => {
		const { sessionId, send } = await transparentTaskSession();
		const gate = upstreamGate("alpha");
		const task = createdTask(await send(taskCall(gate, 7)));
		expect(task).toMatchObject({ status: "working", ttl: 3_600_000 });
		expect(parseTaskId(task.taskId)).toEqual({ kind: "held", place: (await sessionObject(sessionId)).id.toString() });
		// The client's exchange is over; the call is still running at the upstream.
		await gate.arrived();
		expect((await send(get(8, task.taskId))).result).toMatchObject({ taskId: task.taskId, status: "working" });
		await gate.release();
		const answered = await send(result(9, task.taskId));
		expect(answered).toEqual({
			jsonrpc: "2.0",
			id: 9,
			result: {
				content: [{ type: "text", text: `gate ${gate.name} passed` }],
				_meta: { [RELATED_TASK]: { taskId: task.taskId } },
			},
		});
		expect((await send(get(10, task.taskId))).result).toMatchObject({ status: "completed" });
		// Held calls reach the upstream without task augmentation, exactly once.
		const calls = await toolCallsOf("alpha", "gate", { name: gate.name });
		expect(calls).toHaveLength(1);
		expect(calls[0]?.body?.params).not.toHaveProperty("task");
	});

	it("tasks/result waits for a task still running, and a stored result is served after the object was evicted", async () => {
		const { sessionId, send } = await transparentTaskSession();
		const gate = upstreamGate("alpha");
		const task = createdTask(await send(taskCall(gate, 1)));
		await gate.arrived();
		const waiting = send(result(2, task.taskId));
		await gate.release();
		expect((await waiting).result).toMatchObject({ content: [{ text: `gate ${gate.name} passed` }] });
		await evictDurableObject(await sessionObject(sessionId));
		expect((await send(result(3, task.taskId))).result).toMatchObject({
			content: [{ text: `gate ${gate.name} passed` }],
			_meta: { [RELATED_TASK]: { taskId: task.taskId } },
		});
		expect((await send(get(4, task.taskId))).result).toMatchObject({ status: "completed" });
	});

	it("costs one storage write per state change: created, then completed", async () => {
		const { sessionId, send } = await transparentTaskSession();
		const { writes } = await instrumentSession(sessionId);
		const gate = upstreamGate("alpha");
		const before = await writes();
		const task = createdTask(await send(taskCall(gate, 1)));
		expect(await writes()).toBe(before + 1);
		expect(await storedTask(sessionId, task.taskId)).toMatchObject({ status: "working" });
		await gate.arrived();
		await send(get(2, task.taskId));
		expect(await writes()).toBe(before + 1);
		await gate.release();
		await send(result(3, task.taskId));
		expect(await writes()).toBe(before + 2);
		expect(await storedTask(sessionId, task.taskId)).toMatchObject({ status: "completed" });
	});

	it("a task is kept as long as the client asks, at most TASK_TTL_SECONDS, and polling is paced", async () => {
		const { send } = await transparentTaskSession();
		const gate = upstreamGate("alpha");
		await gate.release();
		expect(createdTask(await send(taskCall(gate, 1, "gate", 99_999_999)))).toMatchObject({ ttl: 3_600_000 });
		expect(createdTask(await send(taskCall(gate, 2, "gate", 60_000)))).toMatchObject({
			ttl: 60_000,
			pollInterval: 2_000,
		});
		const refused = await send({
			...taskCall(gate, 3),
			params: { ...taskCall(gate, 3).params, task: { ttl: "soon" } },
		});
		expect(refused.error?.code).toBe(-32602);
		expect(refused.error?.message).toMatch(/params.task must be an object with an optional numeric ttl/);
	});

	it("a result larger than a task keeps fails the task with a sentence naming the limit, and nothing of it is stored", async () => {
		const { sessionId, send } = await transparentTaskSession();
		const blob = (id: number, kib: number) => ({
			jsonrpc: "2.0",
			id,
			method: "tools/call",
			params: { name: "blob", arguments: { kib }, task: {} },
		});
		const small = createdTask(await send(blob(1, 4)));
		expect((await send(result(2, small.taskId))).result).toMatchObject({ content: [{ text: "x".repeat(4096) }] });
		// Under the reply cap (2 MiB in tests), over what one task's record may hold (1.9 MB).
		const large = createdTask(await send(blob(3, 1_900)));
		const refused = await send(result(4, large.taskId));
		expect(refused.error?.message).toMatch(
			/The result of 'blob' is larger than 1900000 bytes, the most the gateway keeps for a task, so it was not kept/,
		);
		expect((await send(get(5, large.taskId))).result).toMatchObject({ status: "failed" });
		const stored = await storedTask(sessionId, large.taskId);
		expect(stored).toMatchObject({ status: "failed" });
		expect(stored).not.toHaveProperty("result");
	});

	it("tasks/cancel of a running task: cancelled at once, and the upstream gets notifications/cancelled for the call, which ends it there", async () => {
		const { send } = await transparentTaskSession();
		const gate = upstreamGate("alpha");
		const task = createdTask(await send(taskCall(gate, 1)));
		await gate.arrived();
		const cancelled = await send(cancel(2, task.taskId));
		expect(cancelled.result).toMatchObject({ taskId: task.taskId, status: "cancelled" });
		const callId = (await toolCallsOf("alpha", "gate", { name: gate.name }))[0]?.body?.id;
		expect(callId).toBeDefined();
		const notices = (await upstreamLog("alpha")).filter(
			(entry) => entry.body?.method === "notifications/cancelled" && entry.body.params?.requestId === callId,
		);
		expect(notices).toHaveLength(1);
		await eventually(async () => (await gate.status()).cancelled === 1, "the call cancelled at the gate");
		// Cancelled stays cancelled; its result says so.
		expect((await send(get(3, task.taskId))).result).toMatchObject({ status: "cancelled" });
		expect((await send(result(4, task.taskId))).error).toMatchObject({ code: -32800 });
	});

	it("tasks/cancel of a finished task is refused with -32602 and a sentence, and the task is unchanged", async () => {
		const { sessionId, send } = await transparentTaskSession();
		const gate = upstreamGate("alpha");
		await gate.release();
		const task = createdTask(await send(taskCall(gate, 1)));
		await send(result(2, task.taskId));
		const stored = await storedTask(sessionId, task.taskId);
		const refused = await send(cancel(3, task.taskId));
		expect(refused.error?.code).toBe(-32602);
		expect(refused.error?.message).toMatch(/cannot cancel task .* it is already completed/);
		expect(await storedTask(sessionId, task.taskId)).toEqual(stored);
	});

	it("a task id of another session of the same key, of another key, or no task id at all, is unknown (-32602) and changes nothing", async () => {
		const { server, key, path, sessionId, send } = await transparentTaskSession();
		const gate = upstreamGate("alpha");
		const task = createdTask(await send(taskCall(gate, 1)));
		await gate.arrived();
		const sibling = await openWith(path, key);
		const { key: otherKey } = await createKey({ servers: [server] });
		const stranger = await openWith(path, otherKey);
		const asking = [
			(message: unknown) => rpc(path, key, sibling.sessionId, message),
			(message: unknown) => rpc(path, otherKey, stranger.sessionId, message),
		];
		for (const ask of asking) {
			for (const message of [get(2, task.taskId), result(3, task.taskId), cancel(4, task.taskId)]) {
				const reply = await readReply(await ask(message));
				expect(reply.error?.code).toBe(-32602);
				expect(reply.error?.message).toMatch(/task .* is unknown/);
			}
			expect((await readReply(await ask({ jsonrpc: "2.0", id: 5, method: "tasks/list" }))).result).toEqual({
				tasks: [],
			});
		}
		const malformed = await send({ jsonrpc: "2.0", id: 6, method: "tasks/get", params: {} });
		expect(malformed.error?.code).toBe(-32602);
		expect(malformed.error?.message).toMatch(/taskId/);
		expect(await storedTask(sessionId, task.taskId)).toMatchObject({ status: "working" });
		expect((await send(get(7, task.taskId))).result).toMatchObject({ status: "working" });
		expect(await gate.status()).toMatchObject({ waiting: 1, cancelled: 0 });
	});

	it("tasks/list lists this session's tasks, a page at a time", async () => {
		const { send } = await transparentTaskSession();
		const ids: string[] = [];
		for (let i = 0; i < 22; i++) {
			ids.push(
				createdTask(await send({ jsonrpc: "2.0", id: i, method: "tools/call", params: { name: "whoami", task: {} } }))
					.taskId,
			);
		}
		const first = await send({ jsonrpc: "2.0", id: 100, method: "tasks/list" });
		const page = first.result as { tasks: Array<{ taskId: string }>; nextCursor?: string };
		expect(page.tasks).toHaveLength(20);
		expect(page.nextCursor).toBeDefined();
		const second = await send({ jsonrpc: "2.0", id: 101, method: "tasks/list", params: { cursor: page.nextCursor } });
		const rest = second.result as { tasks: Array<{ taskId: string }>; nextCursor?: string };
		expect(rest.nextCursor).toBeUndefined();
		expect([...page.tasks, ...rest.tasks].map((task) => task.taskId).sort()).toEqual([...ids].sort());
		const bad = await send({ jsonrpc: "2.0", id: 102, method: "tasks/list", params: { cursor: "nonsense" } });
		expect(bad.error?.code).toBe(-32602);
	});

	it("a session holds at most MAX_TASKS_PER_SESSION tasks: the one over is refused with an error naming the limit, and nothing is stored", async () => {
		const { sessionId, send } = await transparentTaskSession();
		const whoami = (id: number) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "whoami", task: {} } });
		const ids: string[] = [];
		for (let i = 0; i < 32; i++) ids.push(createdTask(await send(whoami(i))).taskId);
		// Every task settled (its one write done), so the count below sees the refused call's writes alone.
		await eventually(async () => {
			for (const [at, taskId] of ids.entries()) {
				const status = ((await send(get(200 + at, taskId))).result as { status?: string } | undefined)?.status;
				if (status !== "completed") return false;
			}
			return true;
		}, "every task completed");
		const { writes } = await instrumentSession(sessionId);
		const before = await writes();
		const refused = await send(whoami(99));
		expect(refused.error?.message).toMatch(/32 \(MAX_TASKS_PER_SESSION\)/);
		expect(await writes()).toBe(before);
		const keys = await runInDurableObject(await sessionObject(sessionId), async (_i: SessionDO, state) => [
			...(await state.storage.list({ prefix: "task:" })).keys(),
		]);
		expect(keys).toHaveLength(32);
	});

	it("an expired task is deleted by the session's alarm, and is unknown from then on", async () => {
		const { sessionId, send } = await transparentTaskSession();
		const { stub, clock } = await instrumentSession(sessionId);
		const gate = upstreamGate("alpha");
		await gate.release();
		const task = createdTask(await send(taskCall(gate, 1, "gate", 1_000)));
		expect(task.ttl).toBe(1_000);
		await send(result(2, task.taskId));
		// The one alarm now fires by the task's expiry, before the session's idle deadline.
		const alarm = await runInDurableObject(stub, (_i: SessionDO, state) => state.storage.getAlarm());
		expect(alarm).toBeLessThanOrEqual(clock.now() + 1_000);
		clock.advance(1_001);
		expect(await runDurableObjectAlarm(stub)).toBe(true);
		expect(await storedTask(sessionId, task.taskId)).toBeUndefined();
		expect((await send(get(3, task.taskId))).error?.code).toBe(-32602);
		// The session itself lives on.
		expect((await send({ jsonrpc: "2.0", id: 4, method: "ping" })).result).toEqual({});
	});

	it("a running task holds the session's idle expiry off, as a running call does", async () => {
		const { sessionId, send } = await transparentTaskSession();
		const { stub, clock } = await instrumentSession(sessionId);
		const gate = upstreamGate("alpha");
		const task = createdTask(await send(taskCall(gate, 1)));
		await gate.arrived();
		// Past the idle timeout (30 min) with nothing from the client: the alarm finds the task's call running.
		clock.advance(31 * 60_000);
		expect(await runDurableObjectAlarm(stub)).toBe(true);
		expect((await send(get(2, task.taskId))).result).toMatchObject({ status: "working" });
		await gate.release();
		expect((await send(result(3, task.taskId))).result).toMatchObject({
			content: [{ text: `gate ${gate.name} passed` }],
		});
	});

	it("a session keeps a finished task for its ttl: idle past the idle timeout it lives on until the task expires, then ends", async () => {
		const { sessionId, send } = await transparentTaskSession();
		const { stub, clock } = await instrumentSession(sessionId);
		const gate = upstreamGate("alpha");
		await gate.release();
		// A ttl of 50 minutes, longer than the 30-minute idle timeout.
		const task = createdTask(await send(taskCall(gate, 1, "gate", 50 * 60_000)));
		await send(result(2, task.taskId));
		clock.advance(31 * 60_000);
		await runDurableObjectAlarm(stub);
		// Still there, with its result, though nothing was asked for 31 minutes.
		expect((await runInDurableObject(stub, (instance: SessionDO) => instance.deadline())) > clock.now()).toBe(true);
		const kept = await runInDurableObject(stub, async (instance: SessionDO) => instance.tasks.get(task.taskId));
		expect(kept?.status).toBe("completed");
		// Past the task's ttl and an idle timeout after the last activity: the task goes, and the session with it.
		clock.advance(50 * 60_000);
		await runDurableObjectAlarm(stub);
		expect(await storedTask(sessionId, task.taskId)).toBeUndefined();
		expect(await runInDurableObject(stub, (instance: SessionDO) => instance.store.readBinding())).toBeNull();
	});

	it("ending the session cancels its running tasks upstream", async () => {
		const { key, path, sessionId, send } = await transparentTaskSession();
		const gate = upstreamGate("alpha");
		createdTask(await send(taskCall(gate, 1)));
		await gate.arrived();
		const ended = await gatewayFetch(path, { method: "DELETE", headers: mcpHeaders(key, sessionId) });
		expect(ended.status).toBe(204);
		const callId = (await toolCallsOf("alpha", "gate", { name: gate.name }))[0]?.body?.id;
		await eventually(
			async () =>
				(await upstreamLog("alpha")).some(
					(entry) => entry.body?.method === "notifications/cancelled" && entry.body.params?.requestId === callId,
				),
			"notifications/cancelled at the upstream",
		);
		await eventually(async () => (await gate.status()).cancelled === 1, "the call cancelled at the gate");
	});

	it("a task found working in storage with no call running it (its object restarted) is failed with the sentence a call gets when it may have run, and never replayed", async () => {
		const { sessionId, send } = await transparentTaskSession();
		const gate = upstreamGate("alpha");
		await gate.release();
		const task = createdTask(await send(taskCall(gate, 1)));
		await send(result(2, task.taskId));
		// What an instance that stopped mid-call leaves behind: the task as it was stored at its creation.
		const stub = await sessionObject(sessionId);
		await runInDurableObject(stub, async (_i: SessionDO, state) => {
			const stored = (await state.storage.get<Record<string, unknown>>(`task:${task.taskId}`)) ?? {};
			const { result: _result, ...created } = stored;
			await state.storage.put(`task:${task.taskId}`, { ...created, status: "working" });
		});
		await evictDurableObject(stub);
		const failed = await send(get(3, task.taskId));
		expect(failed.result).toMatchObject({ status: "failed" });
		expect(String(failed.result?.statusMessage)).toMatch(
			/The call to 'gate' on upstream server '.*' may or may not have taken effect: the gateway restarted while it ran/,
		);
		expect((await send(result(4, task.taskId))).error?.message).toMatch(/may or may not have taken effect/);
		expect(await storedTask(sessionId, task.taskId)).toMatchObject({ status: "failed" });
		expect(await toolCallsOf("alpha", "gate", { name: gate.name })).toHaveLength(1);
	});

	it("tasks/result answers exactly what the call would have: an isError result (a failed task) on a transparent endpoint, a JSON-RPC error on an aggregate", async () => {
		const server = await registerServer("alpha");
		const { key } = await createKey({ servers: [server] });
		for (const [path, name] of [
			[`/mcp/${server}`, "no-such-tool"],
			["/mcp", "no-such-server__tool"],
		] as const) {
			const { sessionId } = await openWith(path, key);
			const send = async (message: unknown) => readReply(await rpc(path, key, sessionId, message));
			const call = { name, arguments: {} };
			const direct = await send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: call });
			const task = createdTask(
				await send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { ...call, task: {} } }),
			);
			const answered = await send(result(3, task.taskId));
			expect((await send(get(4, task.taskId))).result).toMatchObject({ status: "failed" });
			if (path === "/mcp") {
				expect(direct.error?.code).toBe(-32602);
				expect(answered).toEqual({ jsonrpc: "2.0", id: 3, error: direct.error });
			} else {
				expect(direct.result?.isError).toBe(true);
				const { _meta, ...rest } = answered.result ?? {};
				expect(rest).toEqual(direct.result);
				expect(_meta).toEqual({ [RELATED_TASK]: { taskId: task.taskId } });
			}
		}
	});

	it("an SDK client declaring tasks calls a tool as a task, polls it and gets its result (client.experimental.tasks)", async () => {
		const server = await registerServer("alpha");
		const { key } = await createKey({ servers: [server] });
		const { client } = await connectClient(`/mcp/${server}`, key, { capabilities: TASKS_CLIENT });
		expect(client.getServerCapabilities()?.tasks?.requests?.tools?.call).toEqual({});
		// The SDK calls a tool as a task once its list says the tool supports it.
		await client.listTools();
		const gate = upstreamGate("alpha");
		const seen: string[] = [];
		let answer: unknown;
		let taskId = "";
		for await (const message of client.experimental.tasks.callToolStream({
			name: "gate",
			arguments: { name: gate.name },
		})) {
			seen.push(message.type);
			if (message.type === "taskCreated") {
				taskId = message.task.taskId;
				await gate.arrived();
				await gate.release();
			}
			if (message.type === "result") answer = message.result;
			if (message.type === "error") throw message.error;
		}
		expect(seen[0]).toBe("taskCreated");
		expect(seen[seen.length - 1]).toBe("result");
		expect(answer).toMatchObject({ content: [{ type: "text", text: `gate ${gate.name} passed` }] });
		expect((await client.experimental.tasks.getTask(taskId)).status).toBe("completed");
		expect((await client.experimental.tasks.listTasks()).tasks.map((task) => task.taskId)).toEqual([taskId]);
		await client.close();
	});

	it("a call that asks the client during a task puts it in input_required; tasks/result carries the request, the client's answer goes upstream, and the task completes, transparent and aggregate", async () => {
		const server = await registerServer("delta");
		const { key } = await createKey({ servers: [server] });
		for (const [path, tool] of [
			[`/mcp/${server}`, "ask_user"],
			["/mcp", `${server}__ask_user`],
		] as const) {
			const { sessionId } = await openWith(path, key, { ...TASKS_CLIENT, elicitation: {} });
			const send = async (message: unknown) => readReply(await rpc(path, key, sessionId, message));
			const { writes } = await instrumentSession(sessionId);
			const before = await writes();
			const task = createdTask(
				await send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: tool, task: {} } }),
			);
			await eventually(
				async () => (await send(get(2, task.taskId))).result?.status === "input_required",
				"the task waiting for input",
			);
			const streaming = await rpc(path, key, sessionId, result(3, task.taskId));
			expect(streaming.headers.get("content-type")).toContain("text/event-stream");
			const events = eventReader<{ id?: number | string; method?: string; params?: Record<string, unknown> }>(
				streaming.body as ReadableStream<Uint8Array>,
			);
			const question = await events.next();
			expect(question).toMatchObject({
				method: "elicitation/create",
				params: { message: "delta needs an answer", _meta: { [RELATED_TASK]: { taskId: task.taskId } } },
			});
			const answer = await rpc(path, key, sessionId, {
				jsonrpc: "2.0",
				id: question.id,
				result: { action: "accept", content: { answer: "forty-two" } },
			});
			expect(answer.status).toBe(202);
			expect(await events.next()).toEqual({
				jsonrpc: "2.0",
				id: 3,
				result: {
					content: [{ type: "text", text: "delta got accept: forty-two" }],
					_meta: { [RELATED_TASK]: { taskId: task.taskId } },
				},
			});
			expect((await send(get(4, task.taskId))).result).toMatchObject({ status: "completed" });
			// One write per state change: created, input_required, working again, completed.
			expect(await writes()).toBe(before + 4);
		}
	});

	it("an SDK client answers what a task's call asks it (elicitation) on tasks/result's stream, and gets the task's result", async () => {
		const server = await registerServer("delta");
		const { key } = await createKey({ servers: [server] });
		const asked: string[] = [];
		const { client } = await connectClient(`/mcp/${server}`, key, {
			capabilities: { ...TASKS_CLIENT, elicitation: {} },
			setup: (peer) => {
				peer.setRequestHandler(ElicitRequestSchema, async (request) => {
					asked.push(request.params.message);
					return { action: "accept", content: { answer: "from the sdk" } };
				});
			},
		});
		await client.listTools();
		const seen: string[] = [];
		let answer: unknown;
		for await (const message of client.experimental.tasks.callToolStream({ name: "ask_user", arguments: {} })) {
			seen.push(message.type === "taskStatus" ? message.task.status : message.type);
			if (message.type === "result") answer = message.result;
			if (message.type === "error") throw message.error;
		}
		expect(seen[0]).toBe("taskCreated");
		expect(seen[seen.length - 1]).toBe("result");
		expect(asked).toEqual(["delta needs an answer"]);
		expect(answer).toMatchObject({ content: [{ type: "text", text: "delta got accept: from the sdk" }] });
		await client.close();
	});

	it("a params.task from a client that did not declare tasks is ignored: the call is answered as usual", async () => {
		const server = await registerServer("alpha");
		const { key } = await createKey({ servers: [server] });
		const path = `/mcp/${server}`;
		const { sessionId } = await openWith(path, key, {});
		const gate = upstreamGate("alpha");
		await gate.release();
		const reply = await readReply(await rpc(path, key, sessionId, taskCall(gate, 1)));
		expect(reply.result).toEqual({ content: [{ type: "text", text: `gate ${gate.name} passed` }] });
	});

	it("listed tools carry execution.taskSupport as the gateway honours it for a task client, transparent and aggregate, and are unchanged for others", async () => {
		const server = await registerServer("alpha");
		const { key } = await createKey({ servers: [server] });
		const list = { jsonrpc: "2.0", id: 2, method: "tools/list" };
		for (const [path, name] of [
			[`/mcp/${server}`, "gate"],
			["/mcp", `${server}__gate`],
		] as const) {
			const held = await openWith(path, key);
			const tools = ((await readReply(await rpc(path, key, held.sessionId, list))).result?.tools ?? []) as Array<{
				name: string;
				execution?: { taskSupport?: string };
			}>;
			expect(tools.length).toBeGreaterThan(0);
			expect(tools.every((tool) => tool.execution?.taskSupport === "optional")).toBe(true);
			expect(tools.map((tool) => tool.name)).toContain(name);
			const plain = await openWith(path, key, {});
			const untouched = ((await readReply(await rpc(path, key, plain.sessionId, list))).result?.tools ?? []) as Array<{
				execution?: { taskSupport?: string };
			}>;
			// As the upstream lists them (the SDK's servers say "forbidden").
			expect(untouched.length).toBe(tools.length);
			expect(untouched.some((tool) => tool.execution?.taskSupport === "optional")).toBe(false);
		}
	});
});

describe("tasks on aggregate endpoints", () => {
	it("a server__tool call is held as a task on /mcp: its result comes from tasks/result, and cancelling reaches the member", async () => {
		const server = await registerServer("alpha");
		const { key } = await createKey({ servers: [server] });
		const { sessionId } = await openWith("/mcp", key);
		const send = async (message: unknown) => readReply(await rpc("/mcp", key, sessionId, message));
		const done = upstreamGate("alpha");
		const task = createdTask(await send(taskCall(done, 1, `${server}__gate`)));
		await done.arrived();
		expect((await send(get(2, task.taskId))).result).toMatchObject({ status: "working" });
		await done.release();
		expect((await send(result(3, task.taskId))).result).toMatchObject({
			content: [{ text: `gate ${done.name} passed` }],
			_meta: { [RELATED_TASK]: { taskId: task.taskId } },
		});
		const held = upstreamGate("alpha");
		const running = createdTask(await send(taskCall(held, 4, `${server}__gate`)));
		await held.arrived();
		expect((await send(cancel(5, running.taskId))).result).toMatchObject({ status: "cancelled" });
		await eventually(async () => (await held.status()).cancelled === 1, "the member's call cancelled at the gate");
	});
});

describe("the held tasks the 2026-07-28 side builds on", () => {
	it("a task started unsaved that finishes and is forgotten costs no storage write; settle gives one still running as it is once its time passes; kept, it is written once and outlives its object", async () => {
		const { sessionId, send } = await transparentTaskSession();
		const { stub, clock, writes } = await instrumentSession(sessionId);
		const timers = new ManualTimers(clock);
		await runInDurableObject(stub, (instance: SessionDO) => {
			instance.timers = timers;
		});
		const quick = upstreamGate("alpha");
		await quick.release();
		const before = await writes();
		const finished = await runInDurableObject(stub, async (instance: SessionDO) => {
			const task = await instance.tasks.start(parsedCall(quick.call("quick")), undefined, { unsaved: true });
			const settled = await instance.tasks.settle(task.taskId, 5_000);
			await instance.tasks.forget(task.taskId);
			return settled;
		});
		expect(finished).toMatchObject({
			status: "completed",
			result: { content: [{ text: `gate ${quick.name} passed` }] },
		});
		expect(await writes()).toBe(before);

		const slow = upstreamGate("alpha");
		const taskId = await runInDurableObject(
			stub,
			async (instance: SessionDO) =>
				(await instance.tasks.start(parsedCall(slow.call("slow")), undefined, { unsaved: true })).taskId,
		);
		await slow.arrived();
		let settled: HeldTask | null | undefined;
		const settling = runInDurableObject(stub, (instance: SessionDO) => instance.tasks.settle(taskId, 1_000)).then(
			(task) => {
				settled = task;
			},
		);
		await eventually(async () => {
			await runInDurableObject(stub, () => {
				clock.advance(1_000);
				timers.runDue();
			});
			return settled !== undefined;
		}, "settle's time passing");
		await settling;
		expect(settled).toMatchObject({ taskId, status: "working" });
		expect(await writes()).toBe(before);
		await runInDurableObject(stub, (instance: SessionDO) => instance.tasks.keep(taskId));
		expect(await writes()).toBe(before + 1);
		await slow.release();
		expect((await send(result(1, taskId))).result).toMatchObject({ content: [{ text: `gate ${slow.name} passed` }] });
		expect(await writes()).toBe(before + 2);
		await evictDurableObject(stub);
		expect((await send(get(2, taskId))).result).toMatchObject({ taskId, status: "completed" });
	});
});
