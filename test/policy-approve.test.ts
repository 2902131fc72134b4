import { exports } from "cloudflare:workers";
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from "@modelcontextprotocol/client";
import { afterEach, describe, expect, it } from "vitest";
import { compilePolicies, policyVerdict } from "../src/governance/policies.ts";
import type { PolicyRecord } from "../src/registry/policy-records.ts";
import { admin, BASE, connectClient, createKey, uniqueName } from "./support/gateway.ts";
import { MODERN } from "./support/modern.ts";
import { toolCallsOf, upstreamUrl } from "./support/upstreams.ts";

/**
 * `effect: "approve"` (decision 0117): a call an approve policy holds is
 * decided by an approver, not its caller; deny > approve > confirm > allow.
 * SDK clients of both eras call; the upstream's whole log says what reached
 * it. Every policy names its test's own server (policies are global) and is
 * deleted after it.
 */

const made: string[] = [];
afterEach(async () => {
	for (const name of made.splice(0)) await admin("DELETE", `/policies/${name}`);
});

async function policy(body: Record<string, unknown>): Promise<string> {
	const name = uniqueName("approve");
	const response = await admin("PUT", `/policies/${name}`, body);
	if (response.status !== 201) throw new Error(`policy: ${await response.text()}`);
	made.push(name);
	return name;
}

async function server(): Promise<string> {
	const name = uniqueName("approving");
	const response = await admin("PUT", `/servers/${name}`, { url: upstreamUrl("beta") });
	if (response.status !== 201) throw new Error(`server: ${await response.text()}`);
	return name;
}

/** Arguments no other test sends, so this test's call can be found in the shared upstream's log. */
function uniqueArgs(): { a: number; b: number } {
	return { a: 1_000_000 + Math.floor(Math.random() * 1_000_000_000), b: 2 };
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

const NOT_APPROVED = /requires an approver's approval of each call of 'add', and none was given; nothing was sent/;

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

describe("a call an approve policy holds is never sent unapproved", () => {
	it("2025-11-25 client: refused with a sentence naming the policy; nothing reaches the upstream", async () => {
		const name = await server();
		const approving = await policy({
			expression: 'tool.name == "add"',
			effect: "approve",
			applies: { servers: [name] },
		});
		const key = await createKey({ servers: [name] });
		const { client } = await connectClient(`/mcp/${name}`, key.key);
		const args = uniqueArgs();
		const refused = await client.callTool({ name: "add", arguments: args }).catch((error: unknown) => error);
		expect(String(refused)).toMatch(NOT_APPROVED);
		expect(String(refused)).toContain(`policy '${approving}'`);
		expect(await toolCallsOf("beta", "add", args)).toEqual([]);
		await client.close();
	});

	it("2026-07-28 client: refused with a sentence naming the policy; nothing reaches the upstream", async () => {
		const name = await server();
		await policy({ expression: 'tool.name == "add"', effect: "approve", applies: { servers: [name] } });
		const key = await createKey({ servers: [name] });
		const client = await modernClient(`/mcp/${name}`, key.key);
		const args = uniqueArgs();
		const refused = await client.callTool({ name: "add", arguments: args }).catch((error: unknown) => error);
		expect(String(refused)).toMatch(NOT_APPROVED);
		expect(await toolCallsOf("beta", "add", args)).toEqual([]);
		await client.close();
	});
});
