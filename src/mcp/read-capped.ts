/**
 * Reads a whole body, or returns null as soon as it passes `limit` bytes
 * (the rest is not read). For request bodies and upstream JSON replies.
 */
export async function readCapped(body: ReadableStream<Uint8Array>, limit: number): Promise<Uint8Array | null> {
	const reader = body.getReader();
	const chunks: Uint8Array[] = [];
	let size = 0;
	for (;;) {
		const { done, value } = await reader.read();
		if (done) break;
		size += value.byteLength;
		if (size > limit) {
			await reader.cancel();
			return null;
		}
		chunks.push(value);
	}
	return joinChunks(chunks);
}

/** The chunks as one array, in order. */
export function joinChunks(chunks: readonly Uint8Array[]): Uint8Array {
	let length = 0;
	for (const chunk of chunks) length += chunk.byteLength;
	const joined = new Uint8Array(length);
	let offset = 0;
	for (const chunk of chunks) {
		joined.set(chunk, offset);
		offset += chunk.byteLength;
	}
	return joined;
}
