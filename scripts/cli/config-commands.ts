/**
 * `plan`, `apply` and `export`: the registry as a config file (gateway-config.ts).
 * Their modules are loaded when one of them runs: the schemas bring the CEL
 * compiler, which every other command would otherwise wait for at start.
 */
import { writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import type { Command } from "commander";
import { clientFor, print, wantsJson } from "./command-context.ts";
import type { Applied } from "./config-apply.ts";
import type { Plan } from "./config-plan.ts";
import { printJson } from "./output.ts";

/** The committed schema at the root of the clone (`npm run config-schema`). */
const SCHEMA_PATH = join(import.meta.dirname, "..", "..", "gateway.config.schema.json");

async function planFor(command: Command, file: string, prune: boolean): Promise<Plan> {
	const [{ readConfig }, { readHeldState }, { makePlan }] = await Promise.all([
		import("./gateway-config.ts"),
		import("./config-state.ts"),
		import("./config-plan.ts"),
	]);
	const config = readConfig(file);
	return makePlan(config, await readHeldState(clientFor(command)), { prune });
}

function describeApplied(applied: Applied, kindWords: Record<string, string>): string {
	const { change } = applied;
	const past = { create: "created", replace: "replaced", delete: "deleted" }[change.action];
	let line = `${past} ${kindWords[change.kind]} ${change.name}`;
	if (applied.check)
		line += applied.check.reachable
			? ` (answers${applied.check.era ? `, ${applied.check.era}` : ""})`
			: ` (does not answer: ${applied.check.detail})`;
	if (applied.key) line += `: ${applied.key.id}, key ${applied.key.key} (shown this once: store it now)`;
	if (change.revokes?.length) line += `; revoked ${change.revokes.join(", ")}`;
	return line;
}

export function addConfigCommands(program: Command): void {
	program
		.command("plan")
		.description("what apply would change: create, replace (with each field's change), delete under --prune")
		.requiredOption("-f, --file <path>", "the config file (gateway.config.json)")
		.option("--prune", "also delete what the file does not declare")
		.action(async (options: { file: string; prune?: boolean }, command: Command) => {
			const plan = await planFor(command, options.file, options.prune === true);
			const { describePlan } = await import("./config-plan.ts");
			print(command, plan, () => describePlan(plan));
			if (plan.refusals.length > 0) process.exitCode = 1;
		});
	program
		.command("apply")
		.description("make the gateway match the file (entries already matching are not written)")
		.requiredOption("-f, --file <path>", "the config file (gateway.config.json)")
		.option(
			"--prune",
			"also delete what the file does not declare (keys, guards, policies, rules, virtual servers, servers)",
		)
		.action(async (options: { file: string; prune?: boolean }, command: Command) => {
			const plan = await planFor(command, options.file, options.prune === true);
			const [{ assertApplicable, KIND_WORDS }, { applyPlan }] = await Promise.all([
				import("./config-plan.ts"),
				import("./config-apply.ts"),
			]);
			assertApplicable(plan);
			const json = wantsJson(command);
			if (!json) for (const warning of plan.warnings) process.stderr.write(`warning: ${warning}\n`);
			const done = await applyPlan(clientFor(command), plan, (applied) => {
				if (!json) process.stdout.write(`${describeApplied(applied, KIND_WORDS)}\n`);
			});
			if (json) printJson({ applied: done, unchanged: plan.unchanged, warnings: plan.warnings });
			else if (done.length === 0)
				process.stdout.write(`No changes: the gateway matches the file (${plan.unchanged} unchanged).\n`);
		});
	program
		.command("export")
		.description("the gateway's registry as a config file (keys as declarations, never secrets)")
		.option("-o, --output <path>", "write to this file (default: standard output)")
		.action(async (options: { output?: string }, command: Command) => {
			const { exportConfig, readHeldState } = await import("./config-state.ts");
			const state = await readHeldState(clientFor(command));
			const schemaRef = options.output ? relative(dirname(options.output), SCHEMA_PATH) : undefined;
			const { config, notes } = exportConfig(state, schemaRef);
			for (const note of notes) process.stderr.write(`note: ${note}\n`);
			const text = `${JSON.stringify(config, null, "\t")}\n`;
			if (options.output) writeFileSync(options.output, text);
			else process.stdout.write(text);
		});
}
