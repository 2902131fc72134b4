/**
 * The gateway as the scripts run it (`npm run bench`, `npm run conformance`):
 * built once with `wrangler deploy --dry-run` (the Worker exactly as it would
 * be uploaded, so sources edited during a run change nothing) and served by
 * `wrangler dev --no-bundle` on free loopback ports with temporary state.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { type Child, childReport, freePort, HOST, type Processes, waitHealthy, withTimeout } from "./processes.ts";

export const ROOT = join(import.meta.dirname, "..");
const WRANGLER = join(ROOT, "node_modules", ".bin", "wrangler");
const BUILD_TIMEOUT_MS = 120_000;
const STARTUP_TIMEOUT_MS = 90_000;

/** Wrangler's environment for a run: no metrics, no network for Request.cf, its own dev registry. */
export function wranglerEnv(tmp: string): NodeJS.ProcessEnv {
	return {
		...process.env,
		WRANGLER_SEND_METRICS: "false",
		// Loopback only: no fetch of the Request.cf placeholder from workers.cloudflare.com.
		CLOUDFLARE_CF_FETCH_ENABLED: "false",
		// A private registry of local dev Workers: a gateway the user runs at the same time (`npm start`,
		// same Worker name) and this run's never see each other.
		WRANGLER_REGISTRY_PATH: join(tmp, "dev-registry"),
	};
}

/** `wrangler deploy --dry-run --outdir`: the built Worker and its entry module. */
export async function buildWorker(
	procs: Processes,
	options: { name: string; config: string; outDir: string; env: NodeJS.ProcessEnv },
): Promise<{ child: Child; outDir: string; entry: string }> {
	const child = procs.spawn(
		`${options.name} (wrangler deploy --dry-run)`,
		WRANGLER,
		["deploy", "--dry-run", "--config", options.config, "--outdir", options.outDir],
		{ cwd: ROOT, env: options.env },
	);
	const ok = await withTimeout(
		child.exited.then(() => child.process.exitCode === 0),
		BUILD_TIMEOUT_MS,
		`wrangler deploy --dry-run of the ${options.name}`,
	);
	const entry = join(options.outDir, "index.js");
	if (!ok || !existsSync(entry)) throw new Error(`could not build the ${options.name}: ${childReport(child)}`);
	return { child, outDir: options.outDir, entry };
}

/**
 * `wrangler dev` on a built entry, on free loopback ports (or `port`, when
 * something must know it before the Worker runs); resolves once `/healthz` answers.
 */
export async function startWranglerDev(
	procs: Processes,
	options: {
		name: string;
		config: string;
		entry: string;
		persistTo: string;
		env: NodeJS.ProcessEnv;
		port?: number;
		extraArgs?: string[];
	},
): Promise<{ child: Child; url: string; inspectorPort: number }> {
	const [port, inspectorPort] = [options.port ?? (await freePort()), await freePort()];
	const child = procs.spawn(
		options.name,
		WRANGLER,
		[
			"dev",
			options.entry,
			"--no-bundle",
			"--config",
			options.config,
			"--ip",
			HOST,
			"--port",
			String(port),
			"--inspector-port",
			String(inspectorPort),
			"--persist-to",
			options.persistTo,
			"--show-interactive-dev-session=false",
			...(options.extraArgs ?? []),
		],
		{ cwd: ROOT, env: options.env },
	);
	const url = `http://${HOST}:${port}`;
	await waitHealthy(child, `${url}/healthz`, STARTUP_TIMEOUT_MS);
	return { child, url, inspectorPort };
}
