/**
 * The extension scenarios (the tasks extension's `tasks-*`), which a
 * requirement set runs without scoring them, compared with the same scenarios
 * against the conformance reference alone: one that passes there is the
 * gateway's to pass (it counts, and fails the run when it fails through the
 * gateway); one that fails there too stays uncounted, since the reference
 * cannot show what the gateway should do. Printed side by side.
 */
import type { ScenarioResult } from "./results.ts";

/** The reason the suite gives for running a scenario unscored when it belongs to an extension. */
const EXTENSION = "extension";

/** Whether a set runs `result` unscored because it belongs to an extension. */
export function isExtensionScenario(result: ScenarioResult): boolean {
	return result.notScored === EXTENSION;
}

/**
 * The gateway's results, each extension scenario carrying how it fared
 * directly and counted when it passed there. A scenario the direct run did
 * not report (it crashed, or the run broke) reads as failed directly.
 */
export function withBaseline(throughGateway: ScenarioResult[], direct: ScenarioResult[]): ScenarioResult[] {
	const directly = new Map(direct.map((result) => [result.name, result]));
	return throughGateway.map((result) => {
		if (!isExtensionScenario(result)) return result;
		const baseline = directly.get(result.name);
		const outcome = baseline
			? { verdict: baseline.verdict, passed: baseline.passed, failed: baseline.failed, warnings: baseline.warnings }
			: { verdict: "FAIL" as const, passed: 0, failed: 1, warnings: 0 };
		return { ...result, direct: outcome, requiredHere: result.requiredHere || outcome.verdict === "PASS" };
	});
}

/** The extension scenarios of one set's gateway run, with their direct outcome beside each. */
export function printSideBySide(results: ScenarioResult[], label: string): void {
	const rows = results.filter((result) => result.direct !== undefined);
	if (rows.length === 0) return;
	const width = Math.max(8, ...rows.map((result) => result.name.length));
	const cell = (outcome: Pick<ScenarioResult, "verdict" | "passed" | "failed" | "warnings">) =>
		`${outcome.verdict.padEnd(4)} ${outcome.passed}/${outcome.failed}/${outcome.warnings}`.padEnd(14);
	console.log(`\n${label} extension scenarios, against the reference directly and through the gateway\n`);
	console.log(`${"scenario".padEnd(width)}  ${"directly".padEnd(14)}  ${"gateway".padEnd(14)}  counted`);
	for (const result of rows) {
		const direct = result.direct;
		if (!direct) continue;
		const counted = direct.verdict === "PASS" ? "yes: it passes directly" : "no: it fails directly too";
		console.log(`${result.name.padEnd(width)}  ${cell(direct)}  ${cell(result)}  ${counted}`);
	}
	const counted = rows.filter((result) => result.direct?.verdict === "PASS");
	const passing = counted.filter((result) => result.verdict === "PASS").length;
	console.log(
		`\n${label}: ${passing} of the ${counted.length} extension scenarios that pass directly pass through the gateway`,
	);
}
