import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionDO } from "../src/session/session-do.ts";
import { eventually } from "./support/eventually.ts";
import type { Gate } from "./support/gates.ts";
import { createKey } from "./support/gateway.ts";
import { ENVELOPE, modernPost } from "./support/modern.ts";
import { objectMadeBy } from "./support/session-object.ts";
import { registerServer, upstreamGate, upstreamLog } from "./support/upstreams.ts";

/**
 * The tasks extension of 2026-07-28 (SEP-2663) at the edge: its methods are
 * refused without the extension, and an id the gateway did not mint for the
 * caller is unknown. Nothing of either reaches an upstream or a session.
 */

const TASKS = "io.modelcontextprotocol/tasks";
/** The envelope of a client that declares the tasks extension on its requests. */
const TASKING_ENVELOPE = {
	...ENVELOPE,
	"io.modelcontextprotocol/clientCapabilities": { extensions: { [TASKS]: {} } },
};

function taskRequest(
	method: string,
	params: Record<string, unknown>,
	envelope: object = TASKING_ENVELOPE,
): { body: { id: string; method: string; params: object }; headers: Record<string, string> } {
	const taskId = params.taskId;
	const headers: Record<string, string> = typeof taskId === "string" ? { "mcp-name": taskId } : {};
	return { body: { id: `${method}-1`, method, params: { ...params, _meta: envelope } }, headers };
}

/** Every request the upstream's log holds that names `taskId` anywhere. */
async function upstreamMentions(taskId: string): Promise<number> {
	return (await upstreamLog("modern")).filter((entry) => JSON.stringify(entry.body ?? {}).includes(taskId)).length;
}

describe("2026-07-28 task methods at the edge", () => {
	for (const method of ["tasks/get", "tasks/update", "tasks/cancel"]) {
		it(`${method} without the tasks extension in the request's client capabilities is refused with -32021 naming it, and never reaches the upstream`, async () => {
			const server = await registerServer("modern");
			const { key } = await createKey({ servers: [server] });
			const taskId = `no-extension-${crypto.randomUUID()}`;
			const { body, headers } = taskRequest(method, { taskId, inputResponses: {} }, ENVELOPE);
			const response = await modernPost(`/mcp/${server}`, key, body, headers);
			expect(response.status).toBe(400);
			const reply = (await response.json()) as { id: unknown; error: { code: number; message: string; data: object } };
			expect(reply.id).toBe(body.id);
			expect(reply.error.code).toBe(-32021);
			expect(reply.error.message).toContain(`${method} needs the ${TASKS} extension`);
			expect(reply.error.data).toMatchObject({ requiredCapabilities: { extensions: { [TASKS]: {} } } });
			expect(await upstreamMentions(taskId)).toBe(0);
		});
	}

	it("a task id the gateway never minted is unknown (-32602), for every task method, and never reaches the upstream", async () => {
		const server = await registerServer("modern");
		const { key } = await createKey({ servers: [server] });
		const taskId = `never-minted-${crypto.randomUUID()}`;
		for (const method of ["tasks/get", "tasks/update", "tasks/cancel"]) {
			const { body, headers } = taskRequest(method, { taskId, inputResponses: {} });
			const response = await modernPost(`/mcp/${server}`, key, body, headers);
			expect(response.status).toBe(400);
			const reply = (await response.json()) as { error: { code: number; message: string } };
			expect(reply.error.code).toBe(-32602);
			expect(reply.error.message).toContain(`task '${taskId}' is unknown`);
		}
		expect(await upstreamMentions(taskId)).toBe(0);
	});

	it("a forged upstream task id (the gateway's prefix, a MAC that is not its own) is unknown and never reaches the upstream", async () => {
		const server = await registerServer("modern");
		const { key } = await createKey({ servers: [server] });
		const forged = `up.${btoa(JSON.stringify({ s: server, t: "stolen" }))}.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA`;
		const { body, headers } = taskRequest("tasks/get", { taskId: forged });
		const reply = (await (await modernPost(`/mcp/${server}`, key, body, headers)).json()) as {
			error: { code: number };
		};
		expect(reply.error.code).toBe(-32602);
		expect(await upstreamMentions("stolen")).toBe(0);
	});

	it("a forged task id in the gateway's own shape (64 hex digits naming no object, a dot, 22 characters) is unknown (-32602), not a 500, and never reaches the upstream", async () => {
		const server = await registerServer("modern");
		const { key } = await createKey({ servers: [server] });
		const forged = `${"ab".repeat(32)}.${"A".repeat(22)}`;
		for (const method of ["tasks/get", "tasks/update", "tasks/cancel"]) {
			const { body, headers } = taskRequest(method, { taskId: forged, inputResponses: {} });
			const response = await modernPost(`/mcp/${server}`, key, body, headers);
			expect(response.status).toBe(400);
			const reply = (await response.json()) as { id: unknown; error: { code: number; message: string } };
			expect(reply.id).toBe(body.id);
			expect(reply.error.code).toBe(-32602);
			expect(reply.error.message).toContain(`task '${forged}' is unknown`);
		}
		expect(await upstreamMentions(forged)).toBe(0);
	});

	it("a task method without a taskId is refused with -32602 saying it needs one", async () => {
		const server = await registerServer("modern");
		const { key } = await createKey({ servers: [server] });
		const { body, headers } = taskRequest("tasks/get", {});
		const response = await modernPost(`/mcp/${server}`, key, body, headers);
		expect(response.status).toBe(400);
		const reply = (await response.json()) as { error: { code: number; message: string } };
		expect(reply.error).toMatchObject({ code: -32602, message: "Invalid params: tasks/get needs a taskId string." });
	});
});

