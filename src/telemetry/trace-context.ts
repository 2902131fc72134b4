import { type Context, ROOT_CONTEXT, type Span, type TextMapGetter, trace } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { z } from "zod";

/**
 * W3C Trace Context in and out of MCP messages, as the MCP semantic conventions carry it:
 * `traceparent` and `tracestate` in `params._meta` (unprefixed), and the HTTP `traceparent`
 * header. Parsing and formatting are the W3C propagator's of @opentelemetry/core.
 */
const propagator = new W3CTraceContextPropagator();

/** The two keys of a carried context, in `_meta` or as headers. */
export interface TraceMeta {
	traceparent: string;
	tracestate?: string;
}

const metaCarrier = z
	.object({ traceparent: z.string().optional(), tracestate: z.string().optional() })
	.loose()
	.catch({});

const recordGetter: TextMapGetter<Readonly<Record<string, string | undefined>>> = {
	keys: (carrier) => Object.keys(carrier),
	get: (carrier, key) => carrier[key],
};

const headersGetter: TextMapGetter<Headers> = {
	keys: (carrier) => [...carrier.keys()],
	get: (carrier, key) => carrier.get(key) ?? undefined,
};

/** The context `carrier` names, or undefined when it carries no valid `traceparent`. */
function extracted<C>(carrier: C, getter: TextMapGetter<C>): Context | undefined {
	const context = propagator.extract(ROOT_CONTEXT, carrier, getter);
	return trace.getSpanContext(context) ? context : undefined;
}

/**
 * The parent of a span for a request: the remote context in `params._meta`
 * (`traceparent`/`tracestate`) first, else the HTTP `traceparent` header, else
 * ROOT_CONTEXT (a new trace). A malformed `traceparent` counts as absent.
 *
 * @example
 * const span = tracer.startSpan("tools/call echo", { kind: SpanKind.SERVER }, parentContext(params._meta, request.headers));
 */
export function parentContext(meta: unknown, headers?: Headers): Context {
	const carried = metaCarrier.parse(meta ?? {});
	const fromMeta = carried.traceparent
		? extracted({ traceparent: carried.traceparent, tracestate: carried.tracestate }, recordGetter)
		: undefined;
	return fromMeta ?? (headers ? extracted(headers, headersGetter) : undefined) ?? ROOT_CONTEXT;
}

/**
 * `span`'s context as `_meta` keys for a forwarded request (`{ ...meta, ...injectMeta(span) }`):
 * undefined when the span has no valid context (telemetry off and no parent), so the
 * message's own keys stay as they are.
 */
export function injectMeta(span: Span): TraceMeta | undefined {
	const carrier: Record<string, string> = {};
	propagator.inject(trace.setSpan(ROOT_CONTEXT, span), carrier, {
		set: (target, key, value) => {
			target[key] = value;
		},
	});
	const traceparent = carrier.traceparent;
	if (traceparent === undefined) return undefined;
	return carrier.tracestate === undefined ? { traceparent } : { traceparent, tracestate: carrier.tracestate };
}

/** The same context as HTTP headers (`traceparent`, `tracestate`), empty when there is none. */
export function traceHeaders(span: Span): Record<string, string> {
	return { ...injectMeta(span) };
}
