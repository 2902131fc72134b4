import { runInDurableObject } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from "@modelcontextprotocol/client";
import { describe, expect, it } from "vitest";
import { compilePolicies, policyVerdict } from "../src/governance/policies.ts";
import type { PolicyRecord } from "../src/registry/policy-records.ts";
import { eventually } from "./support/eventually.ts";
import { admin, BASE, connectClient, createKey, openSession, rpc, uniqueName } from "./support/gateway.ts";
import { type ListedApproval, testPolicies, uniqueArgs, waitingFor } from "./support/held-calls.ts";
import { ENVELOPE, MODERN, modernPost, textOf } from "./support/modern.ts";
import { manualTime, objectMadeBy, sessionObject } from "./support/session-object.ts";
import { TASKS_CLIENT } from "./support/tasks.ts";
import { registerServer, toolCallsOf, upstreamUrl } from "./support/upstreams.ts";

/**
 * `effect: "approve"` (decision 0117): a call an approve policy holds is
 * decided by an approver, not its caller; deny > approve > confirm > allow.
 * SDK clients of both eras call; the upstream's whole log says what reached
 * it. Every policy names its test's own server (policies are global) and is
 * deleted after it.
 */

const policy = testPolicies("approve");

async function server(): Promise<string> {
	const name = uniqueName("approving");
	const response = await admin("PUT", `/servers/${name}`, { url: upstreamUrl("beta") });
	if (response.status !== 201) throw new Error(`server: ${await response.text()}`);
	return name;
}

async function modernClient(path: string, key: string): Promise<ModernClient> {
	const client = new ModernClient(
		{ name: "approve-test", version: "2.0.0" },
		{ capabilities: {}, versionNegotiation: { mode: { pin: MODERN } } },
	);
	await client.connect(
		new ModernTransport(new URL(`${BASE}${path}`), {
			fetch: (url, init) => exports.default.fetch(new Request(url, init)),
			requestInit: { headers: { authorization: `Bearer ${key}` } },
		}),
	);
	return client;
}

const DENIED =
	/An approver denied the call of 'add' on server '[^']+' \(policy '[^']+'\): not today\. Nothing was sent\./;
const TIMED_OUT =
	/No approver decided the call of 'add' on server '[^']+' within 30 s \(policy '[^']+'\), so the gateway did not send it/;

function decide(id: string, decision: "approve" | "deny", reason?: string): Promise<Response> {
	return admin("POST", `/approvals/${id}`, reason === undefined ? { decision } : { decision, reason });
}

describe("policy verdicts: deny > approve > confirm > allow", () => {
	const record = (
		name: string,
		effect: PolicyRecord["effect"],
		expression: string,
		approvalTimeoutSeconds?: number,
	): PolicyRecord => ({
		name,
		effect,
		expression,
		applies: null,
		approvalTimeoutSeconds: approvalTimeoutSeconds ?? null,
		priority: 100,
		createdAt: 0,
		updatedAt: 0,
	});
	const request = {
		principal: {
			kind: "key" as const,
			id: "key_abcdefghijkl",
			subject: null,
			email: null,
			groups: [],
			rule: null,
			keyName: null,
		},
		server: "s",
		virtualServer: null,
		tool: { name: "delete_repo", realName: "delete_repo", annotations: {} },
		method: "tools/call",
		now: 0,
	};

	it("an approve that holds names the first approve policy and its wait (600 s by default); it wins over a confirm", () => {
		const approving = compilePolicies([
			record("b-ok", "approve", "true", 30),
			record("a-ok", "approve", "true"),
			record("ask", "confirm", "true"),
		]);
		expect(policyVerdict(approving, request)).toEqual({
			allowed: true,
			approve: { policy: "a-ok", timeoutMs: 600_000 },
		});
		const timed = compilePolicies([record("ok", "approve", "true", 30)]);
		expect(policyVerdict(timed, request)).toEqual({ allowed: true, approve: { policy: "ok", timeoutMs: 30_000 } });
	});

	it("a deny that holds refuses a call an approve would hold; an approve that does not hold changes nothing", () => {
		const denying = compilePolicies([record("ok", "approve", "true"), record("no", "deny", "true")]);
		expect(policyVerdict(denying, request)).toEqual({ allowed: false, policy: "no" });
		const notHolding = compilePolicies([record("ok", "approve", "false")]);
		expect(policyVerdict(notHolding, request)).toEqual({ allowed: true });
	});

	it("an approve that holds does not satisfy an allow policy that does not", () => {
		const compiled = compilePolicies([record("ok", "approve", "true"), record("only", "allow", "false")]);
		expect(policyVerdict(compiled, request)).toEqual({ allowed: false, policy: "only" });
	});
});