function call(id: string, name: string, args: Record<string, unknown>, envelope: object = TASKING_ENVELOPE) {
	return {
		body: { id, method: "tools/call", params: { name, arguments: args, _meta: envelope } },
		headers: { "mcp-name": name },
	};
}

/** Sends a raw 2026-07-28 request to the endpoint at `path` and reads its JSON answer. */
async function send(path: string, key: string, request: { body: object; headers: Record<string, string> }) {
	return (await (await modernPost(path, key, request.body as Record<string, unknown>, request.headers)).json()) as {
		result?: Record<string, unknown>;
		error?: { code: number; message: string };
	};
}

/**
 * An endpoint whose servers hold no tasks of their own (the 2026-07-28 `modern` fixture by default), a
 * key for it, and the session object that holds a tasking client's calls there, made by a first quick
 * call (`echo`, by its name on the endpoint), its clock and timers made manual.
 */
async function taskingSession(
	servers: string[] | null = null,
	endpoint: (servers: string[]) => string = ([server]) => `/mcp/${server}`,
	echo: (servers: string[]) => string = () => "echo",
	envelope: object = TASKING_ENVELOPE,
) {
	const names = servers ?? [await registerServer("modern")];
	const { key } = await createKey({ servers: names });
	const path = endpoint(names);
	const made = await objectMadeBy(() => send(path, key, call("quick", echo(names), { text: "before" }, envelope)));
	const { stub, clock, timers } = made;
	return { servers: names, path, key, stub, clock, timers, first: made.made, envelope };
}

/**
 * Starts a call of the gate tool (`tool`: its name on the endpoint) and promotes it: the test moves the
 * clock past the promotion delay once the upstream has the call.
 */
async function promotedGate(
	session: Awaited<ReturnType<typeof taskingSession>>,
	gate: Gate = upstreamGate("modern"),
	tool = "gate",
) {
	const answer = send(session.path, session.key, call(`call-${gate.name}`, tool, { name: gate.name }));
	await gate.arrived();
	await eventually(() => session.timers.count > 0);
	session.clock.advance(5_000);
	// Inside the object: what a timer wakes belongs to it.
	await runInDurableObject(session.stub, () => session.timers.runDue());
	return { gate, created: await answer };
}

function taskGet(
	path: string,
	key: string,
	method: string,
	taskId: string,
	inputResponses: Record<string, unknown> = {},
	envelope: object = TASKING_ENVELOPE,
) {
	const { body, headers } = taskRequest(method, { taskId, inputResponses }, envelope);
	return send(path, key, { body, headers });
}

