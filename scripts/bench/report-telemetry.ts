/**
 * The report's telemetry section: tools/call with OTLP export on against off
 * (scripts/bench/telemetry.ts), and how "within noise" is judged.
 */

import { kib, mean, ms, percentile } from "./report-format.ts";
import {
	type BenchResults,
	TELEMETRY_TARGET_IDS,
	TELEMETRY_TARGET_LABELS,
	type TelemetryResults,
	type TelemetryTargetId,
} from "./results.ts";

/** The quantiles the goal is held to. */
export const TELEMETRY_QUANTILES = [50, 99] as const;

/** One quantile's comparison: export on over off, the baseline against itself, and the noise band. */
export interface TelemetryComparison {
	q: number;
	/** Export on's quantile over export off's, all rounds together. */
	ratio: number;
	/** The second session of the export-off process over the first, all rounds together. */
	self: number;
	/** The third process's session over the export-off one, all rounds together. */
	elsewhere: number;
	/**
	 * The noise: the largest distance from 1 of the baseline against itself (in one process and
	 * between two), all rounds together or any one round. On and off are two processes, so a ratio
	 * no farther from 1 than that is what two identical gateways give.
	 */
	noise: number;
	within: boolean;
}

function all(results: TelemetryResults, id: TelemetryTargetId): number[] {
	return results.rounds.flatMap((round) => round[id]);
}

export function compareTelemetry(results: TelemetryResults, q: number): TelemetryComparison {
	const p = (samples: number[]) => percentile(samples, q);
	const off = p(all(results, "exportOff"));
	const ratio = p(all(results, "exportOn")) / off;
	const self = p(all(results, "exportOffAgain")) / off;
	const elsewhere = p(all(results, "exportOffElsewhere")) / off;
	const perRound = results.rounds.flatMap((round) => [
		Math.abs(p(round.exportOffAgain) / p(round.exportOff) - 1),
		Math.abs(p(round.exportOffElsewhere) / p(round.exportOff) - 1),
	]);
	const noise = Math.max(Math.abs(self - 1), Math.abs(elsewhere - 1), ...perRound);
	return { q, ratio, self, elsewhere, noise, within: Math.abs(ratio - 1) <= noise };
}

const times = (value: number) => (Number.isFinite(value) ? `${value.toFixed(3)}×` : "n/a");
const band = (noise: number) => (Number.isFinite(noise) ? `1 ± ${noise.toFixed(3)}` : "n/a");

export function telemetrySection(telemetry: BenchResults["telemetry"]): string[] {
	const lines = ["", "## Telemetry export per call", ""];
	if ("error" in telemetry) return [...lines, `Not measured: ${telemetry.error}`, ""];
	const calls = all(telemetry, "exportOff").length;
	const variables = Object.entries(telemetry.variables)
		.map(([name, value]) => `\`${name}=${value}\``)
		.join(", ");
	const sink = telemetry.sink;
	lines.push(
		"The gateway's build runs three more times under `wrangler dev`: once exporting its traces and metrics over",
		`OTLP/HTTP (\`OTEL_EXPORTER_OTLP_ENDPOINT\`${variables ? `, ${variables}` : ""}; all other settings their defaults), twice`,
		"without. Export goes to the bench's sink (`scripts/bench/otlp-sink.ts`): a Node process that drains each request",
		"and answers 200 at once, decoding and printing nothing, so the figure is what the gateway pays for exporting, not",
		"what a collector pays to read. Four 2025-11-25 sessions through `/mcp/bench` with the same raw `fetch` client: one",
		"at the exporting process, two at the second, one at the third. `tools/call echo` at concurrency 1, the calls",
		`alternating between the four one by one in an order rotated each call, ${calls} calls per session over`,
		`${telemetry.rounds.length} rounds. Latency in ms. The sink received ${sink.traces} trace exports and ${sink.metrics}`,
		`metric exports (${kib(sink.bytes)} in all) over the stage, warm-up included.`,
		"",
		"| Session | calls | p50 | p90 | p99 | mean | p50 ÷ export off | p99 ÷ export off |",
		"| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
	);
	const off = all(telemetry, "exportOff");
	for (const id of TELEMETRY_TARGET_IDS) {
		const samples = all(telemetry, id);
		const over = (q: number) => (id === "exportOff" ? "" : times(percentile(samples, q) / percentile(off, q)));
		lines.push(
			`| ${TELEMETRY_TARGET_LABELS[id]} | ${samples.length} | ${ms(percentile(samples, 50))} | ${ms(percentile(samples, 90))} | ${ms(percentile(samples, 99))} | ${ms(mean(samples))} | ${over(50)} | ${over(99)} |`,
		);
	}
	lines.push(
		"",
		"Noise is the baseline against itself: the export-off process's second session and the third process's session,",
		"each over the export-off session, taken over all rounds and in each round; the band is 1 ± the largest distance",
		"from 1 among those. Export is within noise when its ratio lies inside the band.",
		"",
	);
	for (const c of TELEMETRY_QUANTILES.map((q) => compareTelemetry(telemetry, q))) {
		lines.push(
			`- **p${c.q}: export on ÷ export off ${times(c.ratio)}**; the baseline against itself ${times(c.self)} in one process,` +
				` ${times(c.elsewhere)} between processes, noise band ${band(c.noise)}: ${c.within ? "within noise" : "**outside the noise**"}.`,
		);
	}
	lines.push("");
	return lines;
}
