/** The run's circumstances, for the report: the machine, the versions, the plan and the gateway's own intervals. */

import { readFileSync } from "node:fs";
import { cpus, platform, release } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { ROOT } from "../wrangler-dev.ts";
import { BLOB_KIB, CONCURRENCIES, PLAN, PROGRESS_DELAY_MS, PROGRESS_STEPS } from "./plan.ts";
import type { BenchResults } from "./results.ts";

export function runMeta(started: number, loadAtStart: number[]): BenchResults["meta"] {
	return {
		date: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
		cores: cpus().length,
		cpuModel: cpus()[0]?.model.trim() ?? "unknown CPU",
		node: process.version,
		platform: `${platform()} ${release()}`,
		wrangler: packageVersion("wrangler"),
		sdk: packageVersion("@modelcontextprotocol/sdk"),
		loadAverage: loadAtStart,
		wallSeconds: (performance.now() - started) / 1000,
		rounds: PLAN.rounds,
		poolSize: PLAN.poolSize,
		concurrencies: CONCURRENCIES,
		blobKib: BLOB_KIB,
		progressSteps: PROGRESS_STEPS,
		progressDelayMs: PROGRESS_DELAY_MS,
		touchIntervalS: gatewayVar("TOUCH_INTERVAL_SECONDS", 60),
		recheckIntervalS: gatewayVar("RECHECK_INTERVAL_SECONDS", 30),
		keyCacheTtlS: gatewayVar("KEY_CACHE_TTL_SECONDS", 10),
		endpointCacheTtlS: gatewayVarOrNull("ENDPOINT_CACHE_TTL_SECONDS"),
	};
}

/** A numeric var of the gateway's wrangler.toml (what the run used: the bench overrides none). */
function gatewayVar(name: string, fallback: number): number {
	const value = gatewayVarOrNull(name);
	return value !== null && value > 0 ? value : fallback;
}

/** A numeric var of the gateway's wrangler.toml, or null where it has none. */
function gatewayVarOrNull(name: string): number | null {
	const toml = readFileSync(join(ROOT, "wrangler.toml"), "utf8");
	const value = Number(new RegExp(`^${name}\\s*=\\s*"(\\d+)"`, "m").exec(toml)?.[1] ?? Number.NaN);
	return Number.isFinite(value) ? value : null;
}

function packageVersion(name: string): string {
	try {
		const manifest = JSON.parse(readFileSync(join(ROOT, "node_modules", name, "package.json"), "utf8")) as {
			version?: string;
		};
		return manifest.version ?? "unknown";
	} catch {
		// Not installed, or no readable manifest: the report says so rather than failing the run.
		return "unknown";
	}
}
