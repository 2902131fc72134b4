import { type ConnectorFrame, ConnectorFrameSchema, type GatewayFrame, MAX_FRAME_BYTES } from "./frames.ts";

/** A frame read from a connector, or why the socket is closed (code 1008, the sentence as reason). */
export type FrameRead = { frame: ConnectorFrame } | { refused: string };

const encoder = new TextEncoder();

/** Parses one WebSocket message from a connector with frames.ts; never throws. */
export function readFrame(message: string | ArrayBuffer): FrameRead {
	if (typeof message !== "string") return { refused: "frames are JSON text, not binary" };
	// A UTF-8 byte count is at least the string's length and at most three times it: count only when it may matter.
	if (message.length * 3 > MAX_FRAME_BYTES && encoder.encode(message).byteLength > MAX_FRAME_BYTES) {
		return { refused: `a frame is at most ${MAX_FRAME_BYTES} bytes` };
	}
	let value: unknown;
	try {
		value = JSON.parse(message);
	} catch (error) {
		return { refused: `a frame that is not JSON (${error instanceof Error ? error.name : "parse error"})` };
	}
	const parsed = ConnectorFrameSchema.safeParse(value);
	if (!parsed.success) {
		const issue = parsed.error.issues[0];
		return {
			refused: `a frame that is not one of the protocol's: ${issue?.path.join(".") || "frame"}: ${issue?.message ?? "invalid"}`,
		};
	}
	return { frame: parsed.data };
}

/** A frame to the connector as text. */
export function writeFrame(frame: GatewayFrame): string {
	return JSON.stringify(frame);
}

/** A close reason fits in 123 bytes of UTF-8: longer sentences are cut. */
export function closeReason(sentence: string): string {
	let reason = sentence;
	while (encoder.encode(reason).byteLength > 123) reason = reason.slice(0, -1);
	return reason;
}
