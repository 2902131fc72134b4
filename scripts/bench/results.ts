/**
 * What one run of the bench measured: the targets' ids and labels and the
 * shape of the results the report is rendered from (also written raw, as
 * JSON, next to the report).
 */

import type { StageResult } from "./stage.ts";

export type TargetId = "direct" | "floor" | "server" | "aggregate";
export const TARGET_IDS: readonly TargetId[] = ["direct", "floor", "server", "aggregate"];
export const TARGET_LABELS: Record<TargetId, string> = {
	direct: "direct",
	floor: "floor",
	server: "gateway /mcp/:server",
	aggregate: "gateway /mcp",
};
export type GatewayEndpoint = "server" | "aggregate";

/** The targets of the 2026-07-28 measurements (scripts/bench/modern.ts), all against the SDK v2 upstream. */
export type ModernTargetId = "modernDirect" | "statelessFloor" | "stateless" | "legacyGateway" | "legacyDirect";
export const MODERN_TARGET_IDS: readonly ModernTargetId[] = [
	"modernDirect",
	"statelessFloor",
	"stateless",
	"legacyGateway",
	"legacyDirect",
];
export const MODERN_TARGET_LABELS: Record<ModernTargetId, string> = {
	modernDirect: "2026-07-28 direct",
	statelessFloor: "2026-07-28 via the Worker-only floor",
	stateless: "2026-07-28 via the gateway (stateless)",
	legacyGateway: "2025-11-25 via the gateway (SessionDO)",
	legacyDirect: "2025-11-25 direct",
};

/** tools/call at concurrency 1 in both eras, against the same SDK v2 upstream and tool. */
export interface ModernResults {
	/** How the gateway knew the upstream speaks 2026-07-28: pinned on the server, or discovered. */
	protocol: string;
	latency: Record<ModernTargetId, number[]>;
	/** The gateway's Durable Object requests during each target's windows, by `Class.method`. */
	durableObjectRequests: Record<ModernTargetId, Record<string, number>>;
	/** What the upstream received during each target's windows, by `<era> <method>`. */
	upstreamRequests: Record<ModernTargetId, Record<string, number>>;
}

/**
 * The targets of the per-person credentials stage (scripts/bench/person.ts): 2026-07-28 calls to
 * the OAuth fixture's `/mcp-modern`, which takes only its own access tokens.
 */
export type PersonTargetId = "personDirect" | "personOperator" | "personOAuth";
export const PERSON_TARGET_IDS: readonly PersonTargetId[] = ["personDirect", "personOperator", "personOAuth"];
export const PERSON_TARGET_LABELS: Record<PersonTargetId, string> = {
	personDirect: "2026-07-28 direct, with alice's token",
	personOperator: "2026-07-28 via the gateway (stateless), operator's header",
	personOAuth: "2026-07-28 via the gateway (stateless), the caller's own token (`oauth`)",
};

/** What connecting an API key's account cost, once, before the measured calls. */
export interface PersonConnect {
	/** From the first call (answered with the connect link) to the gateway's "Connected" page. */
	ms: number;
	/** How the first call answered: `input_required` (a URL elicitation), -32042, or a tool error. */
	firstAnswer: string;
	/** The gateway's Durable Object requests over the connect, by `Class.method`. */
	durableObjectRequests: Record<string, number>;
	/** The fixture's authorization server over the connect: registrations, sign-ins, code exchanges. */
	authorizationServer: Record<string, number>;
	/** Who the upstream's `whoami` named afterwards, through the gateway. */
	whoami: string;
}

/** 2026-07-28 tools/call with a person's own token against the operator's header, on one OAuth upstream. */
export interface PersonResults {
	/** The access tokens' lifetime at the fixture: the window a cached token is good for. */
	tokenTtlS: number;
	connect: PersonConnect;
	latency: Record<PersonTargetId, number[]>;
	/** The gateway's Durable Object requests during each target's windows, by `Class.method`. */
	durableObjectRequests: Record<PersonTargetId, Record<string, number>>;
	/** What the upstream's 2026-07-28 endpoint received during each target's windows, by JSON-RPC method. */
	upstreamRequests: Record<PersonTargetId, Record<string, number>>;
	/** Token endpoint requests (refreshes) during the measured windows, all targets together. */
	refreshes: number;
}

/** The sessions of the policy stage (scripts/bench/policy.ts), all 2025-11-25 through `/mcp/<server>`, one upstream. */
export type PolicyTargetId = "plain" | "plainAgain" | "policy";
export const POLICY_TARGET_IDS: readonly PolicyTargetId[] = ["plain", "plainAgain", "policy"];
export const POLICY_TARGET_LABELS: Record<PolicyTargetId, string> = {
	plain: "no policy (`bench-plain`)",
	plainAgain: "no policy, a second session (`bench-plain`): the baseline against itself",
	policy: "one policy applies (`bench-policy`)",
};

/** tools/call latency with one policy against none, per round (calls alternate between the sessions). */
export interface PolicyResults {
	/** The policy's CEL expression. */
	expression: string;
	/** Each round's latencies in ms, per session. */
	rounds: Array<Record<PolicyTargetId, number[]>>;
}

