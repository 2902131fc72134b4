import type { JSONRPCNotification } from "@modelcontextprotocol/sdk/types.js";

const encoder = new TextEncoder();

/**
 * The client's GET streams of an aggregate session: server-initiated
 * notifications the gateway decides to send (its own list_changed, members'
 * resource updates and log messages) are written to every open stream.
 */
export class ClientChannel {
	private readonly writers = new Set<WritableStreamDefaultWriter<Uint8Array>>();

	get open(): boolean {
		return this.writers.size > 0;
	}

	/** A new SSE body for one client GET; `onClose` runs once when the client goes away. */
	connect(onClose: () => void): ReadableStream<Uint8Array> {
		const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
		const writer = writable.getWriter();
		this.writers.add(writer);
		let closed = false;
		const close = () => {
			if (closed) return;
			closed = true;
			this.writers.delete(writer);
			onClose();
		};
		writer.closed.then(close, close);
		// A comment line first, so the client sees the stream open before any notification.
		writer.write(encoder.encode(": connected\n\n")).catch(close);
		return readable;
	}

	/** Sends a notification on every open stream; a stream that fails is dropped. */
	send(message: JSONRPCNotification): void {
		const bytes = encoder.encode(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
		for (const writer of this.writers) {
			writer.write(bytes).catch(() => {
				// The client went away; its `closed` handler removes the writer.
			});
		}
	}

	/** Ends every stream (the session ended). */
	closeAll(): void {
		for (const writer of this.writers) {
			writer.close().catch(() => {
				// Already closed or errored by the client: nothing left to end.
			});
		}
		this.writers.clear();
	}
}