describe("PUT /admin/policies accepts effect approve", () => {
	it("stores an approve policy with its approvalTimeoutSeconds, and refuses a wait out of bounds or not whole", async () => {
		const name = await policy({
			expression: "true",
			effect: "approve",
			approvalTimeoutSeconds: 120,
			applies: { servers: [await server()] },
		});
		const read = (await (await admin("GET", `/policies/${name}`)).json()) as Record<string, unknown>;
		expect(read.effect).toBe("approve");
		expect(read.approvalTimeoutSeconds).toBe(120);
		for (const approvalTimeoutSeconds of [0, 86_401, 1.5]) {
			const refused = await admin("PUT", `/policies/${uniqueName("approve")}`, {
				expression: "true",
				effect: "approve",
				approvalTimeoutSeconds,
			});
			expect(refused.status).toBe(400);
			expect(await refused.text()).toContain("approvalTimeoutSeconds");
		}
	});

	it("refuses an unknown effect with a sentence naming the four", async () => {
		const refused = await admin("PUT", `/policies/${uniqueName("approve")}`, { expression: "true", effect: "ask" });
		expect(refused.status).toBe(400);
		expect(await refused.text()).toContain('must be \\"allow\\", \\"deny\\", \\"confirm\\" or \\"approve\\"');
	});
});

describe("a 2025-11-25 client without tasks support waits on its request", () => {
	it("approved: listed with who, server, tool, arguments and its wait; the call is sent once and its result answers the request; a second decision is refused with 409 and sends nothing", async () => {
		const name = await server();
		const approving = await policy({
			expression: 'tool.name == "add"',
			effect: "approve",
			approvalTimeoutSeconds: 120,
			applies: { servers: [name] },
		});
		const key = await createKey({ servers: [name] });
		const { client } = await connectClient(`/mcp/${name}`, key.key);
		const args = uniqueArgs();
		const called = client.callTool({ name: "add", arguments: args });
		const waiting = await waitingFor(args);
		expect(waiting).toMatchObject({ policy: approving, principal: key.id, server: name, tool: "add" });
		expect(waiting.until - waiting.since).toBe(120_000);
		expect(await toolCallsOf("beta", "add", args)).toEqual([]);
		const approved = await decide(waiting.id, "approve");
		expect(approved.status).toBe(200);
		expect(await approved.json()).toEqual({ id: waiting.id, status: "approved" });
		expect(textOf((await called) as object)).toBe(String(args.a + args.b));
		const again = await decide(waiting.id, "approve");
		expect(again.status).toBe(409);
		expect(await again.text()).toContain("approved already");
		expect(await toolCallsOf("beta", "add", args)).toHaveLength(1);
		const listed = (await (await admin("GET", "/approvals")).json()) as { approvals: ListedApproval[] };
		expect(listed.approvals.map((entry) => entry.id)).not.toContain(waiting.id);
		await client.close();
	});

	it("denied: the request fails with the approver's reason and nothing reaches the upstream; approving afterwards is refused with 409", async () => {
		const name = await server();
		await policy({ expression: 'tool.name == "add"', effect: "approve", applies: { servers: [name] } });
		const key = await createKey({ servers: [name] });
		const { client } = await connectClient(`/mcp/${name}`, key.key);
		const args = uniqueArgs();
		const called = client.callTool({ name: "add", arguments: args }).catch((error: unknown) => error);
		const waiting = await waitingFor(args);
		expect((await decide(waiting.id, "deny", "not today")).status).toBe(200);
		expect(String(await called)).toMatch(DENIED);
		expect((await decide(waiting.id, "approve")).status).toBe(409);
		expect(await toolCallsOf("beta", "add", args)).toEqual([]);
		await client.close();
	});

	it("an unknown approval id is 404, a decision other than approve or deny is 400", async () => {
		const unknown = await decide(`${"a".repeat(64)}.${"b".repeat(22)}`, "approve");
		expect(unknown.status).toBe(404);
		expect((await admin("POST", "/approvals/nothing", { decision: "approve" })).status).toBe(404);
		const bad = await admin("POST", `/approvals/${"a".repeat(64)}.${"b".repeat(22)}`, { decision: "maybe" });
		expect(bad.status).toBe(400);
		expect(await bad.text()).toContain('must be \\"approve\\" or \\"deny\\"');
	});
});

