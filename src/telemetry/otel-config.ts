import { z } from "zod";

/**
 * The standard OpenTelemetry SDK variables the gateway reads (spec: "Environment Variable
 * Specification" and "OTLP Exporter Configuration"), parsed with zod. Nothing else configures
 * telemetry: a user's existing collector settings then just work.
 */
export const OTEL_VARIABLES = [
	"OTEL_SDK_DISABLED",
	"OTEL_EXPORTER_OTLP_ENDPOINT",
	"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
	"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
	"OTEL_EXPORTER_OTLP_HEADERS",
	"OTEL_EXPORTER_OTLP_TRACES_HEADERS",
	"OTEL_EXPORTER_OTLP_METRICS_HEADERS",
	"OTEL_SERVICE_NAME",
	"OTEL_RESOURCE_ATTRIBUTES",
	"OTEL_TRACES_SAMPLER",
	"OTEL_TRACES_SAMPLER_ARG",
	"OTEL_METRIC_EXPORT_INTERVAL",
	"OTEL_BSP_MAX_QUEUE_SIZE",
	"OTEL_BSP_EXPORT_TIMEOUT",
	"OTEL_BSP_SCHEDULE_DELAY",
	"OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
] as const;
export type OtelVariable = (typeof OTEL_VARIABLES)[number];

/** Variables whose values are secrets: a warning about them names them, never quotes them. */
const SECRET_VARIABLES: ReadonlySet<OtelVariable> = new Set([
	"OTEL_EXPORTER_OTLP_HEADERS",
	"OTEL_EXPORTER_OTLP_TRACES_HEADERS",
	"OTEL_EXPORTER_OTLP_METRICS_HEADERS",
]);

export const DEFAULT_SERVICE_NAME = "mcp-edge-gateway";
/** The spec's default metric export interval (ms). */
const DEFAULT_METRIC_INTERVAL_MS = 60_000;
/** The spec's default batch queue: finished spans an isolate keeps for its next export. */
const DEFAULT_QUEUE_SIZE = 2048;
/**
 * The spec says 30 s; an export runs in `waitUntil`, which a Worker keeps for about 30 s after
 * the response, so a shorter bound frees the isolate sooner when a collector stalls.
 */
const DEFAULT_EXPORT_TIMEOUT_MS = 5_000;
/**
 * How long a finished span may wait for others to share its export (ms). The spec says 5 s; here
 * the wait is held by the waitUntil of the request that queued the span (a Worker does I/O only
 * inside a request), which keeps a Durable Object active until it ends, so a second bounds that
 * while still sending one export for every burst of requests instead of one per request.
 */
const DEFAULT_SCHEDULE_DELAY_MS = 1_000;
/** The spec's default number of spans in one export. */
const DEFAULT_EXPORT_BATCH_SIZE = 512;

const SAMPLERS = [
	"always_on",
	"always_off",
	"traceidratio",
	"parentbased_always_on",
	"parentbased_always_off",
	"parentbased_traceidratio",
] as const;
export type SamplerName = (typeof SAMPLERS)[number];

/** Where to send, with what, and how much to keep: the parsed form of the variables. */
export interface OtelConfig {
	/** The traces URL (`undefined`: spans are not recorded at all). */
	tracesUrl: string | undefined;
	/** The metrics URL (`undefined`: the meter is the no-op one). */
	metricsUrl: string | undefined;
	/** Headers of the traces' and the metrics' exports: the general ones, a signal's own over them. */
	tracesHeaders: Readonly<Record<string, string>>;
	metricsHeaders: Readonly<Record<string, string>>;
	serviceName: string;
	resourceAttributes: Readonly<Record<string, string>>;
	sampler: SamplerName;
	/** The ratio of `traceidratio` samplers, in [0, 1]. */
	samplerRatio: number;
	metricIntervalMs: number;
	maxQueueSize: number;
	exportTimeoutMs: number;
	/** A flush exports spans once the oldest queued one is this old (ms); 0: at every flush. */
	scheduleDelayMs: number;
	/** Spans in one export at most; a flush exports at once when this many are queued. Never above the queue. */
	maxExportBatchSize: number;
}

export type OtelConfigResult =
	| { ok: true; config: OtelConfig | undefined }
	| { ok: false; variable: OtelVariable; reason: string };

/** The raw values of the variables, as strings (unset and empty alike are absent). */
export function otelValues(env: Readonly<Record<string, unknown>>): Partial<Record<OtelVariable, string>> {
	const values: Partial<Record<OtelVariable, string>> = {};
	for (const name of OTEL_VARIABLES) {
		const value = env[name];
		if (typeof value === "string" && value.trim() !== "") values[name] = value.trim();
	}
	return values;
}

const url = z.url({ protocol: /^https?$/ });
const positiveInt = z.coerce.number().int().positive();
const nonNegativeInt = z.coerce.number().int().nonnegative();
const ratio = z.coerce.number().min(0).max(1);

/**
 * `k=v,k2=v2`, keys and values percent-decoded, blanks around them trimmed: the format of
 * OTEL_EXPORTER_OTLP_HEADERS and OTEL_RESOURCE_ATTRIBUTES (W3C Baggage without properties).
 */