describe("2026-07-28 calls the session holds as tasks (a server without tasks of its own)", () => {
	it("server/discover advertises the tasks extension, never the 2025 tasks capability", async () => {
		const server = await registerServer("modern");
		const { key } = await createKey({ servers: [server] });
		const reply = await send(`/mcp/${server}`, key, {
			body: { id: "d", method: "server/discover", params: { _meta: TASKING_ENVELOPE } },
			headers: {},
		});
		const capabilities = reply.result?.capabilities as Record<string, unknown>;
		expect(capabilities.extensions).toMatchObject({ [TASKS]: {} });
		expect(capabilities.tasks).toBeUndefined();
	});

	it("a call that finishes within the promotion delay is answered with its own result, and no task is kept or written", async () => {
		const session = await taskingSession();
		expect(session.first.result).toMatchObject({ resultType: "complete", content: [{ type: "text", text: "before" }] });
		expect(session.first.result?.taskId).toBeUndefined();
		const held = await runInDurableObject(
			session.stub,
			async (instance: SessionDO) => (await instance.tasks.list(undefined)).tasks,
		);
		expect(held).toEqual([]);
		// A quick call costs no storage: its task is never written.
		const writes = () => runInDurableObject(session.stub, (instance: SessionDO) => instance.stats().storageWrites);
		const before = await writes();
		const again = await send(session.path, session.key, call("again", "echo", { text: "again" }));
		expect(again.result).toMatchObject({ content: [{ type: "text", text: "again" }] });
		expect(await writes()).toBe(before);
	});

	it("a call still running after the promotion delay becomes a task; the client polls it working, then completed with the result inlined, after an eviction too", async () => {
		const session = await taskingSession();
		const { gate, created } = await promotedGate(session);
		const task = created.result as Record<string, unknown>;
		expect(task).toMatchObject({
			resultType: "task",
			status: "working",
			pollIntervalMs: expect.any(Number),
			ttlMs: expect.any(Number),
		});
		expect(task.task).toBeUndefined();
		expect(task.result).toBeUndefined();
		const taskId = String(task.taskId);
		expect((await taskGet(session.path, session.key, "tasks/get", taskId)).result).toMatchObject({
			taskId,
			status: "working",
		});
		await gate.release();
		await eventually(
			async () => (await taskGet(session.path, session.key, "tasks/get", taskId)).result?.status === "completed",
		);
		const expected = {
			resultType: "complete",
			taskId,
			status: "completed",
			result: { content: [{ type: "text", text: `gate ${gate.name} passed` }] },
		};
		expect((await taskGet(session.path, session.key, "tasks/get", taskId)).result).toMatchObject(expected);
		await evictDurableObject(session.stub);
		expect((await taskGet(session.path, session.key, "tasks/get", taskId)).result).toMatchObject(expected);
		// Cancelling a finished task is acknowledged, and changes nothing.
		expect((await taskGet(session.path, session.key, "tasks/cancel", taskId)).result).toEqual({
			resultType: "complete",
		});
		expect((await taskGet(session.path, session.key, "tasks/get", taskId)).result?.status).toBe("completed");
	});

	it("tasks/cancel of a running task acknowledges with an empty result, the task is cancelled, and the upstream call is stopped", async () => {
		const session = await taskingSession();
		const { gate, created } = await promotedGate(session);
		const taskId = String(created.result?.taskId);
		const ack = await taskGet(session.path, session.key, "tasks/cancel", taskId);
		expect(ack.result).toEqual({ resultType: "complete" });
		expect((await taskGet(session.path, session.key, "tasks/get", taskId)).result?.status).toBe("cancelled");
		await eventually(async () => (await gate.status()).cancelled === 1);
		expect((await gate.status()).passed).toBe(0);
	});

	it("a task id of another key is unknown (-32602), and the task is unchanged for its own key", async () => {
		const session = await taskingSession();
		const { gate, created } = await promotedGate(session);
		const taskId = String(created.result?.taskId);
		const other = await createKey({ servers: session.servers });
		for (const method of ["tasks/get", "tasks/cancel", "tasks/update"]) {
			const refused = await taskGet(session.path, other.key, method, taskId);
			expect(refused.error?.code).toBe(-32602);
			expect(refused.error?.message).toContain("is unknown");
		}
		expect((await taskGet(session.path, session.key, "tasks/get", taskId)).result?.status).toBe("working");
		expect((await gate.status()).cancelled).toBe(0);
		await gate.release();
	});
});