describe("nobody decides in time (2025-11-25, raw, the session on manual timers)", () => {
	it("once approvalTimeoutSeconds pass the request fails saying so, nothing reaches the upstream, and a late approval is refused with 409", async () => {
		const name = await server();
		await policy({
			expression: 'tool.name == "add"',
			effect: "approve",
			approvalTimeoutSeconds: 30,
			applies: { servers: [name] },
		});
		const key = await createKey({ servers: [name] });
		const path = `/mcp/${name}`;
		const sessionId = await openSession(path, key.key);
		const stub = await sessionObject(sessionId);
		const { clock, timers } = await manualTime(stub);
		const args = uniqueArgs();
		const call = { jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "add", arguments: args } };
		const answered = rpc(path, key.key, sessionId, call);
		const waiting = await waitingFor(args);
		clock.advance(30_000);
		await runInDurableObject(stub, () => timers.runDue());
		const reply = (await (await answered).json()) as { id: number; error?: { message: string } };
		expect(reply.id).toBe(7);
		expect(reply.error?.message).toMatch(TIMED_OUT);
		const late = await decide(waiting.id, "approve");
		expect(late.status).toBe(409);
		expect(await toolCallsOf("beta", "add", args)).toEqual([]);
	});
});

describe("a caller cancels a call waiting for an approver (2025-11-25, raw)", () => {
	it("the wait ends, the request is answered saying so, nothing reaches the upstream, and a later approval is refused with 409", async () => {
		const name = await server();
		await policy({ expression: 'tool.name == "add"', effect: "approve", applies: { servers: [name] } });
		const key = await createKey({ servers: [name] });
		const path = `/mcp/${name}`;
		const sessionId = await openSession(path, key.key);
		const args = uniqueArgs();
		const call = { jsonrpc: "2.0", id: 9, method: "tools/call", params: { name: "add", arguments: args } };
		const answered = rpc(path, key.key, sessionId, call);
		const waiting = await waitingFor(args);
		const cancelled = {
			jsonrpc: "2.0",
			method: "notifications/cancelled",
			params: { requestId: 9, reason: "changed my mind" },
		};
		await (await rpc(path, key.key, sessionId, cancelled)).body?.cancel();
		const reply = (await (await answered).json()) as { id: number; error?: { message: string } };
		expect(reply.error?.message).toBe(
			"The call of 'add' was cancelled before an approver decided it; nothing was sent.",
		);
		const late = await decide(waiting.id, "approve");
		expect(late.status).toBe(409);
		expect(await late.text()).toContain("gone already");
		expect(await toolCallsOf("beta", "add", args)).toEqual([]);
	});
});

