import { type Context, ROOT_CONTEXT, type Span, trace } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";

/**
 * W3C Trace Context as MCP carries it: unprefixed `traceparent`/`tracestate`
 * in a request's `params._meta` (the conventions' context propagation,
 * SEP-414), else the HTTP headers. Parsing and formatting are the SDK's
 * propagator's; nothing here reads a trace id by hand.
 */
const propagator = new W3CTraceContextPropagator();

type Carrier = Record<string, string>;

const getter = {
	get: (carrier: Carrier, key: string) => carrier[key],
	keys: (carrier: Carrier) => Object.keys(carrier),
};

/** The trace context keys of `_meta` (or of headers), as strings; others are never read. */
function carrierOf(source: (key: string) => unknown): Carrier {
	const carrier: Carrier = {};
	for (const key of ["traceparent", "tracestate"]) {
		const value = source(key);
		if (typeof value === "string") carrier[key] = value;
	}
	return carrier;
}

/**
 * The remote parent of a span for this message: the client's `_meta`
 * context when it carries a valid one, else the HTTP `traceparent` header,
 * else none (a new trace).
 */
export function parentFrom(meta: Readonly<Record<string, unknown>> | undefined, headers?: Headers): Context {
	const fromMeta = propagator.extract(
		ROOT_CONTEXT,
		carrierOf((key) => meta?.[key]),
		getter,
	);
	if (trace.getSpanContext(fromMeta)) return fromMeta;
	if (!headers) return ROOT_CONTEXT;
	return propagator.extract(
		ROOT_CONTEXT,
		carrierOf((key) => headers.get(key) ?? undefined),
		getter,
	);
}

/** `traceparent` (and `tracestate` when there is one) naming `span`, for `_meta` and for HTTP headers alike. */
export function contextFields(span: Span): Carrier {
	const carrier: Carrier = {};
	propagator.inject(trace.setSpan(ROOT_CONTEXT, span), carrier, {
		set: (target: Carrier, key: string, value: string) => {
			target[key] = value;
		},
	});
	return carrier;
}
