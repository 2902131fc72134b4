/**
 * The guards stage of `npm run bench` (issue 38): what a response guard costs
 * a `tools/call` with a 64 KiB result, and what a `confirm` policy whose
 * question the client always accepts costs a `tools/call echo`, each against
 * the same call without.
 *
 * The bench's 2025 upstream is registered three times more: `bench-unguarded`
 * (no guard, no policy: the baseline of both), `bench-guarded`, where one
 * response guard (`detect: ["secrets", "email"]`, `action: "redact"`) reads
 * every result, and `bench-confirmed`, where one `confirm` policy holds every
 * `echo`. The 64 KiB result is the upstream's `blob` (64 Ki of `x`), in which
 * the guard finds nothing: the figure is the cost of reading the whole result
 * through both detectors and framing it again, not of redacting. Four
 * 2025-11-25 sessions through `/mcp/<server>` with the SDK client, all
 * declaring form elicitation and accepting every question (only the confirm
 * policy's session is ever asked). The calls alternate one by one within each
 * pair (no guard and guard, no policy and confirm), their order rotated each
 * call, so that drift of the machine falls on both alike; then, per round, a
 * block of calls on each session alone, around which the gateway's processes'
 * CPU time is read.
 */

import { performance } from "node:perf_hooks";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { delay, groupCpuMs } from "../processes.ts";
import { admin, type Gateway } from "./gateway-admin.ts";
import { BLOB_KIB, CALL_TIMEOUT_MS, PLAN } from "./plan.ts";
import { GUARDS_PAIRS, GUARDS_TARGET_IDS, type GuardsResults, type GuardsTargetId } from "./results.ts";
import { log } from "./run-log.ts";
import { rotated } from "./sessions.ts";

/** No guard, no policy: the baseline of both pairs. */
export const UNGUARDED_SERVER = "bench-unguarded";
/** The same upstream with one response guard. */
export const GUARDED_SERVER = "bench-guarded";
/** The same upstream with one confirm policy on `echo`. */
export const CONFIRMED_SERVER = "bench-confirmed";

/** The response guard: secrets and e-mail addresses redacted from every result of one server. */
export const GUARD = {
	name: "bench-response-guard",
	stage: "response",
	applies: { servers: [GUARDED_SERVER] },
	detect: ["secrets", "email"],
	action: "redact",
} as const;

/** A confirm policy on every `echo` of one server. */
export const CONFIRM_POLICY = {
	name: "bench-confirm",
	expression: 'tool.name == "echo"',
	effect: "confirm",
	applies: { servers: [CONFIRMED_SERVER] },
} as const;

const ECHO_TEXT = "bench";
/** What the guard must redact when it applies: the probe before measuring. */
const PROBE_TEXT = "write to bench@example.com";

/** One session of the stage: its SDK client, and how many questions it has been asked. */
interface GuardsSession {
	id: GuardsTargetId;
	client: Client;
	asked: number;
}

/** The stage's sessions, or why it could not be set up. */
export type GuardsStage = { sessions: Record<GuardsTargetId, GuardsSession> } | { error: string };

