/**
 * The policy stage of `npm run bench`: what one tool policy costs a
 * `tools/call`. The goal: one compiled expression costs a call
 * nothing measurable ("within noise of no policy").
 *
 * The bench's 2025 upstream is registered twice more, as `bench-plain` (no
 * policy applies) and `bench-policy`, where one allow policy applies and is
 * evaluated on every call. Three 2025-11-25 sessions through
 * `/mcp/<server>` with the same raw client: the policy's, one on
 * `bench-plain`, and a second one on `bench-plain`, the baseline measured
 * against itself, which is how noise is judged (report-policy.ts). Calls
 * alternate one by one between the three sessions, their order rotated each
 * call, so that drift of the machine falls on all three alike.
 */

import { performance } from "node:perf_hooks";
import { delay } from "../processes.ts";
import { admin, type Gateway } from "./gateway-admin.ts";
import { alternatingEchoes, LEGACY_VERSION, RawClient, type RawTarget } from "./modern.ts";
import { CALL_TIMEOUT_MS, PLAN } from "./plan.ts";
import { POLICY_TARGET_IDS, type PolicyResults, type PolicyTargetId } from "./results.ts";
import { log } from "./run-log.ts";

/** The server no policy applies to: the baseline. */
export const PLAIN_SERVER = "bench-plain";
/** The same upstream with one policy that applies to every call. */
export const POLICY_SERVER = "bench-policy";
/** The tool the policy refuses, one the upstream has: its absence from the list proves the policy is applied. */
const REFUSED_TOOL = "fail";
/**
 * The kind of policy: a name rule and a principal rule, one allow.
 * `fail` stands where a deployment would write `delete_`, so that the stage
 * can see the policy refuse a tool the upstream really has.
 */
export const POLICY = {
	name: "bench-one-policy",
	expression: `!tool.name.startsWith("${REFUSED_TOOL}") && principal.kind == "key"`,
	effect: "allow",
	applies: { servers: [POLICY_SERVER] },
} as const;

/** The stage's clients, each with its own session, or why it could not be set up. */
export type PolicyStage = { clients: Record<PolicyTargetId, RawClient> } | { error: string };

/** Registers both servers, the policy and a key; opens the three sessions and checks what each lists. */
export async function setUpPolicyStage(gateway: Gateway, upstreamUrl: string): Promise<PolicyStage> {
	await admin(gateway, "PUT", `/servers/${PLAIN_SERVER}`, { url: upstreamUrl });
	await admin(gateway, "PUT", `/servers/${POLICY_SERVER}`, { url: upstreamUrl });
	const { name, ...policy } = POLICY;
	await admin(gateway, "PUT", `/policies/${name}`, policy);
	const { key } = await admin<{ key: string }>(gateway, "POST", "/keys", {
		name: "bench-policy",
		servers: [PLAIN_SERVER, POLICY_SERVER],
	});
	const target = (id: PolicyTargetId, server: string): RawTarget => ({
		id,
		url: `${gateway.url}/mcp/${server}`,
		era: LEGACY_VERSION,
		headers: { authorization: `Bearer ${key}` },
	});
	const targets: Record<PolicyTargetId, RawTarget> = {
		plain: target("plain", PLAIN_SERVER),
		plainAgain: target("plainAgain", PLAIN_SERVER),
		policy: target("policy", POLICY_SERVER),
	};
	const started = performance.now();
	const clients = {} as Record<PolicyTargetId, RawClient>;
	for (const id of POLICY_TARGET_IDS) {
		clients[id] = await RawClient.open(targets[id], CALL_TIMEOUT_MS);
		await listsAsThePolicySays(clients[id], id === "policy");
	}
	log(
		`policy stage: ${POLICY_SERVER} lists no ${REFUSED_TOOL} (${POLICY.name} applies), ${PLAIN_SERVER} does (${(performance.now() - started).toFixed(0)} ms)`,
	);
	return { clients };
}

/**
 * Policies reach an isolate within its cache's lifetime (ENDPOINT_CACHE_TTL_SECONDS,
 * 10 s by default): the stage is set up before any other request loads them, and
 * waits out that lifetime only when something did.
 */
const POLICY_ARRIVAL_MS = 15_000;

async function listsAsThePolicySays(client: RawClient, governed: boolean): Promise<void> {
	const deadline = performance.now() + POLICY_ARRIVAL_MS;
	for (;;) {
		const tools = await client.toolNames();
		if (tools.includes("echo") && tools.includes(REFUSED_TOOL) !== governed) return;
		if (performance.now() > deadline) {
			throw new Error(
				`${client.target.id}: tools/list still answers ${tools.join(", ")} after ${POLICY_ARRIVAL_MS / 1000} s, not what ${POLICY.name} should leave`,
			);
		}
		await delay(250);
	}
}

export function newPolicyResults(stage: PolicyStage): PolicyResults | { error: string } {
	if ("error" in stage) return stage;
	return { expression: POLICY.expression, rounds: [] };
}

export async function warmUpPolicyStage(stage: PolicyStage): Promise<void> {
	if ("error" in stage) return;
	for (let i = 0; i < PLAN.warmupCalls; i++) {
		for (const id of POLICY_TARGET_IDS) await stage.clients[id].echo();
	}
}

/** PLAN.latencyCalls calls per session, alternating between the sessions call by call. */
export async function measurePolicyRound(
	stage: PolicyStage,
	results: PolicyResults | { error: string },
	round: number,
): Promise<void> {
	if ("error" in stage || "error" in results) return;
	const samples = await alternatingEchoes(stage.clients, POLICY_TARGET_IDS, round, PLAN.latencyCalls);
	results.rounds.push(samples);
}

export async function closePolicyStage(stage: PolicyStage): Promise<void> {
	if ("error" in stage) return;
	for (const client of Object.values(stage.clients)) await client.close();
}
