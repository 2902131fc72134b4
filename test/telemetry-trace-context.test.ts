import { ROOT_CONTEXT, SpanKind, trace } from "@opentelemetry/api";
import { describe, expect, it } from "vitest";
import { telemetryFor } from "../src/telemetry/telemetry.ts";
import { injectMeta, parentContext, traceHeaders } from "../src/telemetry/trace-context.ts";
import { newOtlpTenant, otlpEnv } from "./support/otlp.ts";

const TRACE = "0af7651916cd43dd8448eb211c80319c";
const PARENT = "b7ad6b7169203331";
const TRACEPARENT = `00-${TRACE}-${PARENT}-01`;
const HEADER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const HEADER_TRACEPARENT = `00-${HEADER_TRACE}-00f067aa0ba902b7-01`;

describe("The parent of a request's span (parentContext)", () => {
	it("comes from params._meta, with its tracestate, as the MCP conventions carry it", () => {
		const context = parentContext({ traceparent: TRACEPARENT, tracestate: "vendor=abc", other: 1 });
		const parent = trace.getSpanContext(context);
		expect(parent).toMatchObject({ traceId: TRACE, spanId: PARENT, traceFlags: 1, isRemote: true });
		expect(parent?.traceState?.get("vendor")).toBe("abc");
	});

	it("_meta wins over the HTTP traceparent header; the header serves when _meta has none", () => {
		const headers = new Headers({ traceparent: HEADER_TRACEPARENT });
		expect(trace.getSpanContext(parentContext({ traceparent: TRACEPARENT }, headers))?.traceId).toBe(TRACE);
		expect(trace.getSpanContext(parentContext(undefined, headers))?.traceId).toBe(HEADER_TRACE);
		expect(trace.getSpanContext(parentContext({ progressToken: 3 }, headers))?.traceId).toBe(HEADER_TRACE);
	});

	it.each([["not a traceparent"], [`00-${"0".repeat(32)}-${PARENT}-01`], [`00-${TRACE}-${PARENT}`], [42]])(
		"a malformed traceparent (%s) starts a new trace",
		(traceparent) => {
			expect(parentContext({ traceparent })).toBe(ROOT_CONTEXT);
		},
	);

	it("anything that is not a _meta object starts a new trace", () => {
		expect(parentContext("traceparent")).toBe(ROOT_CONTEXT);
		expect(parentContext(null)).toBe(ROOT_CONTEXT);
		expect(parentContext([TRACEPARENT])).toBe(ROOT_CONTEXT);
	});
});

describe("Passing the context on (injectMeta, traceHeaders)", () => {
	it("names the gateway's span as the parent, in the same trace, with the tracestate kept", () => {
		const telemetry = telemetryFor(otlpEnv(newOtlpTenant()));
		const span = telemetry.tracer.startSpan(
			"tools/call echo",
			{ kind: SpanKind.CLIENT },
			parentContext({ traceparent: TRACEPARENT, tracestate: "vendor=abc" }),
		);
		const meta = injectMeta(span);
		expect(meta).toEqual({ traceparent: `00-${TRACE}-${span.spanContext().spanId}-01`, tracestate: "vendor=abc" });
		expect(traceHeaders(span)).toEqual(meta);
		span.end();
	});

	it("with telemetry off, the client's own context passes through unchanged", () => {
		const span = telemetryFor({}).tracer.startSpan("tools/call echo", {}, parentContext({ traceparent: TRACEPARENT }));
		expect(injectMeta(span)).toEqual({ traceparent: TRACEPARENT });
	});

	it("with telemetry off and no parent there is nothing to pass on", () => {
		const span = telemetryFor({}).tracer.startSpan("tools/call echo", {}, ROOT_CONTEXT);
		expect(injectMeta(span)).toBeUndefined();
		expect(traceHeaders(span)).toEqual({});
	});
});
