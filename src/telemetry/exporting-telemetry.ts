import { createNoopMeter, type Meter, type Tracer, trace } from "@opentelemetry/api";
import { JsonMetricsSerializer, JsonTraceSerializer } from "@opentelemetry/otlp-transformer";
import { type Resource, resourceFromAttributes } from "@opentelemetry/resources";
import { MeterProvider } from "@opentelemetry/sdk-metrics";
import {
	AlwaysOffSampler,
	AlwaysOnSampler,
	ParentBasedSampler,
	type ReadableSpan,
	type Sampler,
	TraceIdRatioBasedSampler,
	TracerProvider,
} from "@opentelemetry/sdk-trace";
import type { WaitUntil } from "../primitives/wait-until.ts";
import { GATEWAY_ATTRIBUTES, instrumentsOf } from "./instruments.ts";
import { OnDemandMetricReader } from "./metric-reader.ts";
import type { OtelConfig, SamplerName } from "./otel-config.ts";
import { displayEndpoint, type PostOutcome, postOtlp } from "./otlp-post.ts";
import { SpanQueue } from "./span-queue.ts";
import type { Telemetry, TelemetryStats } from "./telemetry.ts";

/** The instrumentation scope the gateway's spans and metrics carry. */
const SCOPE = "mcp-edge-gateway";
/** A failing collector is reported at most this often (plus its first failure). */
const FAILURE_LOG_INTERVAL_MS = 60_000;

function samplerOf(name: SamplerName, ratio: number): Sampler {
	switch (name) {
		case "always_on":
			return new AlwaysOnSampler();
		case "always_off":
			return new AlwaysOffSampler();
		case "traceidratio":
			return new TraceIdRatioBasedSampler(ratio);
		case "parentbased_always_on":
			return new ParentBasedSampler({ root: new AlwaysOnSampler() });
		case "parentbased_always_off":
			return new ParentBasedSampler({ root: new AlwaysOffSampler() });
		case "parentbased_traceidratio":
			return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) });
	}
}

function resourceOf(config: OtelConfig): Resource {
	return resourceFromAttributes({
		"cloud.provider": "cloudflare",
		...config.resourceAttributes,
		"service.name": config.serviceName,
	});
}

/**
 * The telemetry of one configuration in one isolate: an SDK tracer provider whose finished
 * spans wait in a bounded queue, a meter provider read on demand, and `flush`, which hands
 * both to the collector in the request's `waitUntil`. At most one export is in flight per
 * isolate: spans finished meanwhile ride the next flush, so a slow collector never piles up
 * fetches (a Worker has six connections at a time) and a dead one costs the queue's bound.
 */
export class ExportingTelemetry implements Telemetry {
	readonly enabled = true;
	readonly tracer: Tracer;
	readonly meter: Meter;
	readonly stats: TelemetryStats;
	readonly #config: OtelConfig;
	readonly #queue: SpanQueue;
	readonly #reader: OnDemandMetricReader | undefined;
	#inFlight = false;
	#lastMetricsExport = Date.now();
	#lastFailureLog = Number.NEGATIVE_INFINITY;
	#counts = { spansExported: 0, spansDropped: 0, exportsFailed: 0, metricExports: 0 };

	constructor(config: OtelConfig) {
		this.#config = config;
		this.#queue = new SpanQueue(config.maxQueueSize);
		const resource = resourceOf(config);
		if (config.tracesUrl === undefined) {
			this.tracer = trace.getTracer(SCOPE);
		} else {
			const provider = new TracerProvider({
				resource,
				sampler: samplerOf(config.sampler, config.samplerRatio),
				spanProcessors: [this.#queue],
			});
			this.tracer = provider.getTracer(SCOPE);
		}
		if (config.metricsUrl === undefined) {
			this.meter = createNoopMeter();
		} else {
			this.#reader = new OnDemandMetricReader();
			this.meter = new MeterProvider({ resource, readers: [this.#reader] }).getMeter(SCOPE);
		}
		const counts = this.#counts;
		const queue = this.#queue;
		this.stats = {
			get spansExported() {
				return counts.spansExported;
			},
			get spansDropped() {
				return counts.spansDropped;
			},
			get exportsFailed() {
				return counts.exportsFailed;
			},
			get metricExports() {
				return counts.metricExports;
			},
			get spansQueued() {
				return queue.size;
			},
		};
	}

	flush(waitUntil: WaitUntil): void {
		this.#countDropped(this.#queue.takeDropped(), "queue_full");
		if (this.#inFlight) return;
		const metricsDue =
			this.#reader !== undefined && Date.now() - this.#lastMetricsExport >= this.#config.metricIntervalMs;
		if (this.#queue.size === 0 && !metricsDue) return;
		const spans = this.#queue.take();
		// Stamped before the export: a failing collector is asked again next interval, not at every flush.
		if (metricsDue) this.#lastMetricsExport = Date.now();
		this.#inFlight = true;
		waitUntil(
			this.#export(spans, metricsDue).finally(() => {
				this.#inFlight = false;
			}),
		);
	}

	async #export(spans: ReadableSpan[], metricsDue: boolean): Promise<void> {
		// A task of its own: serializing and the fetch begin once the caller has returned its answer
		// (a flush is called just before), so they never delay the response or the RPC's reply.
		await new Promise((resolve) => setTimeout(resolve, 0));
		await Promise.all([this.#exportSpans(spans), metricsDue ? this.#exportMetrics() : undefined]);
	}

	async #exportSpans(spans: ReadableSpan[]): Promise<void> {
		const url = this.#config.tracesUrl;
		if (spans.length === 0 || url === undefined) return;
		const body = JsonTraceSerializer.serializeRequest(spans);
		const outcome: PostOutcome = body
			? await postOtlp(url, this.#config.tracesHeaders, body, this.#config.exportTimeoutMs)
			: { ok: false, reason: "the spans could not be serialized" };
		if (outcome.ok) {
			this.#counts.spansExported += spans.length;
			return;
		}
		this.#countDropped(spans.length, "export_failed");
		this.#failed(url, `${spans.length} spans`, outcome.reason);
	}

	async #exportMetrics(): Promise<void> {
		const url = this.#config.metricsUrl;
		if (this.#reader === undefined || url === undefined) return;
		const { resourceMetrics } = await this.#reader.collect();
		if (resourceMetrics.scopeMetrics.every((scope) => scope.metrics.length === 0)) return;
		const body = JsonMetricsSerializer.serializeRequest(resourceMetrics);
		const outcome: PostOutcome = body
			? await postOtlp(url, this.#config.metricsHeaders, body, this.#config.exportTimeoutMs)
			: { ok: false, reason: "the metrics could not be serialized" };
		if (outcome.ok) this.#counts.metricExports++;
		else this.#failed(url, "metrics", outcome.reason);
	}

	#countDropped(count: number, reason: "queue_full" | "export_failed"): void {
		if (count === 0) return;
		this.#counts.spansDropped += count;
		instrumentsOf(this).telemetryDropped.add(count, { [GATEWAY_ATTRIBUTES.dropReason]: reason });
	}

	#failed(url: string, what: string, reason: string): void {
		this.#counts.exportsFailed++;
		const now = Date.now();
		if (now - this.#lastFailureLog < FAILURE_LOG_INTERVAL_MS) return;
		this.#lastFailureLog = now;
		console.warn(
			`telemetry: export of ${what} to ${displayEndpoint(url)} failed (${reason}); ${this.#counts.exportsFailed} failed exports in this isolate so far`,
		);
	}
}