/** Registers the servers, the guard, the policy and a key; opens the four sessions and checks each applies as it should. */
export async function setUpGuardsStage(gateway: Gateway, upstreamUrl: string): Promise<GuardsStage> {
	for (const server of [UNGUARDED_SERVER, GUARDED_SERVER, CONFIRMED_SERVER]) {
		await admin(gateway, "PUT", `/servers/${server}`, { url: upstreamUrl });
	}
	const { name: guardName, ...guard } = GUARD;
	await admin(gateway, "PUT", `/guards/${guardName}`, guard);
	const { name: policyName, ...policy } = CONFIRM_POLICY;
	await admin(gateway, "PUT", `/policies/${policyName}`, policy);
	const { key } = await admin<{ key: string }>(gateway, "POST", "/keys", {
		name: "bench-guards",
		servers: [UNGUARDED_SERVER, GUARDED_SERVER, CONFIRMED_SERVER],
	});
	const serverOf: Record<GuardsTargetId, string> = {
		blobPlain: UNGUARDED_SERVER,
		blobGuarded: GUARDED_SERVER,
		echoPlain: UNGUARDED_SERVER,
		echoConfirmed: CONFIRMED_SERVER,
	};
	const started = performance.now();
	const sessions = {} as Record<GuardsTargetId, GuardsSession>;
	for (const id of GUARDS_TARGET_IDS) {
		sessions[id] = await openSession(id, `${gateway.url}/mcp/${serverOf[id]}`, key);
	}
	await untilArrived("the response guard redacts on bench-guarded", async () =>
		(await echoText(sessions.blobGuarded, PROBE_TEXT)).includes("[redacted:email]"),
	);
	await untilArrived("the confirm policy asks on bench-confirmed", async () => {
		const before = sessions.echoConfirmed.asked;
		await echo(sessions.echoConfirmed);
		return sessions.echoConfirmed.asked === before + 1;
	});
	if ((await echoText(sessions.blobPlain, PROBE_TEXT)) !== PROBE_TEXT) {
		throw new Error(`${UNGUARDED_SERVER} changed a result, yet no guard applies to it`);
	}
	for (const id of ["blobPlain", "echoPlain", "blobGuarded"] as const) {
		if (sessions[id].asked !== 0) throw new Error(`${id} was asked to confirm, yet no confirm policy applies to it`);
	}
	log(
		`guards stage: ${GUARD.name} redacts on ${GUARDED_SERVER}, ${CONFIRM_POLICY.name} asks on ${CONFIRMED_SERVER}, ${UNGUARDED_SERVER} does neither (${(performance.now() - started).toFixed(0)} ms)`,
	);
	return { sessions };
}

async function openSession(id: GuardsTargetId, url: string, key: string): Promise<GuardsSession> {
	const client = new Client(
		{ name: "mcp-edge-bench", version: "1.0.0" },
		{ capabilities: { elicitation: { form: {} } } },
	);
	const session: GuardsSession = { id, client, asked: 0 };
	client.setRequestHandler(ElicitRequestSchema, async () => {
		session.asked++;
		return { action: "accept", content: { confirm: true } };
	});
	const transport = new StreamableHTTPClientTransport(new URL(url), {
		requestInit: { headers: { authorization: `Bearer ${key}` } },
	});
	await client.connect(transport, { timeout: CALL_TIMEOUT_MS });
	return session;
}

/**
 * Guards and policies reach an isolate within its cache's lifetime (ENDPOINT_CACHE_TTL_SECONDS, 10 s
 * by default): the policy stage's requests may have loaded the lists just before these were written.
 */
const ARRIVAL_MS = 15_000;

async function untilArrived(what: string, arrived: () => Promise<boolean>): Promise<void> {
	const deadline = performance.now() + ARRIVAL_MS;
	while (!(await arrived())) {
		if (performance.now() > deadline) throw new Error(`after ${ARRIVAL_MS / 1000} s, still not so: ${what}`);
		await delay(250);
	}
}

function textOf(session: GuardsSession, tool: string, result: unknown): string {
	const { content, isError } = result as { content?: Array<{ type?: string; text?: string }>; isError?: boolean };
	const first = content?.[0];
	if (isError || first?.type !== "text" || first.text === undefined) {
		throw new Error(`${session.id}: unexpected result of ${tool}: ${JSON.stringify(result).slice(0, 300)}`);
	}
	return first.text;
}

async function echoText(session: GuardsSession, text: string): Promise<string> {
	const result = await session.client.callTool({ name: "echo", arguments: { text } }, undefined, {
		timeout: CALL_TIMEOUT_MS,
	});
	return textOf(session, "echo", result);
}

async function echo(session: GuardsSession): Promise<void> {
	const text = await echoText(session, ECHO_TEXT);
	if (text !== ECHO_TEXT) throw new Error(`${session.id}: echo answered ${JSON.stringify(text).slice(0, 300)}`);
}

