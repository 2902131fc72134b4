import { inject } from "vitest";
import { z } from "zod";
import {
	type ReceivedMetric,
	type ReceivedRequest,
	type ReceivedSpan,
	type ReceiverMode,
	receivedMetric,
	receivedRequest,
	receivedSpan,
} from "../../scripts/fixtures/otlp-shapes.ts";
import { uniqueName } from "./gateway.ts";

/**
 * Where the whole gateway of the vitest project "telemetry" (test/telemetry-*.test.ts) exports:
 * `otlpSpans(GATEWAY_OTLP_TENANT)`. That project runs one file at a time, so the tenant holds one
 * file's exports; `resetOtlp(GATEWAY_OTLP_TENANT)` in a `beforeEach` gives each test its own.
 */
export { GATEWAY_OTLP_TENANT } from "../../scripts/fixtures/fixture-names.ts";
export type { ReceivedMetric, ReceivedRequest, ReceivedSpan };

/**
 * The OTLP receiver of the tests (scripts/fixtures/otlp-receiver.ts), a tenant per test:
 * tests that run at once (other files, the other project's workers) each read, reset and
 * break only their own tenant. `otlpEnv(tenant)` gives the variables that point a gateway
 * (or `telemetryFor`) at it.
 *
 * @example
 * const tenant = newOtlpTenant();
 * const telemetry = telemetryFor(otlpEnv(tenant));
 * // … spans, then telemetry.flush(…)
 * const spans = await eventually(async () => (await otlpSpans(tenant)).find((s) => s.name === "x"));
 */
export function otlpBase(tenant?: string): string {
	const root = `http://127.0.0.1:${inject("otlpPort")}`;
	return tenant ? `${root}/t/${tenant}` : root;
}

/** A tenant of the receiver no other test uses. */
export function newOtlpTenant(): string {
	return uniqueName("otlp");
}

/**
 * The OTEL_* variables that send a gateway's telemetry to `tenant`, with a metric interval
 * short enough that every flush exports metrics and spans; `extra` adds or overrides variables.
 */
export function otlpEnv(tenant?: string, extra: Record<string, string> = {}): Record<string, string> {
	return {
		OTEL_EXPORTER_OTLP_ENDPOINT: otlpBase(tenant),
		OTEL_SERVICE_NAME: "mcp-edge-gateway-test",
		OTEL_METRIC_EXPORT_INTERVAL: "1",
		// Spans at every flush too, not coalesced: a test sees what one request recorded.
		OTEL_BSP_SCHEDULE_DELAY: "0",
		...extra,
	};
}

async function control<T>(tenant: string | undefined, route: string, schema: z.ZodType<T>): Promise<T> {
	const response = await fetch(`${otlpBase(tenant)}/_control/${route}`);
	if (!response.ok) throw new Error(`OTLP receiver: GET ${route} answered ${response.status}`);
	return schema.parse(await response.json());
}

/** Every span the tenant received, flattened, oldest first. */
export function otlpSpans(tenant?: string): Promise<ReceivedSpan[]> {
	return control(tenant, "spans", z.array(receivedSpan));
}

/** Every metric record the tenant received (one per metric per export), oldest first. */
export function otlpMetrics(tenant?: string): Promise<ReceivedMetric[]> {
	return control(tenant, "metrics", z.array(receivedMetric));
}

/** Every export POST the tenant received, with its headers. */
export function otlpRequests(tenant?: string): Promise<ReceivedRequest[]> {
	return control(tenant, "requests", z.array(receivedRequest));
}

/** Forgets what the tenant received, answers exports it held, and sets its mode back to `ok`. */
export async function resetOtlp(tenant?: string): Promise<void> {
	const response = await fetch(`${otlpBase(tenant)}/_control/reset`, { method: "POST" });
	if (response.status !== 204) throw new Error(`OTLP receiver: reset answered ${response.status}`);
}

/** `stall`: the tenant holds every export unanswered until reset; `fail`: it answers 500. */
export async function setOtlpMode(mode: ReceiverMode, tenant?: string): Promise<void> {
	const response = await fetch(`${otlpBase(tenant)}/_control/mode`, {
		method: "POST",
		headers: { "content-type": "application/json" },
		body: JSON.stringify({ mode }),
	});
	if (response.status !== 204) throw new Error(`OTLP receiver: mode answered ${response.status}`);
}
