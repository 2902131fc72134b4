import { createExecutionContext } from "cloudflare:test";
import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ExportingTelemetry } from "../src/telemetry/exporting-telemetry.ts";
import { instrumentsOf, MCP_DURATION_BUCKETS } from "../src/telemetry/instruments.ts";
import { otelValues, parseOtelConfig } from "../src/telemetry/otel-config.ts";
import { failureStatusMessage } from "../src/telemetry/redaction.ts";
import { type Telemetry, telemetryFor } from "../src/telemetry/telemetry.ts";
import { parentContext } from "../src/telemetry/trace-context.ts";
import { eventually } from "./support/eventually.ts";
import {
	newOtlpTenant,
	otlpBase,
	otlpEnv,
	otlpMetrics,
	otlpRequests,
	otlpSpans,
	resetOtlp,
	setOtlpMode,
} from "./support/otlp.ts";
import { ManualClock } from "./support/session-object.ts";

/** Flushes as a request's end would, and returns the exports it handed to `waitUntil`. */
function flushNow(telemetry: Telemetry): Promise<unknown>[] {
	const exports: Promise<unknown>[] = [];
	telemetry.flush((promise) => exports.push(promise));
	return exports;
}

/**
 * Waits until the isolate's clock has moved past now, so that an OTEL_METRIC_EXPORT_INTERVAL of
 * 1 ms has passed: a Worker's clock stands still while its code runs and moves only with I/O.
 */
async function afterAMillisecond(): Promise<void> {
	const now = Date.now();
	await eventually(() => Date.now() > now, "the clock to move");
}

/** The telemetry `telemetryFor(env)` makes, on a clock the test moves by hand. */
function exportingOn(clock: ManualClock, env: Record<string, string>): ExportingTelemetry {
	const parsed = parseOtelConfig(otelValues(env));
	if (!parsed.ok || parsed.config === undefined) throw new Error("these OTEL_* variables turn telemetry off");
	return new ExportingTelemetry(parsed.config, () => clock.now());
}

