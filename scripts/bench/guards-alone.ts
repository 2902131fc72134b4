/**
 * The guards stage of `npm run bench` on its own, for a machine too busy for
 * the whole run or a look after a change of the guard or confirmation path:
 *
 *   node scripts/bench/guards-alone.ts            the full run's rounds and counts
 *   node scripts/bench/guards-alone.ts --quick    the quick run's
 *
 * Starts the same targets as the whole run (targets.ts), measures only the
 * guards stage's rounds (guards.ts) and prints its section of the report
 * (report-guards.ts); writes nothing.
 */

import { performance } from "node:perf_hooks";
import { installShutdown, Processes } from "../processes.ts";
import { closeGuardsStage, measureGuardsRound, newGuardsResults, warmUpGuardsStage } from "./guards.ts";
import { PLAN, QUICK } from "./plan.ts";
import { guardsSection } from "./report-guards.ts";
import { describe, log } from "./run-log.ts";
import { startTargets } from "./targets.ts";

const procs = new Processes();
const { shutdown } = installShutdown(procs, "bench-guards");

try {
	const started = performance.now();
	log(`guards stage alone, ${QUICK ? "quick" : "full"} counts: ${PLAN.rounds} rounds of ${PLAN.latencyCalls} calls`);
	const targets = await startTargets(procs);
	const stage = targets.guards;
	const results = newGuardsResults(stage);
	await warmUpGuardsStage(stage);
	for (let round = 0; round < PLAN.rounds; round++) {
		await measureGuardsRound(stage, results, round, targets.cpuGroups.runtime.server);
		log(`round ${round + 1}/${PLAN.rounds} done`);
	}
	await closeGuardsStage(stage);
	console.log(guardsSection(results).join("\n"));
	log(`done in ${((performance.now() - started) / 1000).toFixed(0)} s`);
	await shutdown(0);
} catch (error) {
	await shutdown(1, `bench-guards: failed: ${describe(error)}`);
}
