/**
 * The policy stage of `npm run bench` on its own, for a machine too busy for
 * the whole run or a look after a change of the policy path:
 *
 *   node scripts/bench/policy-alone.ts            the full run's rounds and counts
 *   node scripts/bench/policy-alone.ts --quick    the quick run's
 *
 * Starts the same targets as the whole run (targets.ts), measures only the
 * policy stage's rounds (policy.ts) and prints its section of the report
 * (report-policy.ts); writes nothing.
 */

import { performance } from "node:perf_hooks";
import { installShutdown, Processes } from "../processes.ts";
import { PLAN, QUICK } from "./plan.ts";
import { closePolicyStage, measurePolicyRound, newPolicyResults, warmUpPolicyStage } from "./policy.ts";
import { policySection } from "./report-policy.ts";
import { describe, log } from "./run-log.ts";
import { startTargets } from "./targets.ts";

const procs = new Processes();
const { shutdown } = installShutdown(procs, "bench-policy");

try {
	const started = performance.now();
	log(`policy stage alone, ${QUICK ? "quick" : "full"} counts: ${PLAN.rounds} rounds of ${PLAN.latencyCalls} calls`);
	const { policy: stage } = await startTargets(procs);
	const results = newPolicyResults(stage);
	await warmUpPolicyStage(stage);
	for (let round = 0; round < PLAN.rounds; round++) {
		await measurePolicyRound(stage, results, round);
		log(`round ${round + 1}/${PLAN.rounds} done`);
	}
	await closePolicyStage(stage);
	console.log(policySection(results).join("\n"));
	log(`done in ${((performance.now() - started) / 1000).toFixed(0)} s`);
	await shutdown(0);
} catch (error) {
	await shutdown(1, `bench-policy: failed: ${describe(error)}`);
}
