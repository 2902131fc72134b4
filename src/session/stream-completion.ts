/**
 * Passes a body through unchanged, chunk by chunk (never buffered whole), and
 * calls `onDone` exactly once when it ends, fails or the reader cancels. The
 * SessionDO uses it to know when a streamed call is really over.
 */
export function withCompletion(body: ReadableStream<Uint8Array>, onDone: () => void): ReadableStream<Uint8Array> {
	const reader = body.getReader();
	let finished = false;
	const finish = () => {
		if (!finished) {
			finished = true;
			onDone();
		}
	};
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
				controller.error(error);
				finish();
			}
		},
		async cancel(reason) {
			finish();
			await reader.cancel(reason);
		},
	});
}
