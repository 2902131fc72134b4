/**
 * The run's targets: the SDK upstreams, the gateway and both floors built and
 * started under `wrangler dev` with temporary state and secrets, the servers
 * and keys registered, and every target's URL (2025 targets through the SDK
 * client, the 2026-07-28 ones through raw `fetch`).
 */

import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { type Child, HOST, type Processes, waitForLine } from "../processes.ts";
import { buildWorker, ROOT, startWranglerDev, wranglerEnv } from "../wrangler-dev.ts";
import { type ConnectorStage, setUpConnectorStage } from "./connector.ts";
import { installCountingEntry } from "./counting-entry.ts";
import { admin, type Gateway, MODERN_SERVER, registerModernServer } from "./gateway-admin.ts";
import { writeGatewayFiles } from "./gateway-files.ts";
import { type GuardsStage, setUpGuardsStage } from "./guards.ts";
import { LEGACY_VERSION, MODERN_VERSION, type RawTarget } from "./modern.ts";
import { type PersonStage, setUpPersonStage } from "./person.ts";
import { type PolicyStage, setUpPolicyStage } from "./policy.ts";
import type { BundleResult, ModernTargetId, TargetId } from "./results.ts";
import { describe, elapsedS, log, notableRuntimeLines, warn } from "./run-log.ts";
import type { Target } from "./sessions.ts";
import { setUpTelemetryStage, type TelemetryStage } from "./telemetry.ts";

/** A started server: its process and where it listens. */
export interface Running {
	child: Child;
	url: string;
}

/** Everything the measurements reach, once started and registered. */
export interface Targets {
	gateway: Gateway;
	upstreamUrl: string;
	modernUpstreamUrl: string;
	/** The 2025 targets, through the SDK client. */
	targets: Record<TargetId, Target>;
	/** The same call in both eras against the SDK v2 upstream, through raw `fetch`. */
	modernTargets: Record<ModernTargetId, RawTarget>;
	/** How the SDK v2 upstream was registered, for the report. */
	modernProtocol: string;
	/** The per-person credentials stage's targets, its key connected (scripts/bench/person.ts). */
	person: PersonStage;
	/** The policy stage's sessions: one policy against none (scripts/bench/policy.ts). */
	policy: PolicyStage;
	/** The guards stage's sessions: a response guard and a confirm policy against neither (scripts/bench/guards.ts). */
	guards: GuardsStage;
	/** The telemetry stage's sessions: export on against off, at gateway processes of their own (scripts/bench/telemetry.ts). */
	telemetry: TelemetryStage;
	/** The connector stage's sessions: by URL against through `mcpgw connect`, and the stdio server (scripts/bench/connector.ts). */
	connectors: ConnectorStage;
	bundle: BundleResult;
	/** Process groups whose CPU time is counted: the upstream's, and the runtime's in between per target. */
	cpuGroups: { upstream: number; runtime: Record<TargetId, number | null> };
}

/** The run's temporary state and secrets: the user's .dev.vars and .wrangler/state are never touched. */
export interface RunState {
	tmp: string;
	/** Wrangler's environment: a private registry of local dev Workers. */
	env: NodeJS.ProcessEnv;
	adminToken: string;
	envFile: string;
	/** The gateway's wrangler.toml with the rate limits raised. */
	gatewayConfig: string;
}

const FLOOR_CONFIG = join(ROOT, "scripts", "bench", "floor", "wrangler.toml");
const STATELESS_FLOOR_CONFIG = join(ROOT, "scripts", "bench", "floor-stateless", "wrangler.toml");

