const encoder = new TextEncoder();

/** A response body that yields the given chunks, then ends (or fails, as a lost connection does). */
export function chunkedBody(chunks: string[], fail = false): ReadableStream<Uint8Array> {
	let i = 0;
	return new ReadableStream({
		pull(controller) {
			const chunk = chunks[i++];
			if (chunk !== undefined) controller.enqueue(encoder.encode(chunk));
			else if (fail) controller.error(new Error("connection lost"));
			else controller.close();
		},
	});
}
