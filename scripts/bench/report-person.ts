/**
 * The report's per-person credentials section: 2026-07-28 calls on the
 * stateless path to an upstream that takes each person's own OAuth token,
 * against the operator's header to the same upstream (scripts/bench/person.ts).
 */

import { mean, ms, percentile, signedMs } from "./report-format.ts";
import { countList, pathObjectRequests } from "./report-modern.ts";
import { type BenchResults, PERSON_TARGET_IDS, PERSON_TARGET_LABELS, type PersonResults } from "./results.ts";

/** The goal of the issue: the person's token read from the vault at most once per isolate per token lifetime. */
export const PERSON_GOAL_PER_CALL = 0.01;

/** The vault's requests among a window's counts (the TokenVaultDO class, every method). */
export function vaultRequests(counts: Record<string, number>): number {
	return Object.entries(counts).reduce(
		(sum, [name, count]) => (name.startsWith("TokenVaultDO.") ? sum + count : sum),
		0,
	);
}

/** Durable Object requests of the calls with each person's own token, per call. */
export function personObjectsPerCall(person: PersonResults): { total: number; vault: number; calls: number } {
	const counts = person.durableObjectRequests.personOAuth;
	const calls = person.latency.personOAuth.length;
	return {
		calls,
		total: calls > 0 ? pathObjectRequests(counts) / calls : Number.NaN,
		vault: calls > 0 ? vaultRequests(counts) / calls : Number.NaN,
	};
}

export function personSection(results: BenchResults): string[] {
	const lines = ["", "## 2026-07-28 with each person's own token: an `oauth` upstream on the stateless path", ""];
	const person = results.person;
	if ("error" in person) return [...lines, `Not measured: ${person.error}`, ""];
	const p = (t: keyof PersonResults["latency"], q: number) => percentile(person.latency[t], q);
	const { connect } = person;
	lines.push(
		"The OAuth fixture's 2026-07-28 endpoint (`scripts/bench/oauth-upstream.ts`: `/mcp-modern` of",
		"`scripts/fixtures/oauth-upstream.ts`, SDK v2's `createMcpHandler` behind the SDK's `requireBearerAuth`, its own",
		"authorization server) takes only access tokens it issued for that resource. It is registered twice:",
		'`bench-oauth` with `auth: {"type":"oauth"}` (each caller\'s own token, from their vault: a TokenVaultDO per',
		"person or key) and `bench-oauth-operator` with an operator's `Authorization` header holding a token the fixture",
		"issued for alice outside any client, the baseline. One API key for both connected its account once before the",
		"measured calls, as a person does: its first call answered",
		`${connect.firstAnswer} naming the connect link, the scripted browser opened it and picked ${connect.whoami} at the`,
		`upstream's sign-in form (${ms(connect.ms)} ms). The gateway's Durable Object requests over the connect:`,
		`${countList(connect.durableObjectRequests)}. At the authorization server: ${countList(connect.authorizationServer)}.`,
		`Then \`whoami\` through the gateway answered ${connect.whoami}.`,
		"",
		`Concurrency 1, \`tools/call echo\` with raw \`fetch\`, interleaved with the other 2026-07-28 measurements, the three`,
		`targets in an order rotated each round. The fixture's access tokens live ${person.tokenTtlS} s; the gateway keeps a`,
		"person's token in isolate memory until a minute before it expires, so a run shorter than that shows the reads",
		"per isolate, and none of the refreshes a longer one would add (one vault request per token lifetime; the tests",
		"cover refreshing). Latency in ms.",
		"",
		"| Target | calls | p50 | p90 | p99 | mean | p50 − operator's header | DO requests of the calls | per call | TokenVaultDO per call | upstream requests per call |",
		"| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
	);
	for (const t of PERSON_TARGET_IDS) {
		const calls = person.latency[t].length;
		const counts = person.durableObjectRequests[t];
		const path = pathObjectRequests(counts);
		const perCall = (n: number) => (calls > 0 ? (n / calls).toFixed(3) : "n/a");
		const overOperator = t === "personOperator" ? "" : signedMs(p(t, 50) - p("personOperator", 50));
		lines.push(
			`| ${PERSON_TARGET_LABELS[t]} | ${calls} | ${ms(p(t, 50))} | ${ms(p(t, 90))} | ${ms(p(t, 99))} | ${ms(mean(person.latency[t]))} | ${overOperator} | ${path} | ${perCall(path)} | ${perCall(vaultRequests(counts))} | ${countList(person.upstreamRequests[t], calls)} |`,
		);
	}
	const objects = personObjectsPerCall(person);
	lines.push(
		"",
		`**Durable Object requests per call with each person's own token: ${objects.total.toFixed(4)}** (TokenVaultDO:` +
			` ${objects.vault.toFixed(4)}) over ${objects.calls} calls. Goal: ≤ ${PERSON_GOAL_PER_CALL}. Refreshes at the` +
			` token endpoint during the measured calls: ${person.refreshes}. Every Durable Object request in these windows,` +
			` by class and method: ${countList(person.durableObjectRequests.personOAuth)} (the benchmark's counter reads and` +
			" other sessions' own requests are left out of the per-call figures, as in the section above).",
		"",
	);
	return lines;
}
