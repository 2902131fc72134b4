import type { JSONRPCNotification } from "@modelcontextprotocol/sdk/types.js";
import { sseMessage } from "../mcp/sse.ts";

/** Client GET streams held per session; opening one more closes the oldest. */
export const MAX_CLIENT_STREAMS = 4;

/**
 * Bytes that may wait for a client that does not read its stream; past this
 * the stream is dropped rather than buffered without end.
 */
const MAX_UNREAD_BYTES = 1024 * 1024;

const encoder = new TextEncoder();

interface Listener {
	writer: WritableStreamDefaultWriter<Uint8Array>;
	close(): void;
}

/**
 * The client's GET streams of an aggregate session: server-initiated
 * notifications the gateway decides to send (its own list_changed, members'
 * resource updates, log messages and progress) are written to every open
 * stream. At most MAX_CLIENT_STREAMS are held, and a stream whose client
 * stops reading is dropped once MAX_UNREAD_BYTES wait for it.
 */
export class ClientChannel {
	private readonly listeners: Listener[] = [];

	get open(): boolean {
		return this.listeners.length > 0;
	}

	/** A new SSE body for one client GET; `onClose` runs once when the stream ends, whoever ends it. */
	connect(onClose: () => void): ReadableStream<Uint8Array> {
		const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>(
			undefined,
			new ByteLengthQueuingStrategy({ highWaterMark: MAX_UNREAD_BYTES }),
		);
		const writer = writable.getWriter();
		let closed = false;
		const listener: Listener = {
			writer,
			close: () => {
				if (closed) return;
				closed = true;
				const index = this.listeners.indexOf(listener);
				if (index !== -1) this.listeners.splice(index, 1);
				writer.close().catch(() => {
					// Already closed or errored by the client: nothing left to end.
				});
				onClose();
			},
		};
		this.listeners.push(listener);
		writer.closed.then(listener.close, listener.close);
		// A comment line first, so the client sees the stream open before any notification.
		this.write(listener, encoder.encode(": connected\n\n"));
		while (this.listeners.length > MAX_CLIENT_STREAMS) this.listeners[0]?.close();
		return readable;
	}

	/** Sends a notification on every open stream. */
	send(message: JSONRPCNotification): void {
		const bytes = sseMessage(message);
		for (const listener of [...this.listeners]) this.write(listener, bytes);
	}

	/** Ends every stream (the session ended). */
	closeAll(): void {
		for (const listener of [...this.listeners]) listener.close();
	}

	/** Writes without waiting; a client that lets MAX_UNREAD_BYTES pile up is dropped. */
	private write(listener: Listener, bytes: Uint8Array): void {
		const room = listener.writer.desiredSize;
		if (room !== null && room < bytes.byteLength) {
			console.warn("client GET stream dropped: its client stopped reading");
			listener.close();
			return;
		}
		listener.writer.write(bytes).catch(listener.close);
	}
}
