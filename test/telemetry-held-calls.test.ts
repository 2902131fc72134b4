import { runInDurableObject } from "cloudflare:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ElicitRequestSchema, type ElicitResult } from "@modelcontextprotocol/sdk/types.js";
import { beforeEach, describe, expect, it } from "vitest";
import { eventually } from "./support/eventually.ts";
import { admin, connectClient, createKey, openSession, rpc, uniqueName } from "./support/gateway.ts";
import { testPolicies, uniqueArgs, waitingFor } from "./support/held-calls.ts";
import { GATEWAY_OTLP_TENANT, otlpMetrics, resetOtlp } from "./support/otlp.ts";
import { manualTime, sessionObject } from "./support/session-object.ts";
import { toolCallsOf, upstreamUrl } from "./support/upstreams.ts";

/**
 * Held calls' refusals in `mcp_gateway.refusals` (decision 0126): a `confirm`
 * policy's caller who does not confirm, and a client that cannot be asked,
 * and an `approve` policy's call an approver denies or nobody decides in time,
 * are counted as a policy's deny is, each under a kind of its own. The question is asked
 * in the SessionDO, which exports to this project's gateway tenant; a ping in
 * the session flushes what the object counted after its last request. Each
 * test starts with the tenant emptied, so the counts are its own.
 */

beforeEach(async () => {
	await resetOtlp(GATEWAY_OTLP_TENANT);
});

const policy = testPolicies("confirm-counted");

/** A server of its own with a confirm (or approve) policy on `add`, and a key for it. */
async function confirmingServer(effect: "confirm" | "approve" = "confirm"): Promise<{ server: string; key: string }> {
	const server = uniqueName("confirm-counted");
	expect((await admin("PUT", `/servers/${server}`, { url: upstreamUrl("beta") })).status).toBe(201);
	await policy({
		expression: 'tool.name == "add"',
		effect,
		applies: { servers: [server] },
		...(effect === "approve" ? { approvalTimeoutSeconds: 30 } : {}),
	});
	return { server, key: (await createKey({ servers: [server] })).key };
}

/** A 2025-11-25 SDK client that declares form elicitation and answers every question with `answer`. */
async function answering(server: string, key: string, answer: ElicitResult): Promise<Client> {
	const { client } = await connectClient(`/mcp/${server}`, key, {
		capabilities: { elicitation: { form: {} } },
		setup: (peer) => peer.setRequestHandler(ElicitRequestSchema, async () => answer),
	});
	return client;
}

/** The refusals counted since the test began in the gateway tenant, by kind (DELTA points: summed). */
async function refusalsByKind(): Promise<Record<string, number>> {
	const totals: Record<string, number> = {};
	for (const metric of await otlpMetrics(GATEWAY_OTLP_TENANT)) {
		if (metric.name !== "mcp_gateway.refusals") continue;
		for (const point of metric.points) {
			const kind = String(point.attributes["mcp_gateway.refusal.kind"]);
			totals[kind] = (totals[kind] ?? 0) + (point.value ?? 0);
		}
	}
	return totals;
}

/** Waits until `kind` has been counted at least `count` times, pinging the session so that it flushes. */
async function countedAtLeast(client: Client, kind: string, count: number): Promise<Record<string, number>> {
	return await eventually(async () => {
		const totals = await refusalsByKind();
		if ((totals[kind] ?? 0) >= count) return totals;
		await client.ping();
		return undefined;
	}, `${count} refusals of kind ${kind}`);
}

describe("a confirmation the caller does not give is a refusal in mcp_gateway.refusals", () => {
	it("declined and cancelled confirmations are each counted with kind confirm_declined; an accepted one is not; nothing refused reaches the upstream", async () => {
		const { server, key } = await confirmingServer();
		// Accepted first: had it been counted, its count would be exported no later than the refusals after it.
		const accepting = await answering(server, key, { action: "accept", content: { confirm: true } });
		const accepted = uniqueArgs(5);
		await accepting.callTool({ name: "add", arguments: accepted });
		expect(await toolCallsOf("beta", "add", accepted)).toHaveLength(1);
		await accepting.close();
		let last: Client | undefined;
		for (const action of ["decline", "cancel"] as const) {
			const client = await answering(server, key, { action });
			const args = uniqueArgs(5);
			const refused = await client.callTool({ name: "add", arguments: args }).catch((error: unknown) => error);
			expect(String(refused)).toMatch(/was not confirmed, so the gateway did not send it/);
			expect(await toolCallsOf("beta", "add", args)).toEqual([]);
			last = client;
		}
		if (!last) throw new Error("no client");
		const totals = await countedAtLeast(last, "confirm_declined", 2);
		expect(totals.confirm_declined).toBe(2);
		expect(totals.confirm_unavailable).toBeUndefined();
		await last.close();
	});

	it("a client that cannot answer elicitations is counted with kind confirm_unavailable", async () => {
		const { server, key } = await confirmingServer();
		const { client } = await connectClient(`/mcp/${server}`, key);
		const args = uniqueArgs(5);
		const refused = await client.callTool({ name: "add", arguments: args }).catch((error: unknown) => error);
		expect(String(refused)).toMatch(/requires a confirmation of each call of 'add'.*cannot answer elicitations/);
		expect(await toolCallsOf("beta", "add", args)).toEqual([]);
		const totals = await countedAtLeast(client, "confirm_unavailable", 1);
		expect(totals.confirm_unavailable).toBe(1);
		expect(totals.confirm_declined).toBeUndefined();
		await client.close();
	});
});

describe("a call no approver lets through is a refusal in mcp_gateway.refusals", () => {
	it("a denied approval is counted with kind approval_denied and one nobody decided in time with approval_timed_out; nothing reaches the upstream", async () => {
		const { server, key } = await confirmingServer("approve");
		const path = `/mcp/${server}`;
		const sessionId = await openSession(path, key);
		const stub = await sessionObject(sessionId);
		const { clock, timers } = await manualTime(stub);
		const call = (id: number, args: Record<string, unknown>) =>
			rpc(path, key, sessionId, { jsonrpc: "2.0", id, method: "tools/call", params: { name: "add", arguments: args } });

		const denied = uniqueArgs(5);
		const deniedReply = call(1, denied);
		expect((await admin("POST", `/approvals/${(await waitingFor(denied)).id}`, { decision: "deny" })).status).toBe(200);
		expect(((await (await deniedReply).json()) as { error?: { message: string } }).error?.message).toMatch(
			/An approver denied the call of 'add'/,
		);

		const unanswered = uniqueArgs(5);
		const unansweredReply = call(2, unanswered);
		await waitingFor(unanswered);
		clock.advance(30_000);
		await runInDurableObject(stub, () => timers.runDue());
		expect(((await (await unansweredReply).json()) as { error?: { message: string } }).error?.message).toMatch(
			/No approver decided the call of 'add'/,
		);

		expect(await toolCallsOf("beta", "add", denied)).toEqual([]);
		expect(await toolCallsOf("beta", "add", unanswered)).toEqual([]);
		const totals = await eventually(async () => {
			const counted = await refusalsByKind();
			if ((counted.approval_denied ?? 0) >= 1 && (counted.approval_timed_out ?? 0) >= 1) return counted;
			await (await rpc(path, key, sessionId, { jsonrpc: "2.0", id: 9, method: "ping" })).body?.cancel();
			return undefined;
		}, "an approval_denied and an approval_timed_out refusal");
		expect(totals.approval_denied).toBe(1);
		expect(totals.approval_timed_out).toBe(1);
	});
});
