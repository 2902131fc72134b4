import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { createParser, type EventSourceMessage } from "eventsource-parser";

const encoder = new TextEncoder();

/** The headers of every event stream the gateway writes itself. */
export const SSE_HEADERS = { "content-type": "text/event-stream", "cache-control": "no-cache" };

/** One SSE event carrying a JSON-RPC message: the gateway's one way of framing its own events. */
export function sseMessage(message: JSONRPCMessage): Uint8Array {
	return encoder.encode(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
}

/**
 * `text` (whole SSE events) with the data of each event `rewrite` changes
 * replaced: its `data:` lines become one line of the new data, its other
 * fields (id, event, retry) and every event `rewrite` leaves (null) kept as
 * they were, byte for byte.
 */
export async function rewriteEventData(
	text: string,
	rewrite: (data: string) => Promise<string | null>,
): Promise<string> {
	const parts = text.split(/(\r?\n\r?\n)/);
	const out: string[] = [];
	for (const part of parts) {
		const lines = part.split(/\r?\n/);
		const data = lines
			.filter((line) => line.startsWith("data:"))
			.map((line) => line.slice(line.startsWith("data: ") ? 6 : 5));
		const rewritten = data.length > 0 ? await rewrite(data.join("\n")) : null;
		if (rewritten === null) {
			out.push(part);
			continue;
		}
		const others = lines.filter((line) => !line.startsWith("data:"));
		out.push([...others, `data: ${rewritten}`].join("\n"));
	}
	return out.join("");
}

const LF = 10;
const CR = 13;

/**
 * The index in `chunk` just after the last blank line (the end of an event),
 * or 0 if the chunk ends none. `previous` holds the bytes just before, for a
 * blank line split across chunks. Searches back from the end with the engine's
 * own `lastIndexOf`, so it costs about the length of the unfinished tail.
 */
export function afterLastEvent(chunk: Uint8Array, previous: Uint8Array | undefined): number {
	for (let i = chunk.lastIndexOf(LF); i >= 0; i = i > 0 ? chunk.lastIndexOf(LF, i - 1) : -1) {
		const before = byteAt(chunk, previous, i - 1);
		if (before === LF) return i + 1;
		if (before === CR && byteAt(chunk, previous, i - 2) === LF) return i + 1;
	}
	return 0;
}

/** The byte at `i` of `chunk`, a negative `i` counting back into `previous` (no closure per chunk: this runs for every chunk relayed). */
function byteAt(chunk: Uint8Array, previous: Uint8Array | undefined, i: number): number | undefined {
	return i >= 0 ? chunk[i] : previous === undefined ? undefined : previous[previous.length + i];
}

/**
 * Follows the size of the SSE event being received, so that one event is
 * capped however the stream is chunked and however many lines it has: an
 * upstream cannot grow the parser's buffer without end.
 */
export class EventSizeLimit {
	private pending = 0;
	private last: Uint8Array | undefined;

	constructor(readonly maxEventBytes: number) {}

	/**
	 * Takes the next chunk. Returns where its last complete event ends (0: it
	 * ends none; see `afterLastEvent`), or -1 when the event still unfinished
	 * is over the cap. One scan serves both the cap and the caller's cut.
	 */
	add(chunk: Uint8Array): number {
		const cut = afterLastEvent(chunk, this.last);
		this.pending = cut === 0 ? this.pending + chunk.byteLength : chunk.byteLength - cut;
		if (chunk.byteLength > 0) this.last = chunk;
		return this.pending <= this.maxEventBytes ? cut : -1;
	}
}

/** A `retry` field: a line of its own, digits only (others are ignored, as an EventSource would). */
const RETRY_FIELD = /^retry: ?(\d{1,12})\r?$/gm;

/** The last `retry` (milliseconds) in whole SSE events' text, or null when it names none. */
export function lastRetry(text: string): number | null {
	let retry: number | null = null;
	for (const match of text.matchAll(RETRY_FIELD)) retry = Number(match[1]);
	return retry;
}

/**
 * Reads an SSE body event by event with `eventsource-parser`, calling `onEvent`
 * for each; stops early when `onEvent` returns true. Each event is capped so
 * that one oversized event fails the read (RangeError) instead of the isolate.
 * `onRetry` hears each `retry` field.
 */
export async function readSseEvents(
	body: ReadableStream<Uint8Array>,
	onEvent: (event: EventSourceMessage) => boolean,
	maxEventBytes: number,
	onRetry?: (retryMs: number) => void,
): Promise<boolean> {
	const reader = body.getReader();
	const decoder = new TextDecoder();
	const limit = new EventSizeLimit(maxEventBytes);
	let done = false;
	let oversized = false;
	const parser = createParser({
		onEvent(event) {
			if (!done) done = onEvent(event);
		},
		onError() {
			// A malformed field is skipped, as an EventSource would.
		},
		onRetry,
	});
	try {
		while (!done) {
			const chunk = await reader.read();
			if (chunk.done) break;
			if (limit.add(chunk.value) < 0) {
				oversized = true;
				break;
			}
			parser.feed(decoder.decode(chunk.value, { stream: true }));
		}
	} finally {
		// Releasing a stream that already ended or failed can reject; there is nothing left to release.
		await reader.cancel().catch(() => undefined);
	}
	if (oversized) throw new RangeError(`an SSE event exceeded ${maxEventBytes} bytes`);
	return done;
}

/**
 * Reads JSON-RPC messages from an SSE body one at a time, on demand: a reader
 * can stop between two messages and go on later (a bridged call parked while
 * its client answers an input request). Events that are not JSON-RPC are
 * skipped; an event over `maxEventBytes` fails the read.
 */
export class SseMessageReader {
	private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
	private readonly decoder = new TextDecoder();
	private readonly limit: EventSizeLimit;
	private readonly queue: JSONRPCMessage[] = [];
	/** The id of the last event read so far (a resumption point), if events carry ids. */
	lastEventId: string | null = null;
	private readonly parser = createParser({
		onEvent: (event) => {
			if (event.id !== undefined) this.lastEventId = event.id;
			const message = this.parseMessage(event.data);
			if (message) this.queue.push(message);
		},
	});

	constructor(
		body: ReadableStream<Uint8Array>,
		maxEventBytes: number,
		private readonly parseMessage: (data: string) => JSONRPCMessage | null,
	) {
		this.reader = body.getReader();
		this.limit = new EventSizeLimit(maxEventBytes);
	}

	/** The next message, or null once the stream has ended. */
	async next(): Promise<JSONRPCMessage | null> {
		while (this.queue.length === 0) {
			const chunk = await this.reader.read();
			if (chunk.done) return null;
			if (this.limit.add(chunk.value) < 0) {
				await this.cancel();
				throw new RangeError("an SSE event exceeded the size limit");
			}
			this.parser.feed(this.decoder.decode(chunk.value, { stream: true }));
		}
		return this.queue.shift() ?? null;
	}

	/** Stops reading: the stream is cancelled, which ends the exchange behind it. */
	async cancel(): Promise<void> {
		await this.reader.cancel().catch(() => undefined);
	}
}