/**
 * The sessions of the guards stage (scripts/bench/guards.ts), all 2025-11-25 through `/mcp/<server>`
 * with the SDK client, one upstream: a 64 KiB result without and with a response guard, and
 * `tools/call echo` without and with a `confirm` policy whose question the client always accepts.
 */
export type GuardsTargetId = "blobPlain" | "blobGuarded" | "echoPlain" | "echoConfirmed";
/** The pairs measured against each other: each call alternates between the two sessions of its pair. */
export const GUARDS_PAIRS = [
	{ name: "guard", baseline: "blobPlain", measured: "blobGuarded" },
	{ name: "confirm", baseline: "echoPlain", measured: "echoConfirmed" },
] as const satisfies ReadonlyArray<{ name: string; baseline: GuardsTargetId; measured: GuardsTargetId }>;
export const GUARDS_TARGET_IDS: readonly GuardsTargetId[] = ["blobPlain", "blobGuarded", "echoPlain", "echoConfirmed"];
export const GUARDS_TARGET_LABELS: Record<GuardsTargetId, string> = {
	blobPlain: "64 KiB result, no guard (`bench-unguarded`)",
	blobGuarded: "64 KiB result, a response guard (`bench-guarded`)",
	echoPlain: "echo, no policy (`bench-unguarded`)",
	echoConfirmed: "echo, a confirm policy, accepted (`bench-confirmed`)",
};

/** The guards stage: latency per round (calls alternate within each pair) and the gateway's CPU per call. */
export interface GuardsResults {
	/** The response guard as registered (stage, detect, action). */
	guard: { detect: readonly string[]; action: string };
	/** The confirm policy's CEL expression. */
	expression: string;
	/** Each round's latencies in ms, per session. */
	rounds: Array<Record<GuardsTargetId, number[]>>;
	/**
	 * The gateway's processes' CPU (wrangler and workerd, ms) over blocks of calls on one session at a
	 * time, per session; null where /proc cannot be read.
	 */
	cpu: Record<GuardsTargetId, { calls: number; ms: number }> | null;
}

/**
 * The sessions of the telemetry stage (scripts/bench/telemetry.ts), all 2025-11-25 through `/mcp/bench`:
 * export on at one gateway process, export off at a second (twice), and at a third.
 */
export type TelemetryTargetId = "exportOn" | "exportOff" | "exportOffAgain" | "exportOffElsewhere";
export const TELEMETRY_TARGET_IDS: readonly TelemetryTargetId[] = [
	"exportOn",
	"exportOff",
	"exportOffAgain",
	"exportOffElsewhere",
];
export const TELEMETRY_TARGET_LABELS: Record<TelemetryTargetId, string> = {
	exportOn: "export on (OTLP/HTTP to the bench's sink)",
	exportOff: "export off",
	exportOffAgain: "export off, a second session of that process: the baseline against itself",
	exportOffElsewhere: "export off, another gateway process: the baseline against itself between processes",
};

/** tools/call latency with telemetry export on against off, per round (calls alternate between the sessions). */
export interface TelemetryResults {
	/** The export-on gateway's OTEL_* variables, its endpoint left out. */
	variables: Record<string, string>;
	/** Each round's latencies in ms, per session. */
	rounds: Array<Record<TelemetryTargetId, number[]>>;
	/** What the sink received from the export-on gateway over the whole stage, warm-up included. */
	sink: { requests: number; bytes: number; traces: number; metrics: number };
}

/**
 * The connector stage's targets (scripts/bench/connector.ts): the bench's 2025 upstream registered by
 * URL and as a connector server served by `mcpgw connect --upstream`, 2025-11-25 sessions through
 * `/mcp/<server>` with the same raw client.
 */
export type ConnectorTargetId = "byUrl" | "connector";
export const CONNECTOR_TARGET_IDS: readonly ConnectorTargetId[] = ["byUrl", "connector"];
export const CONNECTOR_TARGET_LABELS: Record<ConnectorTargetId, string> = {
	byUrl: "by URL (`bench-by-url`)",
	connector: "through a connector (`bench-connector`, `mcpgw connect --upstream`)",
};
/** The stdio connector server's sessions: `mcpgw connect -- node <server-everything>`, a child per session. */
export type StdioTargetId = "stdio";

/** Calls at one concurrency over one session, and the gateway's Durable Object requests meanwhile. */
export interface ConnectorThroughput extends Throughput {
	/** By `Class.method`, over every window of this target at this concurrency. */
	durableObjectRequests: Record<string, number>;
}

/** One session of the stdio connector server: its setup, its first call and the calls after it. */
export interface StdioSession {
	/** initialize + notifications/initialized through the gateway. */
	initializeMs: number;
	/** The session's first `tools/call echo`. */
	firstCallMs: number;
	/** The same call after it, one at a time. */
	laterMs: number[];
}

