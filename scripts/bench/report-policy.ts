/**
 * The report's policy section: tools/call with one tool policy against none
 * (scripts/bench/policy.ts), and how "within noise" is judged.
 */

import { mean, ms, percentile } from "./report-format.ts";
import { type BenchResults, POLICY_TARGET_IDS, POLICY_TARGET_LABELS, type PolicyResults } from "./results.ts";

/** The quantiles the goal is held to. */
export const POLICY_QUANTILES = [50, 99] as const;

/** One quantile's comparison: the policy's ratio, the baseline's against itself, and the noise band. */
export interface PolicyComparison {
	q: number;
	/** The policy session's quantile over the first baseline session's, all rounds together. */
	ratio: number;
	/** The second baseline session's over the first's, all rounds together. */
	self: number;
	/**
	 * The noise: the largest distance from 1 of the baseline against itself, all
	 * rounds together or any one round. A policy whose ratio lies no farther from
	 * 1 costs nothing this run can tell from two identical sessions.
	 */
	noise: number;
	within: boolean;
}

function all(results: PolicyResults, id: keyof PolicyResults["rounds"][number]): number[] {
	return results.rounds.flatMap((round) => round[id]);
}

export function comparePolicy(results: PolicyResults, q: number): PolicyComparison {
	const p = (samples: number[]) => percentile(samples, q);
	const plain = all(results, "plain");
	const ratio = p(all(results, "policy")) / p(plain);
	const self = p(all(results, "plainAgain")) / p(plain);
	const perRound = results.rounds.map((round) => Math.abs(p(round.plainAgain) / p(round.plain) - 1));
	const noise = Math.max(Math.abs(self - 1), ...perRound);
	return { q, ratio, self, noise, within: Math.abs(ratio - 1) <= noise };
}

const times = (value: number) => (Number.isFinite(value) ? `${value.toFixed(3)}×` : "n/a");
const band = (noise: number) => (Number.isFinite(noise) ? `1 ± ${noise.toFixed(3)}` : "n/a");

export function policySection(policy: BenchResults["policy"]): string[] {
	const lines = ["", "## One tool policy per call", ""];
	if ("error" in policy) return [...lines, `Not measured: ${policy.error}`, ""];
	const calls = all(policy, "plain").length;
	lines.push(
		"The bench's 2025 upstream is registered twice more: `bench-plain`, where no policy applies, and `bench-policy`,",
		`where one allow policy applies and is evaluated on every call: \`${policy.expression}\``,
		"(`fail`, a tool the upstream has, stands for `delete_`: before measuring, the stage checks that `bench-policy`",
		"does not list it and `bench-plain` does). Three 2025-11-25 sessions through `/mcp/<server>` with one API key and",
		"the same raw `fetch` client: one on `bench-policy`, two on `bench-plain`. `tools/call echo` at concurrency 1, the",
		`calls alternating between the three sessions one by one in an order rotated each call, ${calls} calls per session`,
		`over ${policy.rounds.length} rounds. Latency in ms.`,
		"",
		"| Session | calls | p50 | p90 | p99 | mean | p50 ÷ no policy | p99 ÷ no policy |",
		"| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
	);
	const plain = all(policy, "plain");
	for (const id of POLICY_TARGET_IDS) {
		const samples = all(policy, id);
		const over = (q: number) => (id === "plain" ? "" : times(percentile(samples, q) / percentile(plain, q)));
		lines.push(
			`| ${POLICY_TARGET_LABELS[id]} | ${samples.length} | ${ms(percentile(samples, 50))} | ${ms(percentile(samples, 90))} | ${ms(percentile(samples, 99))} | ${ms(mean(samples))} | ${over(50)} | ${over(99)} |`,
		);
	}
	lines.push(
		"",
		"Noise is the baseline against itself: the second `bench-plain` session over the first, taken over all rounds and",
		"in each round; the band is 1 ± the largest distance from 1 among those. The policy is within noise when its ratio",
		"lies inside the band.",
		"",
	);
	for (const c of POLICY_QUANTILES.map((q) => comparePolicy(policy, q))) {
		lines.push(
			`- **p${c.q}: one policy ÷ no policy ${times(c.ratio)}**; the baseline against itself ${times(c.self)}, noise band` +
				` ${band(c.noise)}: ${c.within ? "within noise" : "**outside the noise**"}.`,
		);
	}
	lines.push("");
	return lines;
}