/** A remote parent in `_meta`, sampled: what an instrumented MCP client sends. */
const SAMPLED_PARENT = { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" };

afterEach(() => {
	vi.restoreAllMocks();
});

describe("Export of spans over OTLP/HTTP JSON", () => {
	it("spans made through the tracer and flushed arrive at the collector with the resource and their attributes", async () => {
		const tenant = newOtlpTenant();
		const telemetry = telemetryFor(
			otlpEnv(tenant, {
				OTEL_SERVICE_NAME: "gateway-under-test",
				OTEL_RESOURCE_ATTRIBUTES: "deployment.environment.name=test,team=mcp%20edge",
			}),
		);
		expect(telemetry.enabled).toBe(true);
		const server = telemetry.tracer.startSpan("tools/call echo", {
			kind: SpanKind.SERVER,
			attributes: { "mcp.method.name": "tools/call", "gen_ai.tool.name": "echo", "jsonrpc.request.id": "7" },
		});
		server.addEvent("tool_call", { outcome: "ok" });
		const upstream = telemetry.tracer.startSpan(
			"tools/call echo",
			{ kind: SpanKind.CLIENT, attributes: { "server.address": "127.0.0.1", "server.port": 9 } },
			parentContext({ traceparent: `00-${server.spanContext().traceId}-${server.spanContext().spanId}-01` }),
		);
		upstream.setStatus({ code: SpanStatusCode.ERROR, message: failureStatusMessage("upstream_timeout") });
		upstream.end();
		server.end();

		const exports = flushNow(telemetry);
		expect(exports).toHaveLength(1);
		await Promise.all(exports);

		const spans = await otlpSpans(tenant);
		expect(spans).toHaveLength(2);
		const received = spans.find((span) => span.kind === "SERVER");
		expect(received).toMatchObject({
			name: "tools/call echo",
			traceId: server.spanContext().traceId,
			spanId: server.spanContext().spanId,
			attributes: { "mcp.method.name": "tools/call", "gen_ai.tool.name": "echo", "jsonrpc.request.id": "7" },
			events: [{ name: "tool_call", attributes: { outcome: "ok" } }],
			status: { code: "UNSET" },
			resource: {
				"service.name": "gateway-under-test",
				"cloud.provider": "cloudflare",
				"deployment.environment.name": "test",
				team: "mcp edge",
			},
			scope: "mcp-edge-gateway",
		});
		expect(received?.parentSpanId).toBeUndefined();
		expect(spans.find((span) => span.kind === "CLIENT")).toMatchObject({
			parentSpanId: server.spanContext().spanId,
			attributes: { "server.address": "127.0.0.1", "server.port": 9 },
			status: { code: "ERROR", message: failureStatusMessage("upstream_timeout") },
		});
		expect(telemetry.stats).toMatchObject({ spansExported: 2, spansDropped: 0, exportsFailed: 0, spansQueued: 0 });
	});

	it("the headers variable reaches the collector, percent-decoded, with the JSON content type", async () => {
		const tenant = newOtlpTenant();
		const telemetry = telemetryFor(
			otlpEnv(tenant, { OTEL_EXPORTER_OTLP_HEADERS: "x-honeycomb-team=key%2Fwith%20space , x-scope-orgid=tenant-1" }),
		);
		telemetry.tracer.startSpan("ping").end();
		await Promise.all(flushNow(telemetry));

		const requests = await otlpRequests(tenant);
		expect(requests).toHaveLength(1);
		expect(requests[0]).toMatchObject({
			path: "/v1/traces",
			items: 1,
			headers: {
				"x-honeycomb-team": "key/with space",
				"x-scope-orgid": "tenant-1",
				"content-type": "application/json",
			},
		});
	});

	it("a signal's own headers are added to the general ones for that signal alone", async () => {
		const tenant = newOtlpTenant();
		const telemetry = telemetryFor(
			otlpEnv(tenant, {
				OTEL_EXPORTER_OTLP_HEADERS: "x-honeycomb-team=key",
				OTEL_EXPORTER_OTLP_METRICS_HEADERS: "x-honeycomb-dataset=gateway-metrics",
			}),
		);
		instrumentsOf(telemetry).rateLimited.add(1);
		telemetry.tracer.startSpan("ping").end();
		await afterAMillisecond();
		await Promise.all(flushNow(telemetry));

		const requests = await otlpRequests(tenant);
		const traces = requests.find((request) => request.path === "/v1/traces");
		const metrics = requests.find((request) => request.path === "/v1/metrics");
		expect(traces?.headers["x-honeycomb-team"]).toBe("key");
		expect(traces?.headers["x-honeycomb-dataset"]).toBeUndefined();
		expect(metrics?.headers).toMatchObject({ "x-honeycomb-team": "key", "x-honeycomb-dataset": "gateway-metrics" });
	});

	it("a signal's own endpoint is used as it is, and without a metrics endpoint no metrics are sent", async () => {
		const tenant = newOtlpTenant();
		const telemetry = telemetryFor({
			OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${otlpBase(tenant)}/v1/traces`,
			OTEL_METRIC_EXPORT_INTERVAL: "1",
			OTEL_BSP_SCHEDULE_DELAY: "0",
		});
		instrumentsOf(telemetry).refusals.add(1, { "mcp_gateway.refusal.kind": "auth" });
		telemetry.tracer.startSpan("initialize").end();
		await Promise.all(flushNow(telemetry));

		expect((await otlpRequests(tenant)).map((request) => request.path)).toEqual(["/v1/traces"]);
		expect(await otlpSpans(tenant)).toHaveLength(1);
	});

	it("a flush with nothing recorded sends nothing", async () => {
		const tenant = newOtlpTenant();
		const telemetry = telemetryFor(otlpEnv(tenant));
		await afterAMillisecond();
		// Metrics are due (1 ms interval): the flush collects them, finds none, and posts nothing.
		await Promise.all(flushNow(telemetry));
		expect(await otlpRequests(tenant)).toHaveLength(0);
		expect(telemetry.stats).toMatchObject({ spansExported: 0, metricExports: 0, exportsFailed: 0 });
	});
});

describe("Coalesced exports (OTEL_BSP_SCHEDULE_DELAY, OTEL_BSP_MAX_EXPORT_BATCH_SIZE)", () => {
	it("spans wait for a full batch: flushes before it post nothing, the flush that fills it posts the batch in one request", async () => {
		const tenant = newOtlpTenant();
		const telemetry = telemetryFor(
			otlpEnv(tenant, {
				OTEL_BSP_SCHEDULE_DELAY: "600000",
				OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "3",
				OTEL_METRIC_EXPORT_INTERVAL: "600000",
			}),
		);
		for (const name of ["initialize", "tools/list"]) {
			telemetry.tracer.startSpan(name).end();
			expect(flushNow(telemetry)).toHaveLength(0);
		}
		expect(telemetry.stats.spansQueued).toBe(2);
		telemetry.tracer.startSpan("tools/call echo").end();
		await Promise.all(flushNow(telemetry));

		const requests = await otlpRequests(tenant);
		expect(requests).toHaveLength(1);
		expect(requests[0]).toMatchObject({ path: "/v1/traces", items: 3 });
		expect((await otlpSpans(tenant)).map((span) => span.name)).toEqual(["initialize", "tools/list", "tools/call echo"]);
		expect(telemetry.stats).toMatchObject({ spansExported: 3, spansQueued: 0 });
	});

	it("an export takes one batch at most, oldest first; the rest stays queued for a later flush", async () => {
		const tenant = newOtlpTenant();
		const telemetry = telemetryFor(
			otlpEnv(tenant, {
				OTEL_BSP_SCHEDULE_DELAY: "600000",
				OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "2",
				OTEL_METRIC_EXPORT_INTERVAL: "600000",
			}),
		);
		for (const name of ["a", "b", "c", "d", "e"]) telemetry.tracer.startSpan(name).end();
		await Promise.all(flushNow(telemetry));
		expect(telemetry.stats).toMatchObject({ spansExported: 2, spansQueued: 3 });
		await Promise.all(flushNow(telemetry));
		// One span left: less than a batch, and younger than the delay.
		expect(flushNow(telemetry)).toHaveLength(0);
		expect((await otlpSpans(tenant)).map((span) => span.name)).toEqual(["a", "b", "c", "d"]);
		expect(telemetry.stats.spansQueued).toBe(1);
	});

	it("spans younger than the delay are not held by any timer: nothing is handed to waitUntil, and the first flush after they are due sends them together", async () => {
		const tenant = newOtlpTenant();
		const clock = new ManualClock();
		const telemetry = exportingOn(
			clock,
			otlpEnv(tenant, { OTEL_BSP_SCHEDULE_DELAY: "1000", OTEL_METRIC_EXPORT_INTERVAL: "600000" }),
		);
		telemetry.tracer.startSpan("tools/list").end();
		telemetry.tracer.startSpan("tools/call echo").end();
		clock.advance(999);
		// Not yet due, and nothing waits in the background for them.
		expect(flushNow(telemetry)).toHaveLength(0);
		expect(telemetry.stats.spansQueued).toBe(2);
		clock.advance(1);
		await Promise.all(flushNow(telemetry));

		const requests = await otlpRequests(tenant);
		expect(requests).toHaveLength(1);
		expect((await otlpSpans(tenant)).map((span) => span.name)).toEqual(["tools/list", "tools/call echo"]);
		expect(telemetry.stats.spansQueued).toBe(0);
	});

	it("a draining flush (a session's end) sends the queued spans at once, due or not", async () => {
		const tenant = newOtlpTenant();
		const telemetry = telemetryFor(
			otlpEnv(tenant, { OTEL_BSP_SCHEDULE_DELAY: "600000", OTEL_METRIC_EXPORT_INTERVAL: "600000" }),
		);
		telemetry.tracer.startSpan("tools/list").end();
		expect(flushNow(telemetry)).toHaveLength(0);
		expect(telemetry.stats.spansQueued).toBe(1);
		const exports: Promise<unknown>[] = [];
		telemetry.flush((promise) => exports.push(promise), true);
		await Promise.all(exports);

		expect((await otlpSpans(tenant)).map((span) => span.name)).toEqual(["tools/list"]);
		expect(telemetry.stats).toMatchObject({ spansExported: 1, spansQueued: 0 });
	});

	it("queued spans ride a metrics export that is due, even before their own delay", async () => {
		const tenant = newOtlpTenant();
		const telemetry = telemetryFor(otlpEnv(tenant, { OTEL_BSP_SCHEDULE_DELAY: "600000" }));
		telemetry.tracer.startSpan("tools/call echo").end();
		instrumentsOf(telemetry).rateLimited.add(1);
		await afterAMillisecond();
		await Promise.all(flushNow(telemetry));

		const paths = (await otlpRequests(tenant)).map((request) => request.path).sort();
		expect(paths).toEqual(["/v1/metrics", "/v1/traces"]);
	});

	it("a batch size above the queue's is the queue's: a full queue is exported at once", async () => {
		const tenant = newOtlpTenant();
		const telemetry = telemetryFor(
			otlpEnv(tenant, {
				OTEL_BSP_MAX_QUEUE_SIZE: "2",
				OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "512",
				OTEL_BSP_SCHEDULE_DELAY: "600000",
				OTEL_METRIC_EXPORT_INTERVAL: "600000",
			}),
		);
		telemetry.tracer.startSpan("a").end();
		telemetry.tracer.startSpan("b").end();
		await Promise.all(flushNow(telemetry));
		expect(await otlpSpans(tenant)).toHaveLength(2);
	});
});

describe("Sampling (OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG)", () => {
	it("always_off records and sends nothing, whatever the parent", async () => {
		const tenant = newOtlpTenant();
		const telemetry = telemetryFor(otlpEnv(tenant, { OTEL_TRACES_SAMPLER: "always_off" }));
		const root = telemetry.tracer.startSpan("tools/list");
		const child = telemetry.tracer.startSpan("tools/call echo", {}, parentContext(SAMPLED_PARENT));
		expect(root.isRecording()).toBe(false);
		expect(child.isRecording()).toBe(false);
		root.end();
		child.end();
		await Promise.all(flushNow(telemetry));
		expect(telemetry.stats.spansQueued).toBe(0);
		expect(await otlpSpans(tenant)).toHaveLength(0);
	});

	it("parentbased_traceidratio with ratio 0 drops a new trace but samples a span whose remote parent was sampled", async () => {
		const tenant = newOtlpTenant();
		const telemetry = telemetryFor(
			otlpEnv(tenant, { OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "0" }),
		);
		const root = telemetry.tracer.startSpan("tools/list");
		expect(root.isRecording()).toBe(false);
		root.end();
		const child = telemetry.tracer.startSpan(
			"tools/call echo",
			{ kind: SpanKind.SERVER },
			parentContext(SAMPLED_PARENT),
		);
		expect(child.isRecording()).toBe(true);
		child.end();
		await Promise.all(flushNow(telemetry));

		const spans = await otlpSpans(tenant);
		expect(spans).toEqual([
			expect.objectContaining({
				name: "tools/call echo",
				traceId: "0af7651916cd43dd8448eb211c80319c",
				parentSpanId: "b7ad6b7169203331",
			}),
		]);
	});

	it("traceidratio 1 samples every new trace", async () => {
		const tenant = newOtlpTenant();
		const telemetry = telemetryFor(
			otlpEnv(tenant, { OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "1" }),
		);
		for (let i = 0; i < 5; i++) telemetry.tracer.startSpan(`span ${i}`).end();
		await Promise.all(flushNow(telemetry));
		expect(await otlpSpans(tenant)).toHaveLength(5);
	});
});

describe("Export of metrics over OTLP/HTTP JSON", () => {
	it("the instruments arrive with the conventions' names, unit s, bucket bounds and delta temporality", async () => {
		const tenant = newOtlpTenant();
		const telemetry = telemetryFor(otlpEnv(tenant));
		const instruments = instrumentsOf(telemetry);
		expect(instrumentsOf(telemetry)).toBe(instruments);
		instruments.serverOperationDuration.record(0.03, { "mcp.method.name": "tools/call", "gen_ai.tool.name": "echo" });
		instruments.serverOperationDuration.record(0.5, { "mcp.method.name": "tools/call", "gen_ai.tool.name": "echo" });
		instruments.clientOperationDuration.record(0.012, { "mcp.method.name": "tools/call" });
		instruments.serverSessionDuration.record(42, { "mcp.protocol.version": "2025-11-25" });
		instruments.refusals.add(1, { "mcp_gateway.refusal.kind": "policy" });
		instruments.rateLimited.add(2);
		instruments.toolsHeld.add(1);
		await afterAMillisecond();
		await Promise.all(flushNow(telemetry));

		const metrics = await otlpMetrics(tenant);
		const byName = new Map(metrics.map((metric) => [metric.name, metric]));
		for (const name of [
			"mcp.server.operation.duration",
			"mcp.client.operation.duration",
			"mcp.server.session.duration",
		]) {
			expect(byName.get(name)).toMatchObject({
				type: "histogram",
				unit: "s",
				temporality: "DELTA",
				resource: { "service.name": "mcp-edge-gateway-test" },
			});
			expect(byName.get(name)?.points[0]?.explicitBounds).toEqual([...MCP_DURATION_BUCKETS]);
		}
		expect(byName.get("mcp.server.operation.duration")?.description).toMatch(/observed on the receiver/);
		expect(byName.get("mcp.server.operation.duration")?.points).toEqual([
			expect.objectContaining({
				attributes: { "mcp.method.name": "tools/call", "gen_ai.tool.name": "echo" },
				count: 2,
				sum: 0.53,
			}),
		]);
		expect(byName.get("mcp_gateway.refusals")).toMatchObject({
			type: "sum",
			temporality: "DELTA",
			points: [{ attributes: { "mcp_gateway.refusal.kind": "policy" }, value: 1 }],
		});
		expect(byName.get("mcp_gateway.rate_limited")?.points[0]?.value).toBe(2);
		expect(byName.get("mcp_gateway.tools.held")?.points[0]?.value).toBe(1);
	});

	it("metrics wait for the export interval; spans do not", async () => {
		const tenant = newOtlpTenant();
		const telemetry = telemetryFor(otlpEnv(tenant, { OTEL_METRIC_EXPORT_INTERVAL: "3600000" }));
		instrumentsOf(telemetry).refusals.add(1, { "mcp_gateway.refusal.kind": "auth" });
		telemetry.tracer.startSpan("ping").end();
		await Promise.all(flushNow(telemetry));
		expect((await otlpRequests(tenant)).map((request) => request.path)).toEqual(["/v1/traces"]);
		expect(telemetry.stats.metricExports).toBe(0);
	});
});

describe("A collector that stalls or fails costs the gateway nothing", () => {
	it("with a stalled collector, flush returns at once, one export stays in flight, the queue stays bounded and drops are counted; the export, once answered, takes what the flushes meanwhile found", async () => {
		const tenant = newOtlpTenant();
		await setOtlpMode("stall", tenant);
		const telemetry = telemetryFor(
			otlpEnv(tenant, {
				OTEL_BSP_MAX_QUEUE_SIZE: "4",
				OTEL_BSP_EXPORT_TIMEOUT: "60000",
				OTEL_METRIC_EXPORT_INTERVAL: "3600000",
			}),
		);
		telemetry.tracer.startSpan("first").end();
		const held = flushNow(telemetry);
		expect(held).toHaveLength(1);
		await eventually(async () => (await otlpRequests(tenant)).length === 1, "the export reached the collector");

		for (let i = 0; i < 10; i++) telemetry.tracer.startSpan(`meanwhile ${i}`).end();
		const started = performance.now();
		expect(flushNow(telemetry)).toHaveLength(0);
		expect(flushNow(telemetry)).toHaveLength(0);
		expect(performance.now() - started).toBeLessThan(50);
		expect(telemetry.stats).toMatchObject({ spansQueued: 4, spansDropped: 6, spansExported: 0 });
		expect(await otlpRequests(tenant)).toHaveLength(1);

		// The collector answers again: the held export completes and, as flushes came meanwhile, takes
		// the queued spans itself (in the held request's waitUntil), with no further flush.
		await resetOtlp(tenant);
		await Promise.all(held);
		expect(telemetry.stats).toMatchObject({ spansExported: 5, spansQueued: 0, spansDropped: 6 });
		// The reset forgot the stalled request: the follow-up is the one recorded since.
		expect(await otlpRequests(tenant)).toHaveLength(1);
		expect(flushNow(telemetry)).toHaveLength(0);
		expect((await otlpSpans(tenant)).map((span) => span.name)).toEqual([
			"meanwhile 0",
			"meanwhile 1",
			"meanwhile 2",
			"meanwhile 3",
		]);
	});

	it("a stalled export gives up after OTEL_BSP_EXPORT_TIMEOUT and counts its spans as dropped", async () => {
		const tenant = newOtlpTenant();
		await setOtlpMode("stall", tenant);
		const warnings = vi.spyOn(console, "warn").mockImplementation(() => {});
		const telemetry = telemetryFor(
			otlpEnv(tenant, { OTEL_BSP_EXPORT_TIMEOUT: "100", OTEL_METRIC_EXPORT_INTERVAL: "3600000" }),
		);
		telemetry.tracer.startSpan("never answered").end();
		await Promise.all(flushNow(telemetry));
		expect(telemetry.stats).toMatchObject({ exportsFailed: 1, spansDropped: 1, spansExported: 0 });
		expect(warnings).toHaveBeenCalledTimes(1);
		expect(String(warnings.mock.calls[0]?.[0])).toMatch(/no answer within 100 ms/);
		await resetOtlp(tenant);
	});

	it("a failing collector throws nothing; failures are counted and logged once in a while, not per export", async () => {
		const tenant = newOtlpTenant();
		await setOtlpMode("fail", tenant);
		const warnings = vi.spyOn(console, "warn").mockImplementation(() => {});
		const telemetry = telemetryFor(otlpEnv(tenant, { OTEL_EXPORTER_OTLP_HEADERS: "authorization=Bearer%20s3cret" }));
		instrumentsOf(telemetry).refusals.add(1, { "mcp_gateway.refusal.kind": "auth" });
		for (let round = 0; round < 3; round++) {
			telemetry.tracer.startSpan(`round ${round}`).end();
			await afterAMillisecond();
			await expect(Promise.all(flushNow(telemetry))).resolves.toBeDefined();
		}
		// Three span exports and the metrics export (its interval is 1 ms, so it was due at each flush).
		expect(telemetry.stats.exportsFailed).toBeGreaterThanOrEqual(4);
		expect(telemetry.stats).toMatchObject({ spansDropped: 3, spansExported: 0 });
		expect(warnings).toHaveBeenCalledTimes(1);
		const line = String(warnings.mock.calls[0]?.[0]);
		expect(line).toMatch(/HTTP 500/);
		expect(line).not.toMatch(/s3cret/);
	});
});

describe("An export that never settles does not stop telemetry", () => {
	it("an export whose request ended and whose fetch never settles counts as lost once OTEL_BSP_EXPORT_TIMEOUT plus a margin has passed: its spans are dropped, the next flush exports to the collector, and the lost export, settling at last, counts nothing", async () => {
		const tenant = newOtlpTenant();
		await setOtlpMode("stall", tenant);
		const warnings = vi.spyOn(console, "warn").mockImplementation(() => {});
		const clock = new ManualClock();
		// A timeout no test reaches: the held fetch stays pending, as one whose request's context ended
		// (and took its timers along) would; only the injected clock passes the deadline.
		const telemetry = exportingOn(
			clock,
			otlpEnv(tenant, { OTEL_BSP_EXPORT_TIMEOUT: "60000", OTEL_METRIC_EXPORT_INTERVAL: "3600000" }),
		);
		telemetry.tracer.startSpan("lost").end();
		// The request that flushes ends with its response: its waitUntil is handed the export, and
		// nothing waits for that context any more.
		const request = createExecutionContext();
		const lost: Promise<unknown>[] = [];
		telemetry.flush((promise) => {
			lost.push(promise);
			request.waitUntil(promise);
		});
		expect(lost).toHaveLength(1);
		let lostSettled = false;
		void lost[0]?.finally(() => {
			lostSettled = true;
		});
		await eventually(async () => (await otlpRequests(tenant)).length === 1, "the export reached the collector");
		// The collector takes exports again; the one it holds stays unanswered.
		await setOtlpMode("ok", tenant);

		telemetry.tracer.startSpan("before the deadline").end();
		clock.advance(60_000 + 999);
		expect(flushNow(telemetry)).toHaveLength(0);
		expect(telemetry.stats).toMatchObject({ spansQueued: 1, spansDropped: 0, exportsFailed: 0 });

		clock.advance(1);
		telemetry.tracer.startSpan("after the deadline").end();
		const next = flushNow(telemetry);
		expect(next).toHaveLength(1);
		await Promise.all(next);
		expect(lostSettled).toBe(false);
		expect(telemetry.stats).toMatchObject({ spansExported: 2, spansDropped: 1, exportsFailed: 1, spansQueued: 0 });
		expect((await otlpRequests(tenant)).map((received) => received.items)).toEqual([1, 2]);
		expect((await otlpSpans(tenant)).map((span) => span.name)).toEqual([
			"lost",
			"before the deadline",
			"after the deadline",
		]);
		expect(warnings).toHaveBeenCalledTimes(1);
		expect(String(warnings.mock.calls[0]?.[0])).toMatch(/export of 1 spans .*\(not settled within 61000 ms/);

		// Answered at last, the lost export changes no count, and the slot stays free for the next flush.
		await resetOtlp(tenant);
		await lost[0];
		expect(telemetry.stats).toMatchObject({ spansExported: 2, spansDropped: 1, exportsFailed: 1 });
		telemetry.tracer.startSpan("later").end();
		await Promise.all(flushNow(telemetry));
		expect(telemetry.stats.spansExported).toBe(3);
	});
});

describe("Telemetry off, and wrong settings", () => {
	it("without an endpoint telemetry is the no-op: the same object each time, and no fetch at all", async () => {
		const fetches = vi.spyOn(globalThis, "fetch");
		const env = { OTEL_SERVICE_NAME: "ignored-without-an-endpoint" };
		const telemetry = telemetryFor(env);
		expect(telemetry.enabled).toBe(false);
		expect(telemetryFor({})).toBe(telemetryFor({ OTEL_EXPORTER_OTLP_ENDPOINT: "" }));
		const span = telemetry.tracer.startSpan("tools/call echo");
		expect(span.isRecording()).toBe(false);
		span.end();
		instrumentsOf(telemetry).serverOperationDuration.record(1, { "mcp.method.name": "tools/call" });
		expect(flushNow(telemetry)).toHaveLength(0);
		expect(fetches).not.toHaveBeenCalled();
	});

	it("OTEL_SDK_DISABLED=true turns export off even with an endpoint", () => {
		const telemetry = telemetryFor(otlpEnv(newOtlpTenant(), { OTEL_SDK_DISABLED: "true" }));
		expect(telemetry.enabled).toBe(false);
	});

	it("a wrong variable gives one warning line naming it (never a secret's value) and telemetry off", () => {
		const warnings = vi.spyOn(console, "warn").mockImplementation(() => {});
		const env = otlpEnv(newOtlpTenant(), { OTEL_EXPORTER_OTLP_HEADERS: "just-a-secret-without-a-key" });
		expect(telemetryFor(env).enabled).toBe(false);
		expect(telemetryFor({ ...env }).enabled).toBe(false);
		expect(warnings).toHaveBeenCalledTimes(1);
		const line = String(warnings.mock.calls[0]?.[0]);
		expect(line).toMatch(/OTEL_EXPORTER_OTLP_HEADERS/);
		expect(line).not.toMatch(/just-a-secret/);
	});

	it.each([
		["OTEL_TRACES_SAMPLER", "sometimes"],
		["OTEL_TRACES_SAMPLER_ARG", "1.5"],
		["OTEL_METRIC_EXPORT_INTERVAL", "soon"],
		["OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318"],
		["OTEL_BSP_MAX_QUEUE_SIZE", "-1"],
		["OTEL_BSP_SCHEDULE_DELAY", "-5"],
		["OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "0"],
	])("%s=%s is refused with a warning naming the variable", (variable, value) => {
		const warnings = vi.spyOn(console, "warn").mockImplementation(() => {});
		expect(telemetryFor(otlpEnv(newOtlpTenant(), { [variable]: value })).enabled).toBe(false);
		expect(warnings).toHaveBeenCalledTimes(1);
		expect(String(warnings.mock.calls[0]?.[0])).toContain(variable);
	});
});

describe("The test receiver", () => {
	it("decodes a gzip-compressed export and groups the last traces at GET /traces", async () => {
		const tenant = newOtlpTenant();
		const request = {
			resourceSpans: [
				{
					resource: { attributes: [{ key: "service.name", value: { stringValue: "gzip-sender" } }] },
					scopeSpans: [
						{
							spans: [
								{
									traceId: "5b8efff798038103d269b633813fc60c",
									spanId: "eee19b7ec3c1b174",
									name: "tools/list",
									kind: 2,
									startTimeUnixNano: "1544712660000000000",
									endTimeUnixNano: "1544712661000000000",
									attributes: [{ key: "mcp.method.name", value: { stringValue: "tools/list" } }],
								},
							],
						},
					],
				},
			],
		};
		const gzipped = new Blob([JSON.stringify(request)]).stream().pipeThrough(new CompressionStream("gzip"));
		const response = await fetch(`${otlpBase(tenant)}/v1/traces`, {
			method: "POST",
			headers: { "content-type": "application/json", "content-encoding": "gzip" },
			body: await new Response(gzipped).arrayBuffer(),
		});
		expect(response.status).toBe(200);
		expect(await otlpSpans(tenant)).toEqual([
			expect.objectContaining({
				name: "tools/list",
				kind: "SERVER",
				attributes: { "mcp.method.name": "tools/list" },
				resource: { "service.name": "gzip-sender" },
			}),
		]);
		const traces = (await (await fetch(`${otlpBase(tenant)}/traces`)).json()) as Array<{ traceId: string }>;
		expect(traces.map((trace) => trace.traceId)).toEqual(["5b8efff798038103d269b633813fc60c"]);
	});
});