describe("a 2025-11-25 client with tasks support: the gateway holds the call as a task", () => {
	for (const decision of ["approve", "deny"] as const) {
		it(
			decision === "approve"
				? "approved: the task works, saying it waits for an approver, then completes with the call's result, sent once"
				: "denied: the task fails with the reason and nothing reaches the upstream",
			async () => {
				const name = await server();
				await policy({ expression: 'tool.name == "add"', effect: "approve", applies: { servers: [name] } });
				const key = await createKey({ servers: [name] });
				const { client } = await connectClient(`/mcp/${name}`, key.key, { capabilities: TASKS_CLIENT });
				await client.listTools();
				const args = uniqueArgs();
				const seen: string[] = [];
				let outcome: unknown;
				let taskId = "";
				const streamed = (async () => {
					for await (const message of client.experimental.tasks.callToolStream({ name: "add", arguments: args })) {
						seen.push(message.type === "taskStatus" ? message.task.status : message.type);
						if (message.type === "taskCreated") taskId = message.task.taskId;
						if (message.type === "result") outcome = message.result;
						if (message.type === "error") outcome = message.error;
					}
				})();
				const waiting = await waitingFor(args);
				expect(seen[0]).toBe("taskCreated");
				// While it waits the task is working, its status message naming the approval.
				const held = await eventually(async () => {
					const task = await client.experimental.tasks.getTask(taskId);
					return task.statusMessage?.includes(waiting.id) ? task : null;
				}, "the task's status message");
				expect(held.status).toBe("working");
				expect(held.statusMessage).toContain("Waiting for an approver's decision on the call of 'add'");
				expect((await decide(waiting.id, decision, "not today")).status).toBe(200);
				await streamed;
				if (decision === "approve") {
					expect(textOf(outcome as object)).toBe(String(args.a + args.b));
					expect(await toolCallsOf("beta", "add", args)).toHaveLength(1);
				} else {
					expect(String(outcome)).toContain(`Task ${taskId} failed`);
					const task = await client.experimental.tasks.getTask(taskId);
					expect(task.status).toBe("failed");
					expect(task.statusMessage).toMatch(DENIED);
					expect(await toolCallsOf("beta", "add", args)).toEqual([]);
				}
				expect((await decide(waiting.id, "approve")).status).toBe(409);
				expect(await toolCallsOf("beta", "add", args)).toHaveLength(decision === "approve" ? 1 : 0);
				await client.close();
			},
		);
	}
});

describe("a caller cancels a task waiting for an approver (2025-11-25)", () => {
	it("tasks/cancel ends the wait: the task is cancelled, nothing reaches the upstream, and a later approval is refused with 409", async () => {
		const name = await server();
		await policy({ expression: 'tool.name == "add"', effect: "approve", applies: { servers: [name] } });
		const key = await createKey({ servers: [name] });
		const { client } = await connectClient(`/mcp/${name}`, key.key, { capabilities: TASKS_CLIENT });
		await client.listTools();
		const args = uniqueArgs();
		let taskId = "";
		const streamed = (async () => {
			for await (const message of client.experimental.tasks.callToolStream({ name: "add", arguments: args })) {
				if (message.type === "taskCreated") taskId = message.task.taskId;
			}
		})().catch((error: unknown) => error);
		const waiting = await waitingFor(args);
		await eventually(() => taskId !== "", "the task created");
		await client.experimental.tasks.cancelTask(taskId);
		await streamed;
		expect((await client.experimental.tasks.getTask(taskId)).status).toBe("cancelled");
		// The wait ended with the cancellation: the session refuses, whether or not the registry has recorded it yet.
		const late = await decide(waiting.id, "approve");
		expect(late.status).toBe(409);
		expect(await late.text()).toMatch(/gone already|nothing waits for it any more/);
		expect(await toolCallsOf("beta", "add", args)).toEqual([]);
		await client.close();
	});
});

