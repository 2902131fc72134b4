/** Reads the JSON messages of an SSE body one at a time, as they arrive (event by event). */
export function eventReader<T = Record<string, unknown>>(body: ReadableStream<Uint8Array>) {
	const reader = body.pipeThrough(new TextDecoderStream()).getReader();
	let buffer = "";
	return {
		async next(): Promise<T> {
			for (;;) {
				const end = buffer.indexOf("\n\n");
				if (end >= 0) {
					const block = buffer.slice(0, end);
					buffer = buffer.slice(end + 2);
					const data = block
						.split("\n")
						.filter((line) => line.startsWith("data:"))
						.map((line) => line.slice(5).trim())
						.join("\n");
					if (data) return JSON.parse(data) as T;
					continue;
				}
				const chunk = await reader.read();
				if (chunk.done) throw new Error("stream ended");
				buffer += chunk.value;
			}
		},
		cancel: () => reader.cancel(),
	};
}