describe("2026-07-28 calls held as tasks across endpoint kinds and eras", () => {
	it("on /mcp, a namespaced call (server__gate) becomes a task after the delay, and tasks/get gives its result", async () => {
		const modern = await registerServer("modern");
		const delta = await registerServer("delta");
		const session = await taskingSession(
			[modern, delta],
			() => "/mcp",
			([first]) => `${first}__echo`,
		);
		const gate = upstreamGate("modern");
		const { created } = await promotedGate(session, gate, `${modern}__gate`);
		expect(created.result).toMatchObject({ resultType: "task", status: "working" });
		const taskId = String(created.result?.taskId);
		await gate.release();
		await eventually(
			async () => (await taskGet("/mcp", session.key, "tasks/get", taskId)).result?.status === "completed",
		);
		expect((await taskGet("/mcp", session.key, "tasks/get", taskId)).result?.result).toMatchObject({
			content: [{ type: "text", text: `gate ${gate.name} passed` }],
		});
	});

	it("a 2025 server's call, bridged for a 2026-07-28 client, becomes a task after the delay and completes with its result", async () => {
		const delta = await registerServer("delta");
		const session = await taskingSession([delta]);
		const gate = upstreamGate("delta");
		const { created } = await promotedGate(session, gate);
		const taskId = String(created.result?.taskId);
		expect(created.result).toMatchObject({ resultType: "task", taskId, status: "working" });
		await gate.release();
		await eventually(
			async () => (await taskGet(session.path, session.key, "tasks/get", taskId)).result?.status === "completed",
		);
		const got = await taskGet(session.path, session.key, "tasks/get", taskId);
		expect(JSON.stringify(got.result?.result)).toContain(gate.name);
	});

	it("a held call that asks the client (an elicitation) shows it as the task's inputRequests; tasks/update answers it and the task completes", async () => {
		const delta = await registerServer("delta");
		const envelope = {
			...ENVELOPE,
			"io.modelcontextprotocol/clientCapabilities": { elicitation: { form: {} }, extensions: { [TASKS]: {} } },
		};
		const session = await taskingSession([delta], undefined, undefined, envelope);
		const answer = send(session.path, session.key, call("asking", "ask_user", {}, envelope));
		await eventually(() => session.timers.count > 0);
		session.clock.advance(5_000);
		await runInDurableObject(session.stub, () => session.timers.runDue());
		const taskId = String((await answer).result?.taskId);
		const asking = async () => (await taskGet(session.path, session.key, "tasks/get", taskId, {}, envelope)).result;
		await eventually(async () => (await asking())?.status === "input_required");
		const requests = (await asking())?.inputRequests as Record<string, { method: string; params: { message: string } }>;
		const [key, request] = Object.entries(requests)[0] ?? [];
		expect(request).toMatchObject({ method: "elicitation/create", params: { message: "delta needs an answer" } });
		// An answer that is not an elicitation result is refused, and changes nothing.
		const wrong = await taskGet(
			session.path,
			session.key,
			"tasks/update",
			taskId,
			{ [String(key)]: { nope: 1 } },
			envelope,
		);
		expect(wrong.error?.code).toBe(-32602);
		expect((await asking())?.status).toBe("input_required");
		const update = { [String(key)]: { action: "accept", content: { answer: "yes" } } };
		expect((await taskGet(session.path, session.key, "tasks/update", taskId, update, envelope)).result).toEqual({
			resultType: "complete",
		});
		await eventually(async () => (await asking())?.status === "completed");
		expect((await asking())?.result).toMatchObject({
			content: [{ type: "text", text: "delta got accept: yes" }],
		});
	});

	it("the upstream is never offered the tasks extension: the session holds the task, not the upstream", async () => {
		const session = await taskingSession();
		const whoami = await send(session.path, session.key, call("who", "whoami", {}));
		const seen = (whoami.result?.structuredContent as { clientCapabilities?: { extensions?: object } } | undefined)
			?.clientCapabilities;
		expect(JSON.stringify(seen ?? {})).not.toContain(TASKS);
	});
});

