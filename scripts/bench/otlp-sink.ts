/**
 * The bench's collector: an OTLP/HTTP endpoint that costs as little as a collector can. It drains
 * each request's body and answers 200 at once, decoding and printing nothing, so that what the
 * telemetry stage measures is what the gateway pays for exporting, not what a receiver pays for
 * reading (scripts/otlp-receiver.ts decodes every span and prints a line per span: on this
 * machine's two cores that work competes with the gateway's). It counts only requests and bytes,
 * per signal path, at `GET /stats`.
 *
 *   node scripts/bench/otlp-sink.ts <port>
 */

import { createServer } from "node:http";

const port = Number(process.argv[2]);
if (!Number.isInteger(port) || port <= 0) {
	console.error("usage: node scripts/bench/otlp-sink.ts <port>");
	process.exit(2);
}

const counts = { requests: 0, bytes: 0, traces: 0, metrics: 0 };

const server = createServer((request, response) => {
	if (request.method === "GET" && request.url === "/stats") {
		response.writeHead(200, { "content-type": "application/json" });
		response.end(JSON.stringify(counts));
		return;
	}
	counts.requests++;
	if (request.url?.endsWith("/v1/traces")) counts.traces++;
	else if (request.url?.endsWith("/v1/metrics")) counts.metrics++;
	request.on("data", (chunk: Buffer) => {
		counts.bytes += chunk.length;
	});
	request.on("end", () => {
		// An empty ExportTraceServiceResponse / ExportMetricsServiceResponse: full success.
		response.writeHead(200, { "content-type": "application/json", "content-length": "2" });
		response.end("{}");
	});
});

server.listen(port, "127.0.0.1", () => {
	console.log(`OTLP sink listening at http://127.0.0.1:${port}`);
});
