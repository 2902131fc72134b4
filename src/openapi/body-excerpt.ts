import { joinChunks } from "../mcp/read-capped.ts";

/**
 * The first `limit` bytes of a body as text, cut at a character boundary (never
 * half of a UTF-8 sequence), and whether there was more. Reads no further than
 * `limit + 1` bytes: an error page of megabytes costs the gateway one excerpt.
 */
export async function readExcerpt(
	body: ReadableStream<Uint8Array> | null,
	limit: number,
): Promise<{ text: string; cut: boolean }> {
	if (body === null) return { text: "", cut: false };
	const reader = body.getReader();
	const chunks: Uint8Array[] = [];
	let size = 0;
	while (size <= limit) {
		const { done, value } = await reader.read();
		if (done) break;
		chunks.push(value);
		size += value.byteLength;
	}
	const cut = size > limit;
	if (cut) await reader.cancel();
	const bytes = joinChunks(chunks);
	let end = Math.min(bytes.byteLength, limit);
	// A continuation byte (10xxxxxx) at the cut means its character began before it: cut before that character.
	if (cut) while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
	return { text: new TextDecoder().decode(bytes.subarray(0, end)), cut };
}
