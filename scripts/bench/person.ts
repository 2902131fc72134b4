/**
 * The per-person credentials stage of `npm run bench`: what a 2026-07-28 call
 * costs on the stateless path when the upstream takes each person's own OAuth
 * token (`auth: {"type":"oauth"}`) rather than the operator's header. The
 * issue's goal: the person's token is read from the vault at most once per
 * isolate per token lifetime, so Durable Object requests per call ≤ 0.01.
 *
 * One OAuth upstream (scripts/bench/oauth-upstream.ts: the fixture's
 * `/mcp-modern`, SDK v2 behind the SDK's bearer check) is registered twice:
 * as `bench-oauth` with `auth: {"type":"oauth"}`, and as
 * `bench-oauth-operator` with an operator's `Authorization` header holding a
 * token the fixture issued for alice outside any client (its control route),
 * the baseline. An API key connects its account once, as a person does: its
 * first call answers with the connect link (`input_required`, a URL
 * elicitation), the scripted browser opens it and picks alice at the
 * upstream's own sign-in form. Then each round makes the same `tools/call
 * echo` against the three targets (direct with alice's token, the operator's
 * header, the key's own token), counting the gateway's Durable Object
 * requests and what the upstream received around each target's window.
 */

import { performance } from "node:perf_hooks";
import { z } from "zod";
import { Browser } from "../fixtures/browser.ts";
import { admin, type Gateway } from "./gateway-admin.ts";
import { addDifference, durableObjectRequests, MODERN_VERSION, RawClient, type RawTarget } from "./modern.ts";
import { CALL_TIMEOUT_MS, PLAN } from "./plan.ts";
import { PERSON_TARGET_IDS, type PersonConnect, type PersonResults, type PersonTargetId } from "./results.ts";
import { log } from "./run-log.ts";
import { rotated } from "./sessions.ts";

/** The OAuth upstream as an `oauth` server: each caller's own token. */
export const OAUTH_SERVER = "bench-oauth";
/** The same upstream with the operator's header: the baseline. */
export const OAUTH_OPERATOR_SERVER = "bench-oauth-operator";
/** Who the key connects as at the upstream's sign-in form (a demo user of the fixture). */
const PERSON = "alice";

/** The stage's targets once the key is connected, or why it could not be set up. */
export type PersonStage =
	| { origin: string; targets: Record<PersonTargetId, RawTarget>; connect: PersonConnect; tokenTtlS: number }
	| { error: string };

const StatsSchema = z.looseObject({
	registrations: z.number(),
	authorizations: z.number(),
	codeExchanges: z.number(),
	refreshes: z.number(),
	modernRequests: z.record(z.string(), z.number()),
});
type Stats = z.infer<typeof StatsSchema>;

