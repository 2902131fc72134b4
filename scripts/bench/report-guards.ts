/**
 * The report's guards section (scripts/bench/guards.ts): a response guard on a
 * 64 KiB result, and a confirm policy whose question is always accepted, each
 * against the same call without, as ratios of latency quantiles and of the
 * gateway's CPU per call.
 */

import { mean, ms, percentile } from "./report-format.ts";
import {
	type BenchResults,
	GUARDS_PAIRS,
	GUARDS_TARGET_IDS,
	GUARDS_TARGET_LABELS,
	type GuardsResults,
	type GuardsTargetId,
} from "./results.ts";

/** The quantiles the section compares. */
export const GUARDS_QUANTILES = [50, 95] as const;

function all(results: GuardsResults, id: GuardsTargetId): number[] {
	return results.rounds.flatMap((round) => round[id]);
}

const times = (value: number) => (Number.isFinite(value) ? `${value.toFixed(3)}×` : "n/a");

/** The gateway's CPU ms per call of a session; NaN when it was not read. */
function cpuPerCall(results: GuardsResults, id: GuardsTargetId): number {
	const use = results.cpu?.[id];
	return use && use.calls > 0 ? use.ms / use.calls : Number.NaN;
}

/** The measured session's figure over its baseline's, for each pair: latency quantiles and CPU per call. */
export function compareGuards(
	results: GuardsResults,
): Array<{ name: string; quantiles: Array<{ q: number; ratio: number }>; cpu: number }> {
	return GUARDS_PAIRS.map((pair) => ({
		name: pair.name,
		quantiles: GUARDS_QUANTILES.map((q) => ({
			q,
			ratio: percentile(all(results, pair.measured), q) / percentile(all(results, pair.baseline), q),
		})),
		cpu: cpuPerCall(results, pair.measured) / cpuPerCall(results, pair.baseline),
	}));
}

export function guardsSection(guards: BenchResults["guards"]): string[] {
	const lines = ["", "## A response guard and a confirm policy per call", ""];
	if ("error" in guards) return [...lines, `Not measured: ${guards.error}`, ""];
	const calls = all(guards, "blobPlain").length;
	lines.push(
		"The bench's 2025 upstream is registered three times more: `bench-unguarded` (no guard, no policy), `bench-guarded`,",
		`where one response guard applies (\`detect: ${JSON.stringify(guards.guard.detect)}\`, \`action: "${guards.guard.action}"\`), and`,
		`\`bench-confirmed\`, where one confirm policy holds every call it matches: \`${guards.expression}\`. The 64 KiB`,
		"result is the upstream's `blob`, 64 Ki of `x`, in which the guard finds nothing: the figure is the cost of reading",
		"the whole result through both detectors and framing the reply again, not of redacting (before measuring, the stage",
		"checks that the guard redacts an e-mail address on `bench-guarded` and that `bench-unguarded` leaves it). The",
		"confirmed call's client accepts every question: each call is one `elicitation/create` on the call's stream, the",
		"client's answer POSTed, then the call sent. Four 2025-11-25 sessions through `/mcp/<server>` with the SDK client,",
		"each declaring form elicitation; the calls alternate one by one within each pair in an order rotated each call,",
		`${calls} calls per session over ${guards.rounds.length} rounds. Latency in ms.`,
		"",
		"| Session | calls | p50 | p90 | p95 | p99 | mean | gateway CPU ms per call |",
		"| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
	);
	for (const id of GUARDS_TARGET_IDS) {
		const samples = all(guards, id);
		const cpu = cpuPerCall(guards, id);
		lines.push(
			`| ${GUARDS_TARGET_LABELS[id]} | ${samples.length} | ${ms(percentile(samples, 50))} | ${ms(percentile(samples, 90))} | ${ms(percentile(samples, 95))} | ${ms(percentile(samples, 99))} | ${ms(mean(samples))} | ${Number.isFinite(cpu) ? cpu.toFixed(2) : "n/a"} |`,
		);
	}
	lines.push(
		"",
		"Gateway CPU is the wrangler and workerd processes' user and system time over a block of calls on one session",
		"alone in each round (not alternating: CPU time cannot be told apart between calls in flight one after another),",
		"divided by the block's calls; clock ticks of 10 ms make it coarse.",
		"",
	);
	for (const c of compareGuards(guards)) {
		const what =
			c.name === "guard" ? "a response guard ÷ none (64 KiB result)" : "a confirm policy, accepted ÷ none (echo)";
		const quantiles = c.quantiles.map((q) => `p${q.q} ${times(q.ratio)}`).join(", ");
		lines.push(`- **${what}: ${quantiles}**; gateway CPU per call ${times(c.cpu)}.`);
	}
	lines.push("");
	return lines;
}
