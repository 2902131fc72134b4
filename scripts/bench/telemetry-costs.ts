/**
 * Where exporting telemetry's CPU goes, in-process (Node, one thread, no network): recording one
 * `tools/call`'s spans with the SDK set up as src/telemetry sets it up (a TracerProvider, always-on
 * sampling, finished spans kept for export), and serializing spans to OTLP/HTTP JSON
 * (JsonTraceSerializer, what the export POSTs) in a batch of one request's spans against a
 * coalesced batch. What the fetch costs workerd is not here: the telemetry stage measures the whole.
 *
 *   node scripts/bench/telemetry-costs.ts
 */

import { performance } from "node:perf_hooks";
import { context, SpanKind, trace } from "@opentelemetry/api";
import { JsonTraceSerializer } from "@opentelemetry/otlp-transformer";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { AlwaysOnSampler, type ReadableSpan, type SpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";

const finished: ReadableSpan[] = [];
const keep: SpanProcessor = {
	onStart: () => {},
	onEnd: (span) => {
		finished.push(span);
	},
	forceFlush: () => Promise.resolve(),
	shutdown: () => Promise.resolve(),
};
const tracer = new TracerProvider({
	resource: resourceFromAttributes({ "service.name": "mcp-edge-gateway", "cloud.provider": "cloudflare" }),
	sampler: new AlwaysOnSampler(),
	spanProcessors: [keep],
}).getTracer("mcp-edge-gateway");

/** One tools/call's spans as the gateway records them: the server span with its tool_call event, the client span. */
function recordOneCall(i: number): void {
	const server = tracer.startSpan("tools/call echo", {
		kind: SpanKind.SERVER,
		attributes: {
			"mcp.method.name": "tools/call",
			"gen_ai.tool.name": "echo",
			"gen_ai.operation.name": "execute_tool",
			"mcp.protocol.version": "2025-11-25",
			"mcp.session.id": "0123456789abcdef0123456789abcdef",
			"jsonrpc.request.id": String(i),
			"network.transport": "tcp",
			"network.protocol.name": "http",
			"server.address": "gateway.example",
			"mcp_gateway.endpoint": "/mcp/bench",
			"mcp_gateway.server": "bench",
		},
	});
	const client = tracer.startSpan(
		"tools/call echo",
		{
			kind: SpanKind.CLIENT,
			attributes: {
				"mcp.method.name": "tools/call",
				"gen_ai.tool.name": "echo",
				"gen_ai.operation.name": "execute_tool",
				"mcp.protocol.version": "2025-11-25",
				"jsonrpc.request.id": String(i),
				"server.address": "127.0.0.1",
				"server.port": 8787,
				"network.transport": "tcp",
			},
		},
		trace.setSpan(context.active(), server),
	);
	client.end();
	server.addEvent("tool_call", {
		outcome: "ok",
		"principal.kind": "key",
		"principal.id": "k_0123456789",
		"principal.key_name": "bench",
		endpoint: "/mcp/bench",
		server: "bench",
		tool: "echo",
		tool_real: "echo",
		duration_ms: 1.5,
		era: "2025",
		bytes_in: 120,
		bytes_out: 240,
		arguments_digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
	});
	server.setAttribute("rpc.response.status_code", "0");
	server.end();
}

function timeUs(iterations: number, run: (i: number) => void): number {
	for (let i = 0; i < Math.min(iterations, 200); i++) run(i);
	const start = performance.now();
	for (let i = 0; i < iterations; i++) run(i);
	return ((performance.now() - start) * 1000) / iterations;
}

const CALLS = 20_000;
const recordUs = timeUs(CALLS, recordOneCall);
const spans = finished.splice(0);
console.log(`recording one tools/call's two spans and its tool_call event: ${recordUs.toFixed(1)} µs per call`);

for (const batch of [1, 2, 512]) {
	let at = 0;
	let bytes = 0;
	const rounds = Math.max(20, Math.floor(20_000 / batch));
	const us = timeUs(rounds, () => {
		const slice = spans.slice(at, at + batch);
		at = (at + batch) % (spans.length - batch);
		bytes = JsonTraceSerializer.serializeRequest(slice)?.byteLength ?? 0;
	});
	console.log(
		`serializing ${batch} span${batch === 1 ? "" : "s"} (one export's body, ${bytes} bytes): ${us.toFixed(1)} µs, ${(us / batch).toFixed(1)} µs per span`,
	);
}
