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
/**
 * How long an export keeps taking what later flushes found due. Its I/O belongs to the request
 * that started it, whose waitUntil lasts about 30 s: an export begun within this window and
 * bounded by OTEL_BSP_EXPORT_TIMEOUT (5 s by default) ends well inside that.
 */
const FOLLOW_UP_WINDOW_MS = 10_000;

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
 * isolate: what flushes find due meanwhile rides that export's follow-up, so a slow collector never
 * piles up fetches (a Worker has six connections at a time) and a dead one costs the queue's bound.
 * Spans are coalesced: a flush exports them when a batch is full or the oldest has waited
 * OTEL_BSP_SCHEDULE_DELAY, read at flushes (see `#spansDue`). No timer holds spans not yet due:
 * one held in a request's waitUntil put about 1.3 ms on every call of the isolate at the p50 in
 * `npm run bench` (docs/observability.md), so they go with a later flush, and a session's end
 * (its Durable Object's alarm) drains what is queued, due or not (`flush(waitUntil, true)`).
 */
export class ExportingTelemetry implements Telemetry {
	readonly enabled = true;
	readonly tracer: Tracer;
	readonly meter: Meter;
	readonly stats: TelemetryStats;
	readonly #config: OtelConfig;
	readonly #queue: SpanQueue;
	readonly #reader: OnDemandMetricReader | undefined;
	/** The export in flight, if any: at most one per isolate. */
	#inFlight: Promise<void> | undefined;
	/** A flush came while an export was in flight: see what is due when it ends. */
	#followUp = false;
	/** A flush that drains came while an export was in flight: the follow-up takes what is queued, due or not. */
	#drainFollowUp = false;
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

	flush(waitUntil: WaitUntil, drain = false): void {
		this.#countDropped(this.#queue.takeDropped(), "queue_full");
		if (this.#inFlight) {
			// Never two fetches at once: the export in flight takes what is due when it ends (in the
			// request that started it, whose waitUntil holds it; a promise is not shared across
			// requests), so nothing waits for a flush that may never come.
			this.#followUp = true;
			if (drain) this.#drainFollowUp = true;
			return;
		}
		const batch = this.#dueBatch(drain);
		if (batch === undefined) return;
		this.#followUp = false;
		this.#inFlight = this.#exportFrom(batch).finally(() => {
			this.#inFlight = undefined;
		});
		waitUntil(this.#inFlight);
	}

	/** What a flush should export now (spans, and whether metrics go too), or `undefined`: nothing is due. */
	#dueBatch(drain = false): { spans: ReadableSpan[]; metricsDue: boolean } | undefined {
		const metricsDue =
			this.#reader !== undefined && Date.now() - this.#lastMetricsExport >= this.#config.metricIntervalMs;
		const spansDue = this.#queue.size > 0 && (drain || this.#spansDue());
		if (!spansDue && !metricsDue) return undefined;
		// Stamped before the export: a failing collector is asked again next interval, not at every flush.
		if (metricsDue) this.#lastMetricsExport = Date.now();
		// Queued spans ride a metrics export whenever one goes: the fetch is paid anyway.
		return { spans: this.#queue.take(this.#config.maxExportBatchSize), metricsDue };
	}

	/**
	 * One export, then the follow-ups flushes asked for meanwhile, for FOLLOW_UP_WINDOW_MS at most
	 * (after that, the next flush starts afresh in its own request).
	 */
	async #exportFrom(first: { spans: ReadableSpan[]; metricsDue: boolean }): Promise<void> {
		const started = Date.now();
		// A task of its own: serializing and the fetch begin once the caller has returned its answer
		// (a flush is called just before), so they never delay the response or the RPC's reply.
		await new Promise((resolve) => setTimeout(resolve, 0));
		let batch: { spans: ReadableSpan[]; metricsDue: boolean } | undefined = first;
		while (batch !== undefined) {
			await Promise.all([this.#exportSpans(batch.spans), batch.metricsDue ? this.#exportMetrics() : undefined]);
			if (!this.#followUp || Date.now() - started >= FOLLOW_UP_WINDOW_MS) return;
			this.#followUp = false;
			const drain = this.#drainFollowUp;
			this.#drainFollowUp = false;
			batch = this.#dueBatch(drain);
		}
	}

	/**
	 * Whether queued spans should go now: a full batch, or the oldest has waited the schedule delay.
	 * Coalesced so, an isolate pays one fetch and one serialization per batch instead of per request;
	 * spans not yet due wait for the first flush after they are.
	 */
	#spansDue(): boolean {
		const queued = this.#queue.size;
		if (queued === 0) return false;
		return queued >= this.#config.maxExportBatchSize || this.#queue.oldestAge() >= this.#config.scheduleDelayMs;
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
