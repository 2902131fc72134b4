import type { JSONRPCMessage, JSONRPCNotification, RequestId } from "@modelcontextprotocol/sdk/types.js";
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { joinChunks } from "./read-capped.ts";

export interface SseRelayOptions {
	/** The request this reply answers. */
	requestId: RequestId;
	/** Cap on one event's data; a larger event ends the reply with `onOversize`. */
	maxEventBytes: number;
	/** Decides about each notification on the reply; dropped ones never reach the client. */
	keepNotification?: (message: JSONRPCNotification) => boolean;
	/**
	 * What to send when the reply ends or breaks before the response (`error`
	 * null: ended cleanly); null sends nothing (the client cancelled the request).
	 */
	onIncomplete: (error: unknown) => JSONRPCMessage | null;
	/** What to send when an event is over the cap. */
	onOversize: () => JSONRPCMessage;
	/** Called once when the relay is over: ended, failed or cancelled by the client. */
	onDone: () => void;
}

const encoder = new TextEncoder();

/** One SSE event carrying a JSON-RPC message. */
export function sseMessage(message: JSONRPCMessage): Uint8Array {
	return encoder.encode(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
}

function frame(event: EventSourceMessage): Uint8Array {
	const id = event.id === undefined ? "" : `id: ${event.id}\n`;
	const data = event.data
		.split("\n")
		.map((line) => `data: ${line}`)
		.join("\n");
	return encoder.encode(`${id}event: ${event.event ?? "message"}\n${data}\n\n`);
}

/**
 * Relays an upstream SSE reply to the client as it arrives (never buffered
 * whole). Events are parsed with `eventsource-parser`, so the gateway always
 * knows whether the response has been seen; bytes pass on unchanged unless
 * notifications are filtered (aggregates), which re-frames the kept events:
 * a reply that ends or breaks before it (upstream crash, deadline) ends with
 * the message `onIncomplete` gives, instead of leaving the client waiting.
 */
export function relaySse(body: ReadableStream<Uint8Array>, options: SseRelayOptions): ReadableStream<Uint8Array> {
	const reader = body.getReader();
	const decoder = new TextDecoder();
	// Without filtering, bytes pass on as they came; they are parsed only to follow the reply.
	const filtering = options.keepNotification !== undefined;
	let responded = false;
	let sinceLastEvent = 0;
	let done = false;
	let ready: Uint8Array[] = [];
	const finish = () => {
		if (!done) {
			done = true;
			options.onDone();
		}
	};
	const parser = createParser({
		onEvent(event) {
			sinceLastEvent = 0;
			const message = parseMessage(event.data);
			if (message && "id" in message && !("method" in message) && message.id === options.requestId) {
				responded = true;
			}
			if (!filtering) return;
			if (message && "method" in message && !("id" in message) && options.keepNotification) {
				if (!options.keepNotification(message as JSONRPCNotification)) return;
			}
			ready.push(frame(event));
		},
	});
	/** Chunks of an event not yet complete (pass-through only). */
	let held: Uint8Array[] = [];
	const end = (controller: ReadableStreamDefaultController<Uint8Array>, last: JSONRPCMessage | null) => {
		if (last) controller.enqueue(sseMessage(last));
		// What is left of an unfinished event at a clean end is passed on, as the upstream wrote it.
		else if (held.length > 0) controller.enqueue(joinChunks(held));
		controller.close();
		finish();
	};
	return new ReadableStream<Uint8Array>({
		async pull(controller) {
			for (;;) {
				let chunk: ReadableStreamReadResult<Uint8Array>;
				try {
					chunk = await reader.read();
				} catch (error) {
					end(controller, responded ? null : options.onIncomplete(error));
					return;
				}
				if (chunk.done) {
					end(controller, responded ? null : options.onIncomplete(null));
					return;
				}
				const text = decoder.decode(chunk.value, { stream: true });
				sinceLastEvent += text.length;
				parser.feed(text);
				if (sinceLastEvent > options.maxEventBytes) {
					await reader.cancel().catch(() => {
						// The upstream connection is being dropped anyway.
					});
					end(controller, responded ? null : options.onOversize());
					return;
				}
				if (!filtering) {
					// Complete events pass on as the upstream wrote them; an unfinished one waits
					// for its end, so a reply cut off mid-event never hands the client half an event.
					const cut = afterLastEvent(chunk.value, held);
					if (cut === 0) {
						held.push(chunk.value);
						continue;
					}
					controller.enqueue(
						held.length === 0 ? chunk.value.subarray(0, cut) : joinChunks([...held, chunk.value.subarray(0, cut)]),
					);
					held = cut < chunk.value.length ? [chunk.value.subarray(cut)] : [];
					return;
				}
				if (ready.length > 0) {
					for (const bytes of ready) controller.enqueue(bytes);
					ready = [];
					return;
				}
			}
		},
		async cancel(reason) {
			finish();
			await reader.cancel(reason);
		},
	});
}

const LF = 10;
const CR = 13;

/**
 * The index in `chunk` just after the last blank line (the end of an event),
 * or 0 if the chunk ends none. `before` holds the bytes that came earlier, for
 * a blank line split across chunks.
 */
function afterLastEvent(chunk: Uint8Array, before: readonly Uint8Array[]): number {
	const previous = before[before.length - 1];
	const at = (i: number): number | undefined =>
		i >= 0 ? chunk[i] : previous === undefined ? undefined : previous[previous.length + i];
	for (let i = chunk.length - 1; i >= 0; i--) {
		if (chunk[i] !== LF) continue;
		if (at(i - 1) === LF) return i + 1;
		if (at(i - 1) === CR && at(i - 2) === LF) return i + 1;
	}
	return 0;
}

function parseMessage(data: string): JSONRPCMessage | null {
	try {
		const value = JSON.parse(data) as unknown;
		return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as JSONRPCMessage) : null;
	} catch (error) {
		if (error instanceof SyntaxError) return null;
		throw error;
	}
}
