import { once } from "../../primitives/once.ts";

/**
 * Passes a body through unchanged, chunk by chunk (never buffered whole), and
 * calls `onDone` exactly once when it ends, fails or the reader cancels. The
 * SessionDO uses it to know when a streamed call is really over.
 *
 * When the body fails mid-way, `onError` may supply final bytes (an SSE event
 * carrying a JSON-RPC error) so that the client learns what happened instead
 * of seeing a cut connection.
 */
export function withCompletion(
	body: ReadableStream<Uint8Array>,
	onDone: () => void,
	onError?: (error: unknown) => Uint8Array | null,
): ReadableStream<Uint8Array> {
	const reader = body.getReader();
	const finish = once(onDone);
	return new ReadableStream<Uint8Array>({
		async pull(controller) {
			try {
				const chunk = await reader.read();
				if (chunk.done) {
					controller.close();
					finish();
				} else {
					controller.enqueue(chunk.value);
				}
			} catch (error) {
				const tail = onError?.(error) ?? null;
				if (tail) {
					controller.enqueue(tail);
					controller.close();
				} else {
					controller.error(error);
				}
				finish();
			}
		},
		async cancel(reason) {
			finish();
			await reader.cancel(reason);
		},
	});
}