async function fixture(origin: string, path: string, body?: unknown): Promise<unknown> {
	const response = await fetch(`${origin}${path}`, {
		method: body === undefined ? "GET" : "POST",
		...(body === undefined ? {} : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
		signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
	});
	if (!response.ok) throw new Error(`the OAuth upstream's ${path} answered ${response.status}`);
	return response.json();
}

const upstreamStats = async (origin: string): Promise<Stats> => StatsSchema.parse(await fixture(origin, "/_stats"));

/** Registers both servers, creates the key, connects its account; the three targets. */
export async function setUpPersonStage(gateway: Gateway, origin: string): Promise<PersonStage> {
	const url = `${origin}/mcp-modern`;
	const { access_token: token } = z
		.object({ access_token: z.string() })
		.parse(await fixture(origin, "/_control/issue-token", { subject: PERSON, resource: url }));
	// `POST /_control/configure` with nothing to change answers the settings, the token lifetime among them.
	const { accessTokenTtlSeconds } = z
		.object({ accessTokenTtlSeconds: z.number() })
		.parse(await fixture(origin, "/_control/configure", {}));
	await admin(gateway, "PUT", `/servers/${OAUTH_SERVER}`, { url, auth: { type: "oauth" } });
	await admin(gateway, "PUT", `/servers/${OAUTH_OPERATOR_SERVER}`, {
		url,
		headers: { authorization: `Bearer ${token}` },
	});
	const { key } = await admin<{ key: string }>(gateway, "POST", "/keys", {
		name: "bench-person",
		servers: [OAUTH_SERVER, OAUTH_OPERATOR_SERVER],
	});
	const auth = { authorization: `Bearer ${key}` };
	const targets: Record<PersonTargetId, RawTarget> = {
		personDirect: { id: "personDirect", url, era: MODERN_VERSION, headers: { authorization: `Bearer ${token}` } },
		personOperator: {
			id: "personOperator",
			url: `${gateway.url}/mcp/${OAUTH_OPERATOR_SERVER}`,
			era: MODERN_VERSION,
			headers: auth,
		},
		personOAuth: { id: "personOAuth", url: `${gateway.url}/mcp/${OAUTH_SERVER}`, era: MODERN_VERSION, headers: auth },
	};
	const connect = await connectOnce(gateway, origin, targets.personOAuth);
	log(
		`per-person stage: the key connected its account at the OAuth upstream in ${connect.ms.toFixed(0)} ms; whoami answers ${connect.whoami}`,
	);
	return { origin, targets, connect, tokenTtlS: accessTokenTtlSeconds };
}

/** One 2026-07-28 tools/call, sent as RawClient sends its calls; the reply's text as received. */
async function modernCall(target: RawTarget, name: string, capabilities: Record<string, unknown>): Promise<string> {
	const response = await fetch(target.url, {
		method: "POST",
		headers: {
			...target.headers,
			accept: "application/json, text/event-stream",
			"content-type": "application/json",
			"mcp-protocol-version": MODERN_VERSION,
			"mcp-method": "tools/call",
			"mcp-name": name,
		},
		body: JSON.stringify({
			jsonrpc: "2.0",
			id: 1,
			method: "tools/call",
			params: {
				name,
				arguments: {},
				_meta: {
					"io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
					"io.modelcontextprotocol/clientInfo": { name: "mcp-edge-bench", version: "1.0.0" },
					"io.modelcontextprotocol/clientCapabilities": capabilities,
				},
			},
		}),
		signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
	});
	const text = await response.text();
	if (!response.ok)
		throw new Error(`${target.id}: tools/call ${name} answered ${response.status}: ${text.slice(0, 300)}`);
	return text;
}

const WhoamiReplySchema = z.object({
	result: z.object({ content: z.array(z.object({ type: z.literal("text"), text: z.string() })).min(1) }),
});

/** The first call answers with the link; the scripted browser follows it and signs in as PERSON. */
async function connectOnce(gateway: Gateway, origin: string, target: RawTarget): Promise<PersonConnect> {
	const objectsBefore = await durableObjectRequests(gateway.url, CALL_TIMEOUT_MS);
	const asBefore = await upstreamStats(origin);
	const started = performance.now();
	// A client that takes URL elicitations gets `input_required` naming the link.
	const first = await modernCall(target, "whoami", { elicitation: { url: {} } });
	const link = new RegExp(`https?://[^"\\s\\\\]+/connect/${OAUTH_SERVER}\\?link=[\\w.~%-]+`).exec(first)?.[0];
	if (!link) throw new Error(`the first call to ${OAUTH_SERVER} answered no connect link: ${first.slice(0, 300)}`);
	const firstAnswer = first.includes('"input_required"')
		? "`input_required` with a URL elicitation"
		: first.includes("-32042")
			? "-32042 (URL elicitation required)"
			: "a tool error holding the link";
	const browser = new Browser();
	const form = await browser.get(link);
	if (!form.url.href.startsWith(origin)) throw new Error(`the connect link led to ${form.url.href}, not the upstream`);
	const done = await browser.submit(form, { fields: { user: PERSON } });
	if (done.status !== 200 || !done.html.includes(`Connected to ${OAUTH_SERVER}`)) {
		throw new Error(`connecting ended on ${done.url.href} (${done.status}): ${done.html.slice(0, 300)}`);
	}
	const ms = performance.now() - started;
	const objectsAfter = await durableObjectRequests(gateway.url, CALL_TIMEOUT_MS);
	const asAfter = await upstreamStats(origin);
	const durableObjectRequestsOfConnect: Record<string, number> = {};
	addDifference(durableObjectRequestsOfConnect, objectsBefore, objectsAfter);
	const authorizationServer: Record<string, number> = {};
	const asCounts = (stats: Stats) => ({
		registrations: stats.registrations,
		authorizations: stats.authorizations,
		codeExchanges: stats.codeExchanges,
	});
	addDifference(authorizationServer, asCounts(asBefore), asCounts(asAfter));
	// Through the gateway, with the token now in the vault: the upstream names the account connected.
	const reply = await modernCall(target, "whoami", {});
	const parsed = WhoamiReplySchema.safeParse(JSON.parse(jsonOf(reply)));
	const whoami = parsed.success ? (parsed.data.result.content[0]?.text ?? "") : `(unexpected: ${reply.slice(0, 200)})`;
	if (whoami !== PERSON) throw new Error(`after connecting as ${PERSON}, whoami answered ${whoami}`);
	return { ms, firstAnswer, durableObjectRequests: durableObjectRequestsOfConnect, authorizationServer, whoami };
}

/** The JSON-RPC message of a reply body: JSON as is, or the last `data:` of an SSE stream. */
function jsonOf(text: string): string {
	const events = [...text.matchAll(/^data: ?(.*)$/gm)].map((match) => match[1] ?? "");
	return events.at(-1) ?? text;
}

export function newPersonResults(stage: PersonStage): PersonResults | { error: string } {
	if ("error" in stage) return stage;
	const by = <T>(make: () => T) =>
		Object.fromEntries(PERSON_TARGET_IDS.map((id) => [id, make()])) as Record<PersonTargetId, T>;
	return {
		tokenTtlS: stage.tokenTtlS,
		connect: stage.connect,
		latency: by(() => []),
		durableObjectRequests: by(() => ({})),
		upstreamRequests: by(() => ({})),
		refreshes: 0,
	};
}

export async function openPersonClients(stage: PersonStage): Promise<Record<PersonTargetId, RawClient> | null> {
	if ("error" in stage) return null;
	const clients = {} as Record<PersonTargetId, RawClient>;
	for (const id of PERSON_TARGET_IDS) clients[id] = await RawClient.open(stage.targets[id], CALL_TIMEOUT_MS);
	return clients;
}

/** Each target's window of PLAN.latencyCalls calls, in an order rotated by round, with the counters around it. */
export async function measurePersonRound(
	gatewayUrl: string,
	stage: PersonStage,
	clients: Record<PersonTargetId, RawClient> | null,
	results: PersonResults | { error: string },
	round: number,
): Promise<void> {
	if ("error" in stage || "error" in results || clients === null) return;
	for (const id of rotated(PERSON_TARGET_IDS, round)) {
		const statsBefore = await upstreamStats(stage.origin);
		const objectsBefore = await durableObjectRequests(gatewayUrl, CALL_TIMEOUT_MS);
		for (let i = 0; i < PLAN.latencyCalls; i++) {
			const start = performance.now();
			await clients[id].echo();
			results.latency[id].push(performance.now() - start);
		}
		const objectsAfter = await durableObjectRequests(gatewayUrl, CALL_TIMEOUT_MS);
		const statsAfter = await upstreamStats(stage.origin);
		addDifference(results.durableObjectRequests[id], objectsBefore, objectsAfter);
		addDifference(results.upstreamRequests[id], statsBefore.modernRequests, statsAfter.modernRequests);
		results.refreshes += statsAfter.refreshes - statsBefore.refreshes;
	}
}