/** The 64 KiB result, which must arrive whole and unchanged (the guard finds nothing in it). */
async function blob(session: GuardsSession): Promise<void> {
	const result = await session.client.callTool({ name: "blob", arguments: { kib: BLOB_KIB } }, undefined, {
		timeout: CALL_TIMEOUT_MS,
	});
	const text = textOf(session, "blob", result);
	if (text.length !== BLOB_KIB * 1024 || text !== "x".repeat(text.length)) {
		throw new Error(`${session.id}: blob answered ${text.length} characters, not ${BLOB_KIB} KiB of x`);
	}
}

/** The call each session makes; a confirmed echo must have been asked once. */
async function callOf(session: GuardsSession): Promise<void> {
	if (session.id === "blobPlain" || session.id === "blobGuarded") return await blob(session);
	const before = session.asked;
	await echo(session);
	const expected = session.id === "echoConfirmed" ? before + 1 : before;
	if (session.asked !== expected) {
		throw new Error(`${session.id}: asked ${session.asked - before} times for one call, not ${expected - before}`);
	}
}

export function newGuardsResults(stage: GuardsStage): GuardsResults | { error: string } {
	if ("error" in stage) return stage;
	const cpu = groupCpuMs([]) === null ? null : emptyCpu();
	return {
		guard: { detect: GUARD.detect, action: GUARD.action },
		expression: CONFIRM_POLICY.expression,
		rounds: [],
		cpu,
	};
}

function emptyCpu(): Record<GuardsTargetId, { calls: number; ms: number }> {
	return Object.fromEntries(GUARDS_TARGET_IDS.map((id) => [id, { calls: 0, ms: 0 }])) as Record<
		GuardsTargetId,
		{ calls: number; ms: number }
	>;
}

export async function warmUpGuardsStage(stage: GuardsStage): Promise<void> {
	if ("error" in stage) return;
	for (let i = 0; i < PLAN.warmupCalls; i++) {
		for (const id of GUARDS_TARGET_IDS) await callOf(stage.sessions[id]);
	}
}

/**
 * One round: PLAN.latencyCalls calls per session, alternating within each pair call by call; then
 * PLAN.blobCalls calls on each session alone, with the CPU time of the gateway's process group
 * (`gatewayGroup`: wrangler and workerd) read around them.
 */
export async function measureGuardsRound(
	stage: GuardsStage,
	results: GuardsResults | { error: string },
	round: number,
	gatewayGroup: number | null,
): Promise<void> {
	if ("error" in stage || "error" in results) return;
	const samples = Object.fromEntries(GUARDS_TARGET_IDS.map((id) => [id, [] as number[]])) as Record<
		GuardsTargetId,
		number[]
	>;
	for (const pair of rotated(GUARDS_PAIRS, round)) {
		for (let i = 0; i < PLAN.latencyCalls; i++) {
			for (const id of rotated([pair.baseline, pair.measured], round + i)) {
				const start = performance.now();
				await callOf(stage.sessions[id]);
				samples[id].push(performance.now() - start);
			}
		}
	}
	results.rounds.push(samples);
	if (results.cpu === null || gatewayGroup === null) return;
	for (const id of rotated(GUARDS_TARGET_IDS, round)) {
		const before = groupCpuMs([gatewayGroup]);
		for (let i = 0; i < PLAN.blobCalls; i++) await callOf(stage.sessions[id]);
		const after = groupCpuMs([gatewayGroup]);
		if (!before || !after) continue;
		results.cpu[id].calls += PLAN.blobCalls;
		results.cpu[id].ms += (after.get(gatewayGroup) ?? 0) - (before.get(gatewayGroup) ?? 0);
	}
}

export async function closeGuardsStage(stage: GuardsStage): Promise<void> {
	if ("error" in stage) return;
	for (const session of Object.values(stage.sessions)) await session.client.close();
}
