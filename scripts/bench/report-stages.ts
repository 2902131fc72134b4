/** The report's section on the per-stage microbenchmark (stages.ts). */

import { percentile, signedMs } from "./report-format.ts";
import type { BenchResults } from "./results.ts";
import { SECTION_LABELS, type StageResult, type StageSection } from "./stage.ts";
import { formatUs, perCallTotalUs, workerdEstimateUs } from "./stages.ts";
import { POLICY_STAGES } from "./stages-built-in.ts";

/** The per-stage microbenchmark of one request's plain code (scripts/bench/stages.ts). */
export function stagesSection(results: BenchResults): string[] {
	const stages = results.stages;
	const lines = [
		"## Per-stage cost of one request (Node microbenchmark)",
		"",
		"`scripts/bench/stages.ts` (on its own: `node scripts/bench/stages.ts`) times the plain code the edge Worker and the",
		"SessionDO run for one `tools/call echo` through `/mcp/:server` with a one-event SSE reply: the gateway's own",
		"functions, bundled from src/ with esbuild, each run many times in Node after a warm-up, before the servers start.",
		"Per operation, in µs; *per call*: how many times one such call runs it (– : not on that path).",
		"",
		"It does not cover the Durable Object RPC (with the reply stream crossing back to the edge) or the runtime's own",
		"work (HTTP parsing, the hops between workerd processes, wrangler's logging): only the end-to-end gateway − floor",
		"difference above shows those; nor the rate-limiter binding, which under `wrangler dev` is a simulated service.",
		"Node is not workerd: Node runs WebCrypto on its thread pool where workerd computes it in the calling thread, so",
		"the WebCrypto stages are measured again with a synchronous WebCrypto; web streams, `Request` and `Headers` are",
		"JavaScript in Node, C++ in workerd.",
		"",
	];
	if ("error" in stages) return [...lines, `The microbenchmark failed: ${stages.error}`, ""];
	const delta = percentile(results.latency.server, 50) - percentile(results.latency.floor, 50);
	lines.push(
		`Plain code of one call (Σ mean × per call): **${formatUs(perCallTotalUs(stages))} µs** (edge ${formatUs(perCallTotalUs(stages, "edge"))},` +
			` SessionDO ${formatUs(perCallTotalUs(stages, "session"))}); with WebCrypto computed synchronously, as workerd does:` +
			` **${formatUs(workerdEstimateUs(stages))} µs**. The gateway's p50 difference to the floor in this run: ${signedMs(delta)} ms.`,
		"",
		"| Stage | Code | per call | iterations | mean | p50 | p99 |",
		"| --- | --- | ---: | ---: | ---: | ---: | ---: |",
	);
	let section: StageSection | undefined;
	for (const r of stages) {
		if (r.section !== section) {
			section = r.section;
			lines.push(`| *${SECTION_LABELS[section]}* | | | | | | |`);
		}
		lines.push(
			`| ${r.name} | ${r.code} | ${r.perCall > 0 ? `${r.perCall}×` : "–"} | ${r.iterations.toLocaleString("en-US")} | ${formatUs(r.meanUs)} | ${formatUs(r.p50Us)} | ${formatUs(r.p99Us)} |`,
		);
	}
	lines.push(
		"",
		"Cheap operations are timed in batches (at least 10 µs per sample): their p50 and p99 are over batches.",
		"",
		...policyRates(stages),
	);
	return lines;
}

/** One policy's verdict as evaluations per second, in-process, against none (the policy stages of the reference section). */
function policyRates(stages: readonly StageResult[]): string[] {
	const find = (name: string) => stages.find((r) => r.name === name);
	const [none, one, elsewhere] = [find(POLICY_STAGES.none), find(POLICY_STAGES.one), find(POLICY_STAGES.elsewhere)];
	if (!none || !one || !elsewhere) return [];
	const perSecond = (us: number) => Math.round(1e6 / us).toLocaleString("en-US");
	// The p50 too: on a busy machine preemptions inflate the mean of a few-µs operation.
	const rate = (r: StageResult) =>
		`${perSecond(r.meanUs)}/s at the mean (${formatUs(r.meanUs)} µs), ${perSecond(r.p50Us)}/s at the p50 (${formatUs(r.p50Us)} µs)`;
	return [
		`A tool policy's verdict on one \`tools/call\` (\`src/governance/policies.ts\` \`policyVerdict\`, the policies compiled once):` +
			` **one compiled policy that applies: ${rate(one)}**; none: ${rate(none)}; one that applies to another server:` +
			` ${rate(elsewhere)}. The gateway asks for no verdict at all on a server no policy may apply to.`,
		"",
	];
}
