/**
 * A local OTLP/HTTP receiver for people: what `npm start` runs beside the gateway, so its traces
 * show without a collector. It prints one line per span as it arrives (time, trace id prefix,
 * kind, name, duration, status) and keeps the last traces at `GET /traces`. Its decoding is the
 * test receiver's (scripts/fixtures/otlp-receiver.ts).
 *
 *   node scripts/otlp-receiver.ts [port]        # default 4318, OTLP/HTTP's port
 *
 * Point a gateway at it with OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:<port>.
 */
import { startOtlpReceiver } from "./fixtures/otlp-receiver.ts";
import { spanLine } from "./fixtures/otlp-shapes.ts";

/** What a receiver running for hours keeps: the oldest spans go first. */
const KEPT_SPANS = 10_000;

/** Starts the receiver and prints what arrives with `prefix`; resolves once it listens. */
export async function startLocalReceiver(options: { port: number; prefix?: string }) {
	const receiver = await startOtlpReceiver({ port: options.port, maxSpans: KEPT_SPANS });
	const prefix = options.prefix ? `${options.prefix} ` : "";
	receiver.onSpans((spans) => {
		for (const span of spans) console.log(`${prefix}${spanLine(span)}`);
	});
	return receiver;
}

if (import.meta.url === `file://${process.argv[1]}`) {
	const port = Number(process.argv[2] ?? 4318);
	await startLocalReceiver({ port });
	console.log(`OTLP receiver listening at http://127.0.0.1:${port} (last traces: GET /traces)`);
}