const keyValueList = z.string().transform((text, context) => {
	const pairs: Record<string, string> = {};
	for (const entry of text.split(",")) {
		if (entry.trim() === "") continue;
		const at = entry.indexOf("=");
		const key = at > 0 ? decodePercent(entry.slice(0, at).trim()) : undefined;
		const value = at > 0 ? decodePercent(entry.slice(at + 1).trim()) : undefined;
		if (!key || value === undefined) {
			context.addIssue({ code: "custom", message: "expected key=value pairs separated by commas" });
			return z.NEVER;
		}
		pairs[key] = value;
	}
	return pairs;
});

function decodePercent(text: string): string | undefined {
	try {
		return decodeURIComponent(text);
	} catch (error) {
		if (error instanceof URIError) return undefined;
		throw error;
	}
}

/** The spec's rule for the base endpoint: the signal's path appended, one slash between. */
function signalUrl(base: string, signal: "traces" | "metrics"): string {
	return `${base.replace(/\/+$/, "")}/v1/${signal}`;
}

/** Each variable's schema, with the spec's defaults (a few of the gateway's own, where said above). */
const variables = z.object({
	OTEL_SDK_DISABLED: z.string().optional(),
	OTEL_EXPORTER_OTLP_ENDPOINT: url.optional(),
	OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: url.optional(),
	OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: url.optional(),
	OTEL_EXPORTER_OTLP_HEADERS: keyValueList.default({}),
	OTEL_EXPORTER_OTLP_TRACES_HEADERS: keyValueList.default({}),
	OTEL_EXPORTER_OTLP_METRICS_HEADERS: keyValueList.default({}),
	OTEL_SERVICE_NAME: z.string().optional(),
	OTEL_RESOURCE_ATTRIBUTES: keyValueList.default({}),
	OTEL_TRACES_SAMPLER: z.enum(SAMPLERS).default("parentbased_always_on"),
	OTEL_TRACES_SAMPLER_ARG: ratio.default(1),
	OTEL_METRIC_EXPORT_INTERVAL: positiveInt.default(DEFAULT_METRIC_INTERVAL_MS),
	OTEL_BSP_MAX_QUEUE_SIZE: positiveInt.default(DEFAULT_QUEUE_SIZE),
	OTEL_BSP_EXPORT_TIMEOUT: positiveInt.default(DEFAULT_EXPORT_TIMEOUT_MS),
	OTEL_BSP_SCHEDULE_DELAY: nonNegativeInt.default(DEFAULT_SCHEDULE_DELAY_MS),
	OTEL_BSP_MAX_EXPORT_BATCH_SIZE: positiveInt.default(DEFAULT_EXPORT_BATCH_SIZE),
} satisfies Record<OtelVariable, z.ZodType>);

/**
 * The telemetry settings the variables give, or which variable is wrong. `config: undefined`
 * means off: no endpoint, or OTEL_SDK_DISABLED=true.
 */
export function parseOtelConfig(values: Partial<Record<OtelVariable, string>>): OtelConfigResult {
	const parsed = variables.safeParse(values);
	if (!parsed.success) {
		const issue = parsed.error.issues[0];
		return { ok: false, variable: issue?.path[0] as OtelVariable, reason: issue?.message ?? "invalid" };
	}
	const v = parsed.data;
	if (v.OTEL_SDK_DISABLED?.toLowerCase() === "true") return { ok: true, config: undefined };
	const base = v.OTEL_EXPORTER_OTLP_ENDPOINT;
	const tracesUrl =
		v.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? (base === undefined ? undefined : signalUrl(base, "traces"));
	const metricsUrl =
		v.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT ?? (base === undefined ? undefined : signalUrl(base, "metrics"));
	if (tracesUrl === undefined && metricsUrl === undefined) return { ok: true, config: undefined };
	return {
		ok: true,
		config: {
			tracesUrl,
			metricsUrl,
			tracesHeaders: { ...v.OTEL_EXPORTER_OTLP_HEADERS, ...v.OTEL_EXPORTER_OTLP_TRACES_HEADERS },
			metricsHeaders: { ...v.OTEL_EXPORTER_OTLP_HEADERS, ...v.OTEL_EXPORTER_OTLP_METRICS_HEADERS },
			// OTEL_SERVICE_NAME wins over a service.name in OTEL_RESOURCE_ATTRIBUTES, as the spec says.
			serviceName: v.OTEL_SERVICE_NAME ?? v.OTEL_RESOURCE_ATTRIBUTES["service.name"] ?? DEFAULT_SERVICE_NAME,
			resourceAttributes: v.OTEL_RESOURCE_ATTRIBUTES,
			sampler: v.OTEL_TRACES_SAMPLER,
			samplerRatio: v.OTEL_TRACES_SAMPLER_ARG,
			metricIntervalMs: v.OTEL_METRIC_EXPORT_INTERVAL,
			maxQueueSize: v.OTEL_BSP_MAX_QUEUE_SIZE,
			exportTimeoutMs: v.OTEL_BSP_EXPORT_TIMEOUT,
			scheduleDelayMs: v.OTEL_BSP_SCHEDULE_DELAY,
			// The spec: a batch larger than the queue is the queue's size.
			maxExportBatchSize: Math.min(v.OTEL_BSP_MAX_EXPORT_BATCH_SIZE, v.OTEL_BSP_MAX_QUEUE_SIZE),
		},
	};
}

/** The one warning line for a wrong variable: its name and what is wrong, never a secret's value. */
export function configWarning(variable: OtelVariable, reason: string): string {
	const detail = SECRET_VARIABLES.has(variable) ? "(value not shown: it is a secret)" : reason;
	return `telemetry: ${variable} is not valid, so telemetry is off: ${detail}`;
}
