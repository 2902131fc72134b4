/**
 * A response body's text as `chunk` frames, each of which fits MAX_FRAME_BYTES
 * once serialised: the limit is on the frame the gateway receives, and JSON
 * escaping can make a string's frame several times longer than its text.
 */

import type { z } from "zod";
import { type ChunkFrameSchema, MAX_FRAME_BYTES } from "../../../src/connectors/frames.ts";

type ChunkFrame = z.infer<typeof ChunkFrameSchema>;

function frameBytes(frame: ChunkFrame): number {
	return Buffer.byteLength(JSON.stringify(frame));
}

/** Does not split a surrogate pair: each piece stays valid UTF-16 (and so valid UTF-8 on the wire). */
function safeCut(text: string, at: number): number {
	const code = text.charCodeAt(at - 1);
	return code >= 0xd800 && code <= 0xdbff && at > 1 ? at - 1 : at;
}

/** `text` as the fewest chunk frames for request `id` that each fit `maxBytes` (MAX_FRAME_BYTES). */
export function chunkFrames(id: number, text: string, maxBytes = MAX_FRAME_BYTES): ChunkFrame[] {
	const frames: ChunkFrame[] = [];
	let rest = text;
	while (rest.length > 0) {
		let length = Math.min(rest.length, maxBytes);
		let frame: ChunkFrame = { type: "chunk", id, data: rest.slice(0, length) };
		while (frameBytes(frame) > maxBytes && length > 1) {
			length = safeCut(rest, Math.floor(length / 2));
			frame = { type: "chunk", id, data: rest.slice(0, length) };
		}
		frames.push(frame);
		rest = rest.slice(length);
	}
	return frames;
}
