import type { JSONRPCMessage, RequestId } from "@modelcontextprotocol/sdk/types.js";
import { createParser } from "eventsource-parser";
import { once } from "../primitives/once.ts";
import { isResponseText } from "./jsonrpc.ts";
import { joinChunks } from "./read-capped.ts";
import { EventSizeLimit, sseMessage } from "./sse.ts";

export interface SseRelayOptions {
	/** The request this reply answers. */
	requestId: RequestId;
	/** Cap on one event's size; a larger event ends the reply with `onOversize`. */
	maxEventBytes: number;
	/**
	 * What to send when the reply ends or breaks before the response (`error`
	 * null: ended cleanly); null sends nothing (the client cancelled the request).
	 */
	onIncomplete: (error: unknown) => JSONRPCMessage | null;
	/**
	 * Used instead of `onIncomplete` once an event has carried an id, when
	 * the client can resume the reply from the upstream with GET and
	 * Last-Event-ID (2025-11-25 transport, SEP-1699). Without it, such a
	 * reply ends like any other.
	 */
	onIncompleteResumable?: (error: unknown) => JSONRPCMessage | null;
	/** What to send when an event is over the cap. */
	onOversize: () => JSONRPCMessage;
	/** Called once when the relay is over: ended, failed or cancelled by the client. */
	onDone: () => void;
}

/**
 * Relays an upstream SSE reply to the client as it arrives (never buffered
 * whole). Events are parsed with `eventsource-parser`, so the gateway always
 * knows whether the response has been seen: a reply that ends or breaks
 * before it (upstream crash, deadline) ends with the message `onIncomplete`
 * gives, instead of leaving the client waiting. A transparent reply that has
 * carried an event id is the upstream's to resume: `onIncompleteResumable`
 * decides how it ends (null: cleanly, so the client resumes from the upstream).
 *
 * Used for transparent replies, which pass on byte for byte (aggregate
 * members' replies are read by the session instead: see `ReplyRoute`).
 */
export function relaySse(body: ReadableStream<Uint8Array>, options: SseRelayOptions): ReadableStream<Uint8Array> {
	const reader = body.getReader();
	const decoder = new TextDecoder();
	const limit = new EventSizeLimit(options.maxEventBytes);
	let responded = false;
	/** A transparent reply has carried an event id: the client holds a cursor the upstream can resume from. */
	let resumable = false;
	const finish = once(options.onDone);
	const parser = createParser({
		onEvent(event) {
			// Only whether this is the response: the event passes on as it came, so nothing else of it is validated.
			if (!responded && isResponseText(event.data, options.requestId)) responded = true;
			// As the SDK's client does: an event with a non-empty id moves the client's Last-Event-ID.
			if (event.id) resumable = true;
		},
	});
	/** Chunks of an event not yet complete. */
	let held: Uint8Array[] = [];
	const end = (controller: ReadableStreamDefaultController<Uint8Array>, last: JSONRPCMessage | null) => {
		if (last) controller.enqueue(sseMessage(last));
		// What is left of an unfinished event at a clean end is passed on, as the upstream wrote it.
		else if (held.length > 0) controller.enqueue(joinChunks(held));
		controller.close();
		finish();
	};
	const incomplete = (error: unknown) =>
		resumable && options.onIncompleteResumable ? options.onIncompleteResumable(error) : options.onIncomplete(error);
	const stopReading = () =>
		reader.cancel().catch(() => {
			// The upstream connection is being dropped anyway.
		});
	return new ReadableStream<Uint8Array>({
		async pull(controller) {
			for (;;) {
				let chunk: ReadableStreamReadResult<Uint8Array>;
				try {
					chunk = await reader.read();
				} catch (error) {
					// Half an event is never handed on, whatever else the client gets.
					held = [];
					end(controller, responded ? null : incomplete(error));
					return;
				}
				if (chunk.done) {
					end(controller, responded ? null : incomplete(null));
					return;
				}
				const cut = limit.add(chunk.value);
				if (cut < 0) {
					await stopReading();
					end(controller, responded ? null : options.onOversize());
					return;
				}
				parser.feed(decoder.decode(chunk.value, { stream: true }));
				// Complete events pass on as the upstream wrote them; an unfinished one waits
				// for its end, so a reply cut off mid-event never hands the client half an event.
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
		},
		async cancel(reason) {
			finish();
			await reader.cancel(reason);
		},
	});
}