export async function startTargets(procs: Processes): Promise<Targets> {
	const state = prepareState(procs);
	log("building the gateway and the floors (wrangler deploy --dry-run), starting the upstreams...");
	const [upstream, modernUpstream, oauthUpstream, gatewayBuild, floorBuild, statelessFloorBuild] = await Promise.all([
		startUpstreamProcess(procs, "upstream", "upstream.ts"),
		// The SDK v2 upstream of the 2026-07-28 measurements (both eras, one definition).
		startUpstreamProcess(procs, "SDK v2 upstream", "modern-upstream.ts"),
		// The upstream that takes each person's own OAuth token (the per-person credentials stage).
		startUpstreamProcess(procs, "OAuth upstream", "oauth-upstream.ts"),
		buildWorker(procs, {
			name: "gateway",
			config: join(ROOT, "wrangler.toml"),
			outDir: join(state.tmp, "gateway-bundle"),
			env: state.env,
		}),
		buildWorker(procs, {
			name: "floor",
			config: FLOOR_CONFIG,
			outDir: join(state.tmp, "floor-bundle"),
			env: state.env,
		}),
		buildWorker(procs, {
			name: "Worker-only floor",
			config: STATELESS_FLOOR_CONFIG,
			outDir: join(state.tmp, "floor-stateless-bundle"),
			env: state.env,
		}),
	]);
	const bundle = bundleSize(gatewayBuild);
	// Its own gateway processes and sink, started beside the others, on the build as it is (before the
	// counting module is installed). A failure is reported, not fatal: the other stages still run.
	const telemetryStage = setUpTelemetryStage(procs, state, gatewayBuild.entry, upstream.url).catch(
		(error: unknown): TelemetryStage => {
			warn(`the telemetry stage could not be set up: ${describe(error)}`);
			return { error: describe(error) };
		},
	);
	// After the size is taken: the built gateway behind the module that counts its Durable Object requests.
	const gatewayEntry = installCountingEntry(gatewayBuild.outDir, state.gatewayConfig);
	log("starting the gateway and the floors (wrangler dev)...");
	const wrangler = (name: string, config: string, entry: string, persistTo: string, extraArgs: string[]) =>
		startWrangler(procs, state.env, name, config, entry, join(state.tmp, persistTo), extraArgs);
	const [gatewayDev, floorDev, statelessFloorDev] = await Promise.all([
		wrangler("gateway (wrangler dev)", state.gatewayConfig, gatewayEntry, "gateway-state", [
			"--env-file",
			state.envFile,
		]),
		wrangler("floor (wrangler dev)", FLOOR_CONFIG, floorBuild.entry, "floor-state", [
			"--var",
			`UPSTREAM_URL:${upstream.url}`,
		]),
		wrangler(
			"Worker-only floor (wrangler dev)",
			STATELESS_FLOOR_CONFIG,
			statelessFloorBuild.entry,
			"floor-stateless-state",
			["--var", `UPSTREAM_URL:${modernUpstream.url}`],
		),
	]);
	log(
		`ready: upstreams ${upstream.url} (2025) and ${modernUpstream.url} (SDK v2), gateway ${gatewayDev.url}, floor ${floorDev.url}, Worker-only floor ${statelessFloorDev.url}`,
	);
	// First of all: no request has loaded the (empty) policy list into an isolate's cache yet.
	const policy = await setUpPolicyStage({ url: gatewayDev.url, adminToken: state.adminToken }, upstream.url).catch(
		(error: unknown) => {
			warn(`the policy stage could not be set up: ${describe(error)}`);
			return { error: describe(error) };
		},
	);
	// Next: its guard and policy reach the isolates within their cache's lifetime, which the stage waits out if need be.
	const guards = await setUpGuardsStage({ url: gatewayDev.url, adminToken: state.adminToken }, upstream.url).catch(
		(error: unknown) => {
			warn(`the guards stage could not be set up: ${describe(error)}`);
			return { error: describe(error) };
		},
	);
	const registered = await registerTargets(
		{ url: gatewayDev.url, adminToken: state.adminToken },
		{ upstream, modernUpstream, floorDev, statelessFloorDev },
	);
	// A failure here is reported (the goal then reads "not measured"), not fatal: the other stages still run.
	const gatewayAt = { url: gatewayDev.url, adminToken: state.adminToken };
	const person = await setUpPersonStage(gatewayAt, new URL(oauthUpstream.url).origin).catch((error: unknown) => {
		warn(`the per-person credentials stage could not be set up: ${describe(error)}`);
		return { error: describe(error) };
	});
	const connectors = await setUpConnectorStage(procs, gatewayAt, upstream.url).catch((error: unknown) => {
		warn(`the connector stage could not be set up: ${describe(error)}`);
		return { error: describe(error) };
	});
	const telemetry = await telemetryStage;
	// CPU time of the server side of each target, per throughput call: the upstream's process, and
	// the process group (wrangler, workerd) of the runtime in between.
	const floorGroup = floorDev.child.process.pid ?? -1;
	const gatewayGroup = gatewayDev.child.process.pid ?? -1;
	return {
		...registered,
		person,
		policy,
		guards,
		telemetry,
		connectors,
		upstreamUrl: upstream.url,
		modernUpstreamUrl: modernUpstream.url,
		bundle,
		cpuGroups: {
			upstream: upstream.child.process.pid ?? -1,
			runtime: { direct: null, floor: floorGroup, server: gatewayGroup, aggregate: gatewayGroup },
		},
	};
}

export function prepareState(procs: Processes): RunState {
	const tmp = procs.tempDir("mcp-edge-bench-");
	// A private registry of local dev Workers: a gateway the user runs at the same time (`npm start`,
	// same Worker name) and the benchmark's own never see each other.
	const env = wranglerEnv(tmp);
	// wrangler keeps its build output next to the floor's config.
	procs.removeOnExit(join(ROOT, "scripts", "bench", "floor", ".wrangler"));
	procs.removeOnExit(join(ROOT, "scripts", "bench", "floor-stateless", ".wrangler"));
	const { adminToken, envFile, gatewayConfig } = writeGatewayFiles(tmp);
	return { tmp, env, adminToken, envFile, gatewayConfig };
}