describe("a 2026-07-28 client waits on its request (the call goes to a session)", () => {
	for (const decision of ["approve", "deny"] as const) {
		it(
			decision === "approve"
				? "approved: the call is sent once and its result answers the request"
				: "denied: the request fails with the reason and nothing reaches the upstream",
			async () => {
				const name = await server();
				await policy({ expression: 'tool.name == "add"', effect: "approve", applies: { servers: [name] } });
				const key = await createKey({ servers: [name] });
				const client = await modernClient(`/mcp/${name}`, key.key);
				const args = uniqueArgs();
				const called = client.callTool({ name: "add", arguments: args }).catch((error: unknown) => error);
				const waiting = await waitingFor(args);
				expect((await decide(waiting.id, decision, "not today")).status).toBe(200);
				const outcome = await called;
				if (decision === "approve") {
					expect(textOf(outcome as object)).toBe(String(args.a + args.b));
					expect(await toolCallsOf("beta", "add", args)).toHaveLength(1);
				} else {
					expect(String(outcome)).toMatch(DENIED);
					expect(await toolCallsOf("beta", "add", args)).toEqual([]);
				}
				expect((await decide(waiting.id, "deny")).status).toBe(409);
				await client.close();
			},
		);
	}
});

/** The envelope of a 2026-07-28 client that declares the tasks extension. */
const TASKING_ENVELOPE = {
	...ENVELOPE,
	"io.modelcontextprotocol/clientCapabilities": { extensions: { "io.modelcontextprotocol/tasks": {} } },
};

async function modernSend(path: string, key: string, body: Record<string, unknown>, name: string) {
	const response = await modernPost(path, key, body, { "mcp-name": name });
	return (await response.json()) as { result?: Record<string, unknown>; error?: { message: string } };
}

describe("a 2026-07-28 client with the tasks extension: the held call becomes a task the gateway holds", () => {
	for (const decision of ["approve", "deny"] as const) {
		it(
			decision === "approve"
				? "approved: the task works while it waits, then completes with the call's result, sent once"
				: "denied: the task fails with the reason and nothing reaches the upstream",
			async () => {
				const name = await registerServer("modern");
				await policy({
					expression: 'tool.name == "echo" && arguments.text.startsWith("held-")',
					effect: "approve",
					applies: { servers: [name] },
				});
				const { key } = await createKey({ servers: [name] });
				const path = `/mcp/${name}`;
				const echo = (id: string, text: string) => ({
					id,
					method: "tools/call",
					params: { name: "echo", arguments: { text }, _meta: TASKING_ENVELOPE },
				});
				// A first call no policy holds makes the session that holds this client's calls.
				const made = await objectMadeBy(() => modernSend(path, key, echo("first", "before"), "echo"));
				const { stub, clock, timers } = made;
				const args = { text: `held-${uniqueArgs().a}` };
				const answer = modernSend(path, key, echo("held", args.text), "echo");
				const waiting = await waitingFor(args);
				// The call is promoted to a task while it waits.
				await eventually(() => timers.count > 0);
				clock.advance(5_000);
				await runInDurableObject(stub, () => timers.runDue());
				const created = (await answer).result ?? {};
				expect(created).toMatchObject({ resultType: "task", status: "working" });
				const taskId = String(created.taskId);
				const taskGet = () =>
					modernSend(
						path,
						key,
						{ id: "get", method: "tasks/get", params: { taskId, inputResponses: {}, _meta: TASKING_ENVELOPE } },
						taskId,
					);
				expect((await taskGet()).result?.status).toBe("working");
				expect((await decide(waiting.id, decision, "not today")).status).toBe(200);
				const ended = await eventually(async () => {
					const task = (await taskGet()).result;
					return task?.status === "working" ? null : task;
				}, "the task ended");
				if (decision === "approve") {
					expect(ended.status).toBe("completed");
					expect(JSON.stringify(ended)).toContain(args.text);
					expect(await toolCallsOf("modern", "echo", args)).toHaveLength(1);
				} else {
					expect(ended.status).toBe("failed");
					expect(JSON.stringify(ended)).toMatch(/An approver denied the call of 'echo'/);
					expect(await toolCallsOf("modern", "echo", args)).toEqual([]);
				}
				expect((await decide(waiting.id, "approve")).status).toBe(409);
				expect(await toolCallsOf("modern", "echo", args)).toHaveLength(decision === "approve" ? 1 : 0);
			},
		);
	}
});