describe("2026-07-28 tasks an upstream holds itself (a server with the tasks extension)", () => {
	/** A `task_gate` call (a task the upstream makes, done once the gate is released) on `/mcp/<server>`. */
	function gateTask(server: string, key: string, gate: Gate) {
		return send(`/mcp/${server}`, key, call(`task-${gate.name}`, "task_gate", { name: gate.name }));
	}

	it("a task the upstream makes reaches the client under the gateway's id, which tasks/get follows to the upstream's task and its result", async () => {
		const server = await registerServer("modernTasking");
		const { key } = await createKey({ servers: [server] });
		const gate = upstreamGate("modernTasking");
		const created = await gateTask(server, key, gate);
		expect(created.result).toMatchObject({ resultType: "task", status: "working" });
		const taskId = String(created.result?.taskId);
		expect(taskId.startsWith("up.")).toBe(true);
		await gate.arrived();
		expect((await taskGet(`/mcp/${server}`, key, "tasks/get", taskId)).result).toMatchObject({
			taskId,
			status: "working",
		});
		await gate.release();
		await eventually(
			async () => (await taskGet(`/mcp/${server}`, key, "tasks/get", taskId)).result?.status === "completed",
		);
		const got = await taskGet(`/mcp/${server}`, key, "tasks/get", taskId);
		expect(got.result).toMatchObject({
			taskId,
			result: { content: [{ type: "text", text: `gate ${gate.name} passed` }] },
		});
		// The upstream was asked under its own id, which the client never sees.
		const asked = (await upstreamLog("modernTasking")).filter(
			(entry) => entry.body?.method === "tasks/get" && JSON.stringify(entry.body).includes(gate.name) === false,
		);
		const upstreamIds = new Set(asked.map((entry) => String(entry.body?.params?.taskId)));
		expect(upstreamIds.has(taskId)).toBe(false);
	});

	it("another key's tasks/get or tasks/cancel of an upstream's task is unknown (-32602) and never reaches it; the task goes on for its own key", async () => {
		const server = await registerServer("modernTasking");
		const { key } = await createKey({ servers: [server] });
		const gate = upstreamGate("modernTasking");
		const taskId = String((await gateTask(server, key, gate)).result?.taskId);
		await gate.arrived();
		const logged = (await upstreamLog("modernTasking")).length;
		const other = await createKey({ servers: [server] });
		for (const method of ["tasks/get", "tasks/cancel", "tasks/update"]) {
			expect((await taskGet(`/mcp/${server}`, other.key, method, taskId)).error?.code).toBe(-32602);
		}
		expect(
			(await upstreamLog("modernTasking")).slice(logged).filter((entry) => entry.body?.method?.startsWith("tasks/")),
		).toEqual([]);
		expect((await gate.status()).cancelled).toBe(0);
		expect((await taskGet(`/mcp/${server}`, key, "tasks/get", taskId)).result?.status).toBe("working");
		expect((await taskGet(`/mcp/${server}`, key, "tasks/cancel", taskId)).result).toMatchObject({
			resultType: "complete",
		});
		await eventually(async () => (await gate.status()).cancelled === 1);
	});

	it("the same id on another endpoint of the same key is unknown: it is bound to the endpoint that made it", async () => {
		const server = await registerServer("modernTasking");
		const second = await registerServer("modernTasking");
		const { key } = await createKey({ servers: [server, second] });
		const gate = upstreamGate("modernTasking");
		const taskId = String((await gateTask(server, key, gate)).result?.taskId);
		expect((await taskGet(`/mcp/${second}`, key, "tasks/get", taskId)).error?.code).toBe(-32602);
		expect((await taskGet(`/mcp/${server}`, key, "tasks/get", taskId)).result?.status).toBe("working");
		await gate.release();
	});
});