/** tools/call to one upstream by URL against through a connector, and a stdio server's first call against later ones. */
export interface ConnectorResults {
	/** tools/call at concurrency 1, ms, the calls alternating between the targets. */
	latency: Record<ConnectorTargetId, number[]>;
	throughput: Array<{ concurrency: number; results: Record<ConnectorTargetId, ConnectorThroughput> }>;
	stdio: {
		/** The stdio server the connector runs, as the report names it. */
		server: string;
		sessions: StdioSession[];
		/** Sessions the stdio connector still held after each round's sessions were ended (DELETE). */
		heldAfterRounds: number[];
		/** The gateway's Durable Object requests over the measured sessions, DELETE included, by `Class.method`. */
		durableObjectRequests: Record<string, number>;
	};
}

export interface Throughput {
	calls: number;
	ms: number;
	/** Calls per second of each round. */
	perRound: number[];
}

export interface ThroughputCell {
	sessions: number;
	concurrency: number;
	results: Record<TargetId, Throughput>;
}

/** What the gateway's own counters say one session cost over a window. */
export interface CostWindow {
	calls: number;
	elapsedMs: number;
	storageReads: number;
	storageWrites: number;
	/** Stream events kept for resumption, and their pruning (session-stats eventBufferWrites). */
	eventBufferWrites: number;
	/** The session's registry rechecks (session-stats registryReads). */
	sessionRegistryReads: number;
	/** The session's Workers KV reads: its rechecks, its policies and pins (session-stats kvReads). */
	kvReads: number;
	/** Requests the registry Durable Object served in the window, from any source (registry-stats). */
	registryReadsAll: number | null;
	upstreamRequests: number;
}

/** A client that opened its session's GET stream and only listened (session-stats activeMs). */
export interface IdleWindow {
	/** From opening the GET stream to closing it. */
	listenedMs: number;
	/** Listening windows the gateway gave (the client resumed after each). */
	windows: number;
	/** The session's Durable Object active time over that window. */
	activeMs: number;
	/** The object was still active a moment after the client had closed the stream. */
	activeAfterClose: boolean;
}

/** CPU time of the server side of a target over its throughput calls (from /proc). */
export interface CpuUse {
	calls: number;
	/** The upstream's Node process. */
	upstreamMs: number;
	/** The runtime in between: the wrangler dev process group (wrangler, workerd); 0 for direct. */
	runtimeMs: number;
	/** The benchmark's own process (SDK clients). */
	clientMs: number;
}

/** What the upstream received for a number of sessions (setup and DELETE), from its own log. */
export interface UpstreamLog {
	sessions: number;
	requests: number;
	byKind: Record<string, number>;
}

export type BundleResult =
	| { files: string[]; rawBytes: number; gzipBytes: number; wranglerSummary: string | null }
	| { error: string };

export interface BenchResults {
	quick: boolean;
	meta: {
		date: string;
		cores: number;
		cpuModel: string;
		node: string;
		platform: string;
		wrangler: string;
		sdk: string;
		loadAverage: number[];
		wallSeconds: number;
		rounds: number;
		poolSize: number;
		concurrencies: number[];
		blobKib: number;
		progressSteps: number;
		progressDelayMs: number;
		touchIntervalS: number;
		recheckIntervalS: number;
		keyCacheTtlS: number;
		/** The edge's per-isolate cache of endpoint records (ENDPOINT_CACHE_TTL_SECONDS); null where the gateway has none. */
		endpointCacheTtlS: number | null;
	};
	latency: Record<TargetId, number[]>;
	setup: Record<TargetId, number[]>;
	blob: Record<TargetId, number[]>;
	progressFirst: Record<TargetId, number[]>;
	progressTotal: Record<TargetId, number[]>;
	throughput: ThroughputCell[];
	modern: ModernResults;
	/** The per-person credentials stage, or why it could not run. */
	person: PersonResults | { error: string };
	/** The policy stage, or why it could not run. */
	policy: PolicyResults | { error: string };
	/** The telemetry stage, or why it could not run. */
	telemetry: TelemetryResults | { error: string };
	/** The guards stage (a response guard, a confirm policy), or why it could not run. */
	guards: GuardsResults | { error: string };
	/** The connector stage, or why it could not run. */
	connectors: ConnectorResults | { error: string };
	costs: { busy: Record<GatewayEndpoint, CostWindow>; longRun: Record<GatewayEndpoint, CostWindow> };
	idle: Record<GatewayEndpoint, IdleWindow>;
	cpu: Record<TargetId, CpuUse> | null;
	setupUpstream: Record<TargetId, UpstreamLog>;
	bundle: BundleResult;
	/** The per-stage microbenchmark (scripts/bench/stages.ts), or why it failed. */
	stages: StageResult[] | { error: string };
	warnings: string[];
}

/** Every cost window of the run, by window and gateway endpoint. */
export function* costWindows(
	results: BenchResults,
): Generator<{ name: string; endpoint: GatewayEndpoint; w: CostWindow }> {
	for (const [name, windows] of [
		["busy session", results.costs.busy],
		["long-lived session", results.costs.longRun],
	] as const) {
		for (const endpoint of ["server", "aggregate"] as const) yield { name, endpoint, w: windows[endpoint] };
	}
}
