/**
 * `npm run ab -- <git ref>`: this work tree's gateway against the one at
 * `<git ref>`, call by call. Builds both (the ref in a temporary git worktree
 * that shares this clone's node_modules), serves each under `wrangler dev`
 * beside one benchmark upstream, opens a session on each with nothing
 * configured, then alternates `tools/call`s between them, so whatever the
 * machine does meanwhile falls on both alike. Prints each side's latency and
 * the CPU its runtime (wrangler dev + workerd) spent per call, and their ratios.
 * For finding which change costs what (a bisect runs it once per step).
 *
 *   npm run ab -- main~5
 *   npm run ab -- 3f5cc17 --calls 3000 --endpoint /mcp
 *   npm run ab -- floor       the benchmark's floor (scripts/bench/floor/) in place of a ref
 */

import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { groupCpuMs, installShutdown, Processes } from "../processes.ts";
import { ROOT } from "../wrangler-dev.ts";
import {
	buildAt,
	latencyOf,
	type OneSession,
	openFloorSession,
	openOneSession,
	SERVER,
	startBenchUpstream,
} from "./one-session.ts";

const USAGE = "Usage: npm run ab -- <git ref>|floor [--calls N] [--endpoint /mcp/<server>|/mcp]";
const args = process.argv.slice(2);
const option = (name: string, fallback: string) => {
	const at = args.indexOf(name);
	return at >= 0 ? (args[at + 1] ?? fallback) : fallback;
};
const ref = args.find((arg, at) => !arg.startsWith("--") && !args[at - 1]?.startsWith("--"));
if (!ref || args.includes("--help")) {
	console.log(USAGE);
	process.exit(ref ? 0 : 2);
}
const CALLS = Number(option("--calls", "2000"));
const ENDPOINT = option("--endpoint", `/mcp/${SERVER}`);
const WARMUP = 200;

const procs = new Processes();
const { shutdown } = installShutdown(procs, "ab");

/** A detached worktree of `ref` under `dir`, using this clone's packages (its files go with `dir`). */
function worktreeOf(gitRef: string, dir: string): string {
	const tree = join(dir, "base");
	execFileSync("git", ["worktree", "add", "--detach", tree, gitRef], { cwd: ROOT, stdio: "ignore" });
	symlinkSync(join(ROOT, "node_modules"), join(tree, "node_modules"));
	return tree;
}

/** CPU ms so far of each command (workerd, node) in the process group `group`, from /proc. */
function cpuByCommand(group: number): Map<string, number> {
	const ticksPerMs = 100 / 1000;
	const totals = new Map<string, number>();
	for (const entry of readdirSync("/proc")) {
		if (!/^\d+$/.test(entry)) continue;
		let stat: string;
		try {
			stat = readFileSync(`/proc/${entry}/stat`, "utf8");
		} catch {
			continue;
		}
		const command = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
		const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
		if (Number(fields[2]) !== group) continue;
		const ms = (Number(fields[11]) + Number(fields[12])) / ticksPerMs;
		totals.set(command, (totals.get(command) ?? 0) + ms);
	}
	return totals;
}

/** Forgets the worktrees whose files are gone (this run's, once its temporary directory is removed). */
function pruneWorktrees(): void {
	execFileSync("git", ["worktree", "prune"], { cwd: ROOT, stdio: "ignore" });
}

async function main(): Promise<void> {
	const dir = procs.tempDir("mcp-edge-ab-");
	const againstFloor = ref === "floor";
	const tree = againstFloor ? null : worktreeOf(String(ref), dir);
	const [upstreamUrl, base, work] = await Promise.all([
		startBenchUpstream(procs),
		tree ? buildAt(procs, join(dir, "base-build"), join(tree, "wrangler.toml")) : null,
		buildAt(procs, join(dir, "work-build")),
	]);
	const open = (name: string, entry: string, config?: string) =>
		openOneSession(procs, entry, upstreamUrl, {
			name: `${name} (wrangler dev)`,
			dir: join(dir, name.replace(/\W/g, "_")),
			endpoint: ENDPOINT,
			config,
		});
	const sides: Array<{ name: string; session: OneSession; took: number[]; cpu: number }> = [
		{
			name: String(ref),
			session:
				base && tree
					? await open(String(ref), base.entry, join(tree, "wrangler.toml"))
					: await openFloorSession(procs, upstreamUrl, dir),
			took: [],
			cpu: 0,
		},
		{ name: "work tree", session: await open("work tree", work.entry), took: [], cpu: 0 },
	];
	for (let id = 1; id <= WARMUP; id++) for (const side of sides) await side.session.call(id);
	const groups = sides.map((side) => side.session.child.process.pid ?? -1);
	const before = groupCpuMs(groups);
	const commandsBefore = groups.map(cpuByCommand);
	for (let id = WARMUP + 1; id <= WARMUP + CALLS; id++) {
		// Each pair in turn starts with the other side, so neither always follows the upstream's last answer.
		const order = id % 2 === 0 ? sides : [...sides].reverse();
		for (const side of order) {
			const started = performance.now();
			await side.session.call(id);
			side.took.push(performance.now() - started);
		}
	}
	const after = groupCpuMs(groups);
	const commandsAfter = groups.map(cpuByCommand);
	sides.forEach((side, at) => {
		const group = groups[at] ?? -1;
		side.cpu = ((after?.get(group) ?? 0) - (before?.get(group) ?? 0)) / CALLS;
	});
	const [a, b] = sides.map((side) => ({ ...latencyOf(side.took), cpu: side.cpu, name: side.name }));
	if (!a || !b) return;
	const row = (side: typeof a) =>
		`${side.name.padEnd(12)} p50 ${side.p50.toFixed(2).padStart(6)} ms  p90 ${side.p90.toFixed(2).padStart(6)} ms  mean ${side.mean.toFixed(2).padStart(6)} ms  runtime CPU ${side.cpu.toFixed(2).padStart(6)} ms/call`;
	console.log(`\n${CALLS} calls each to ${ENDPOINT}, alternating:\n${row(a)}\n${row(b)}`);
	sides.forEach((side, at) => {
		const split = [...(commandsAfter[at] ?? new Map()).entries()]
			.map(([command, ms]) => `${command} ${((ms - (commandsBefore[at]?.get(command) ?? 0)) / CALLS).toFixed(2)}`)
			.join(", ");
		console.log(`${side.name.padEnd(12)} runtime CPU by process, ms/call: ${split}`);
	});
	console.log(
		`work tree ÷ ${a.name}: p50 ${(b.p50 / a.p50).toFixed(3)}×, mean ${(b.mean / a.mean).toFixed(3)}×, CPU ${(b.cpu / a.cpu).toFixed(3)}× (p50 ${(b.p50 - a.p50).toFixed(2)} ms, CPU ${(b.cpu - a.cpu).toFixed(2)} ms)`,
	);
}

main().then(
	async () => {
		await procs.stopAll();
		pruneWorktrees();
		await shutdown(0);
	},
	(error: unknown) => shutdown(1, `ab failed: ${error instanceof Error ? error.message : String(error)}`),
);