/** Registers the upstreams and the keys at the gateway; every target's URL and headers. */
async function registerTargets(
	gateway: Gateway,
	servers: { upstream: Running; modernUpstream: Running; floorDev: Running; statelessFloorDev: Running },
): Promise<Pick<Targets, "gateway" | "targets" | "modernTargets" | "modernProtocol">> {
	const { upstream, modernUpstream, floorDev, statelessFloorDev } = servers;
	await admin(gateway, "PUT", "/servers/bench", { url: upstream.url });
	const { key } = await admin<{ key: string }>(gateway, "POST", "/keys", {
		name: "bench",
		// Only `bench`: the aggregate endpoint's sessions have that one member, whatever else is registered.
		servers: ["bench"],
		// The benchmark holds hundreds of sessions with one key; a deployment caps them at MAX_SESSIONS_PER_KEY.
		maxSessions: 100_000,
	});
	const auth = { authorization: `Bearer ${key}` };
	const modernProtocol = await registerModernServer(gateway, modernUpstream.url);
	const modernKey = await admin<{ key: string }>(gateway, "POST", "/keys", {
		name: "bench-modern",
		servers: [MODERN_SERVER],
	});
	const modernAuth = { authorization: `Bearer ${modernKey.key}` };
	const modernGatewayUrl = `${gateway.url}/mcp/${MODERN_SERVER}`;
	const modernTargets: Record<ModernTargetId, RawTarget> = {
		modernDirect: { id: "modernDirect", url: modernUpstream.url, era: MODERN_VERSION },
		statelessFloor: { id: "statelessFloor", url: `${statelessFloorDev.url}/mcp`, era: MODERN_VERSION },
		stateless: { id: "stateless", url: modernGatewayUrl, era: MODERN_VERSION, headers: modernAuth },
		legacyGateway: { id: "legacyGateway", url: modernGatewayUrl, era: LEGACY_VERSION, headers: modernAuth },
		legacyDirect: { id: "legacyDirect", url: modernUpstream.url, era: LEGACY_VERSION },
	};
	const same = (name: string) => name;
	const targets: Record<TargetId, Target> = {
		direct: { id: "direct", url: upstream.url, tool: same },
		floor: { id: "floor", url: `${floorDev.url}/mcp`, tool: same },
		server: { id: "server", url: `${gateway.url}/mcp/bench`, headers: auth, tool: same },
		aggregate: { id: "aggregate", url: `${gateway.url}/mcp`, headers: auth, tool: (name) => `bench__${name}` },
	};
	return { gateway, targets, modernTargets, modernProtocol };
}

export async function startUpstreamProcess(procs: Processes, name: string, script: string): Promise<Running> {
	const child = procs.spawn(name, process.execPath, [join(ROOT, "scripts", "bench", script)], {
		cwd: ROOT,
		keepStdinOpen: true,
	});
	const match = await waitForLine(child, /^ready (\d+)$/, 20_000);
	return { child, url: `http://${HOST}:${match[1]}/mcp` };
}

const NOTABLE = /error|exception|uncaught|terminat|reset|exceeded|overloaded/i;

/** `wrangler dev` on a pre-built bundle, its notable output lines kept for the report. */
async function startWrangler(
	procs: Processes,
	env: NodeJS.ProcessEnv,
	name: string,
	config: string,
	entry: string,
	persistTo: string,
	extraArgs: string[],
): Promise<Running> {
	const started = await startWranglerDev(procs, { name, config, entry, persistTo, env, extraArgs });
	started.child.onLine((line) => {
		if (NOTABLE.test(line) && !line.includes("[wrangler:info]") && notableRuntimeLines.length < 40) {
			notableRuntimeLines.push(`${name} at +${elapsedS()} s: ${line.slice(0, 300)}`);
		}
	});
	return started;
}

/** The built modules' size, raw and gzipped. */
function bundleSize(built: { child: Child; outDir: string }): BundleResult {
	const files = (readdirSync(built.outDir, { recursive: true }) as string[])
		.filter((file) => /\.(m?js|cjs|wasm)$/.test(file))
		.sort();
	if (files.length === 0) return { error: `no modules in ${built.outDir}` };
	let rawBytes = 0;
	let gzipBytes = 0;
	for (const file of files) {
		const content = readFileSync(join(built.outDir, file));
		rawBytes += statSync(join(built.outDir, file)).size;
		gzipBytes += gzipSync(content, { level: 9 }).length;
	}
	const summary = built.child.output
		.map((line) => /Total Upload:.*/.exec(line)?.[0])
		.find((line) => line !== undefined);
	return { files, rawBytes, gzipBytes, wranglerSummary: summary?.trim() ?? null };
}
