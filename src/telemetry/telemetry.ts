import type { Meter, Tracer } from "@opentelemetry/api";
import { createNoopMeter, trace } from "@opentelemetry/api";
import { ExportingTelemetry } from "./exporting-telemetry.ts";
import { configWarning, otelValues, parseOtelConfig } from "./otel-config.ts";

/**
 * The gateway's OpenTelemetry: a tracer and a meter in the standard API, and
 * the export of what they record. Off (no OTEL_EXPORTER_OTLP_ENDPOINT) it is
 * the API's no-op tracer and meter, built once, so instrumented code costs
 * nothing. Nothing here ever changes or delays an answer: export runs after
 * the response, in `waitUntil`, and a collector that fails costs only drops.
 *
 * Instrumented code uses only this interface and `@opentelemetry/api`
 * (spans are started with an explicit parent context, never an ambient one:
 * Workers have no context manager here).
 */
export interface Telemetry {
	/** Whether anything is exported at all. */
	readonly enabled: boolean;
	readonly tracer: Tracer;
	readonly meter: Meter;
	/**
	 * Hands what is due to the collector in the background. Call once at the
	 * end of each request (edge Worker or Durable Object) with its `waitUntil`;
	 * `drain` sends every queued span, due or not (a session's end).
	 */
	flush(waitUntil: (promise: Promise<unknown>) => void, drain?: boolean): void;
	/** What this isolate's export has done so far (for tests and diagnostics). */
	readonly stats: TelemetryStats;
}

/** Counts of one Telemetry's export in this isolate, read-only. */
export interface TelemetryStats {
	/** Spans a collector accepted. */
	readonly spansExported: number;
	/** Spans not exported: the queue was full, or their export failed. */
	readonly spansDropped: number;
	/** Exports (of spans or metrics) that failed: an HTTP error, no answer in time, no connection. */
	readonly exportsFailed: number;
	/** Metric exports a collector accepted. */
	readonly metricExports: number;
	/** Finished spans waiting for the next export. */
	readonly spansQueued: number;
}

const NO_STATS: TelemetryStats = Object.freeze({
	spansExported: 0,
	spansDropped: 0,
	exportsFailed: 0,
	metricExports: 0,
	spansQueued: 0,
});

const OFF: Telemetry = Object.freeze({
	enabled: false,
	tracer: trace.getTracer("mcp-edge-gateway"),
	meter: createNoopMeter(),
	flush: () => {},
	stats: NO_STATS,
});

/** Telemetry per configuration (the OTEL_* values), for the isolate's life. */
const byConfiguration = new Map<string, Telemetry>();
/** The same, by env object: an isolate's requests usually share one, which skips reading the variables. */
const byEnv = new WeakMap<object, Telemetry>();

/**
 * The telemetry of this isolate for `env` (made once per configuration). A wrong variable
 * gives one warning line naming it, and telemetry off: never a failed request.
 */
export function telemetryFor(env: Readonly<Record<string, unknown>>): Telemetry {
	const known = byEnv.get(env);
	if (known) return known;
	const values = otelValues(env);
	const key = JSON.stringify(values);
	let telemetry = byConfiguration.get(key);
	if (!telemetry) {
		telemetry = makeTelemetry(values);
		byConfiguration.set(key, telemetry);
	}
	byEnv.set(env, telemetry);
	return telemetry;
}

function makeTelemetry(values: ReturnType<typeof otelValues>): Telemetry {
	// Unset endpoint: the no-op, and not one SDK object constructed.
	if (Object.keys(values).length === 0) return OFF;
	const parsed = parseOtelConfig(values);
	if (!parsed.ok) {
		console.warn(configWarning(parsed.variable, parsed.reason));
		return OFF;
	}
	return parsed.config ? new ExportingTelemetry(parsed.config) : OFF;
}
