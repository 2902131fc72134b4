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
import { LapsingSlot, type SlotHold } from "../primitives/lapsing-slot.ts";
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
/**
 * How long past OTEL_BSP_EXPORT_TIMEOUT an export may still be under way before it counts as lost.
 * `postOtlp` settles within the timeout while its request's timers run; past this margin (which
 * covers serializing a batch, about 7 ms for 512 spans, on a busy isolate) its request's context
 * has ended and took the fetch and the timer with it, so it may never settle (issue 33: an isolate
 * exported nothing for 7 minutes while its collector was fine).
 */
const EXPORT_LOST_MARGIN_MS = 1_000;

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

/** One export under way: its hold on the isolate's export slot, and the spans it is sending now. */
interface ExportRun {
	hold: SlotHold;
	spans: number;
}

/**
 * The telemetry of one configuration in one isolate: an SDK tracer provider whose finished
 * spans wait in a bounded queue, a meter provider read on demand, and `flush`, which hands
 * both to the collector in the request's `waitUntil`. At most one export is in flight per
 * isolate: what flushes find due meanwhile rides that export's follow-up, so a slow collector never
 * piles up fetches (a Worker has six connections at a time) and a dead one costs the queue's bound.
 * An export still under way OTEL_BSP_EXPORT_TIMEOUT plus a margin after it began is lost (its
 * request ended and took it along): its spans count as dropped and the next flush exports afresh.
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
	readonly #now: () => number;
	/** Held by the export in flight: at most one per isolate, and lost at its deadline. */
	readonly #exportSlot: LapsingSlot;
	/** The export in flight, if any; one past its deadline stays here until the next flush counts it lost. */
	#run: ExportRun | undefined;
	/** A flush came while an export was in flight: see what is due when it ends. */
	#followUp = false;
	/** A flush that drains came while an export was in flight: the follow-up takes what is queued, due or not. */
	#drainFollowUp = false;
	#lastMetricsExport: number;
	#lastFailureLog = Number.NEGATIVE_INFINITY;
	#counts = { spansExported: 0, spansDropped: 0, exportsFailed: 0, metricExports: 0 };

	/** `now`: the isolate's clock, which tests replace with one they move by hand. */
	constructor(config: OtelConfig, now: () => number = Date.now) {
		this.#config = config;
		this.#now = now;
		this.#lastMetricsExport = now();
		this.#exportSlot = new LapsingSlot(now);
		this.#queue = new SpanQueue(config.maxQueueSize, now);
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
		const hold = this.#exportSlot.take(this.#exportDeadlineMs());
		if (hold === null) {
			// Never two fetches at once: the export in flight takes what is due when it ends (in the
			// request that started it, whose waitUntil holds it; a promise is not shared across
			// requests), so nothing waits for a flush that may never come.
			this.#followUp = true;
			if (drain) this.#drainFollowUp = true;
			return;
		}
		if (this.#run !== undefined) this.#lost(this.#run);
		// A drain asked of an export that ended (or was lost) before it took it is this flush's to do.
		const batch = this.#dueBatch(drain || this.#drainFollowUp);
		this.#drainFollowUp = false;
		if (batch === undefined) {
			hold.release();
			return;
		}
		this.#followUp = false;
		const run: ExportRun = { hold, spans: batch.spans.length };
		this.#run = run;
		waitUntil(
			this.#exportFrom(run, batch).finally(() => {
				if (this.#run === run) this.#run = undefined;
				hold.release();
			}),
		);
	}

	/** How long one export may take before it counts as lost. */
	#exportDeadlineMs(): number {
		return this.#config.exportTimeoutMs + EXPORT_LOST_MARGIN_MS;
	}

	/**
	 * The export in flight passed its deadline without settling: its request ended and took the fetch
	 * along. Its spans are dropped (and the export failed); if it ever settles, it counts nothing more.
	 */
	#lost(run: ExportRun): void {
		this.#run = undefined;
		this.#countDropped(run.spans, "export_failed");
		this.#failed(
			run.spans > 0 ? this.#config.tracesUrl : this.#config.metricsUrl,
			run.spans > 0 ? `${run.spans} spans` : "metrics",
			`not settled within ${this.#exportDeadlineMs()} ms, so counted as lost`,
		);
	}

	/** What a flush should export now (spans, and whether metrics go too), or `undefined`: nothing is due. */
	#dueBatch(drain = false): { spans: ReadableSpan[]; metricsDue: boolean } | undefined {
		const metricsDue =
			this.#reader !== undefined && this.#now() - this.#lastMetricsExport >= this.#config.metricIntervalMs;
		const spansDue = this.#queue.size > 0 && (drain || this.#spansDue());
		if (!spansDue && !metricsDue) return undefined;
		// Stamped before the export: a failing collector is asked again next interval, not at every flush.
		if (metricsDue) this.#lastMetricsExport = this.#now();
		// Queued spans ride a metrics export whenever one goes: the fetch is paid anyway.
		return { spans: this.#queue.take(this.#config.maxExportBatchSize), metricsDue };
	}

	/**
	 * One export, then the follow-ups flushes asked for meanwhile, for FOLLOW_UP_WINDOW_MS at most
	 * (after that, the next flush starts afresh in its own request). Each batch has its own deadline.
	 * A run that was counted lost stops where it wakes, and what it learns then is not counted.
	 */
	async #exportFrom(run: ExportRun, first: { spans: ReadableSpan[]; metricsDue: boolean }): Promise<void> {
		const started = this.#now();
		// A task of its own: serializing and the fetch begin once the caller has returned its answer
		// (a flush is called just before), so they never delay the response or the RPC's reply.
		await new Promise((resolve) => setTimeout(resolve, 0));
		let batch: { spans: ReadableSpan[]; metricsDue: boolean } | undefined = first;
		while (batch !== undefined) {
			run.spans = batch.spans.length;
			const [spans, metrics] = await Promise.all([
				this.#postSpans(batch.spans),
				batch.metricsDue ? this.#postMetrics() : undefined,
			]);
			if (!run.hold.current) return;
			if (spans !== undefined) this.#spansSent(batch.spans.length, spans);
			if (metrics !== undefined) this.#metricsSent(metrics);
			run.spans = 0;
			if (!this.#followUp || this.#now() - started >= FOLLOW_UP_WINDOW_MS) return;
			this.#followUp = false;
			const drain = this.#drainFollowUp;
			this.#drainFollowUp = false;
			batch = this.#dueBatch(drain);
			run.hold.renew(this.#exportDeadlineMs());
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

	/** Posts the spans; undefined when there was nothing to post. */
	async #postSpans(spans: ReadableSpan[]): Promise<PostOutcome | undefined> {
		const url = this.#config.tracesUrl;
		if (spans.length === 0 || url === undefined) return undefined;
		const body = JsonTraceSerializer.serializeRequest(spans);
		return body
			? await postOtlp(url, this.#config.tracesHeaders, body, this.#config.exportTimeoutMs)
			: { ok: false, reason: "the spans could not be serialized" };
	}

	#spansSent(count: number, outcome: PostOutcome): void {
		if (outcome.ok) {
			this.#counts.spansExported += count;
			return;
		}
		this.#countDropped(count, "export_failed");
		this.#failed(this.#config.tracesUrl, `${count} spans`, outcome.reason);
	}

	/** Collects and posts the metrics; undefined when there was nothing to post. */
	async #postMetrics(): Promise<PostOutcome | undefined> {
		const url = this.#config.metricsUrl;
		if (this.#reader === undefined || url === undefined) return undefined;
		const { resourceMetrics } = await this.#reader.collect();
		if (resourceMetrics.scopeMetrics.every((scope) => scope.metrics.length === 0)) return undefined;
		const body = JsonMetricsSerializer.serializeRequest(resourceMetrics);
		return body
			? await postOtlp(url, this.#config.metricsHeaders, body, this.#config.exportTimeoutMs)
			: { ok: false, reason: "the metrics could not be serialized" };
	}

	#metricsSent(outcome: PostOutcome): void {
		if (outcome.ok) this.#counts.metricExports++;
		else this.#failed(this.#config.metricsUrl, "metrics", outcome.reason);
	}

	#countDropped(count: number, reason: "queue_full" | "export_failed"): void {
		if (count === 0) return;
		this.#counts.spansDropped += count;
		instrumentsOf(this).telemetryDropped.add(count, { [GATEWAY_ATTRIBUTES.dropReason]: reason });
	}

	/** Counts a failed export, and logs it now and then. `url`: where it went (a lost run's may have had none). */
	#failed(url: string | undefined, what: string, reason: string): void {
		this.#counts.exportsFailed++;
		const now = this.#now();
		if (now - this.#lastFailureLog < FAILURE_LOG_INTERVAL_MS) return;
		this.#lastFailureLog = now;
		const where = url === undefined ? "the collector" : displayEndpoint(url);
		console.warn(
			`telemetry: export of ${what} to ${where} failed (${reason}); ${this.#counts.exportsFailed} failed exports in this isolate so far`,
		);
	}
}
