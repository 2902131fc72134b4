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
		// Releasing a stream that already ended or failed can reject; there is nothing left to release.
		await reader.cancel().catch(() => undefined);
	}
	if (oversized) throw new RangeError(`an SSE event exceeded ${maxEventBytes} bytes`);
	return done;
}
