import { createParser, type EventSourceMessage } from "eventsource-parser";

/**
 * Reads an SSE body event by event with `eventsource-parser`, calling `onEvent`
 * for each; stops early when `onEvent` returns true. Each event's data is
 * capped so that one oversized event fails the read instead of the isolate.
 */
export async function readSseEvents(
	body: ReadableStream<Uint8Array>,
	onEvent: (event: EventSourceMessage) => boolean,
	maxEventBytes: number,
): Promise<boolean> {
	const reader = body.pipeThrough(new TextDecoderStream()).getReader();
	let done = false;
	let oversized = false;
	const parser = createParser({
		onEvent(event) {
			if (!done) done = onEvent(event);
		},
		onError() {
			// A malformed field is skipped, as an EventSource would.
		},
	});
	let pending = 0;
	try {
		while (!done) {
			const chunk = await reader.read();
			if (chunk.done) break;
			pending += chunk.value.length;
			if (pending > maxEventBytes) {
				oversized = true;
				break;
			}
			parser.feed(chunk.value);
			if (chunk.value.includes("\n\n") || chunk.value.includes("\r\n\r\n")) pending = 0;
		}
	} finally {
		await reader.cancel().catch(() => undefined);
	}
	if (oversized) throw new RangeError(`an SSE event exceeded ${maxEventBytes} bytes`);
	return done;
}

/**
 * Re-frames an SSE body event by event, dropping the events `keep` refuses.
 * Used on aggregate replies, where members' list_changed notifications are
 * the gateway's to interpret, not to pass on.
 */
export function filterSseEvents(
	body: ReadableStream<Uint8Array>,
	keep: (event: EventSourceMessage) => boolean,
): ReadableStream<Uint8Array> {
	const encoder = new TextEncoder();
	let emit: (event: EventSourceMessage) => void = () => undefined;
	const parser = createParser({
		onEvent: (event) => emit(event),
		onRetry: () => undefined,
	});
	return body.pipeThrough(new TextDecoderStream()).pipeThrough(
		new TransformStream<string, Uint8Array>({
			transform(chunk, controller) {
				emit = (event) => {
					if (!keep(event)) return;
					const id = event.id === undefined ? "" : `id: ${event.id}\n`;
					const data = event.data
						.split("\n")
						.map((line) => `data: ${line}`)
						.join("\n");
					controller.enqueue(encoder.encode(`${id}event: ${event.event ?? "message"}\n${data}\n\n`));
				};
				parser.feed(chunk);
			},
		}),
	);
}
