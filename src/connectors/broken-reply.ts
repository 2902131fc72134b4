import { randomToken } from "../primitives/crypto.ts";

/*
 * A reply that breaks off after its head: the connector went away, or failed
 * the request, while its body streamed. The ConnectorDO can only end the body
 * it already returned, and an error thrown into a stream does not cross the
 * object's boundary as itself (it is also an uncaught rejection on each side).
 * So the object ends the body with a mark and the sentence, and the connector
 * fetch, in the caller's isolate, turns that ending into an error of the
 * body's reader: the relay then says why the reply ended, in those words.
 * The mark starts with a NUL, which no JSON or SSE text ends a chunk with
 * (so holding back a possible start of it delays nothing), and carries a
 * random token the object names only to the fetch, in the `BREAK_HEADER` of
 * the head, so nothing a connector sends can be taken for it.
 */

/** The head's header that names the token of a reply's break mark. Set by the object, removed by the fetch. */
export const BREAK_HEADER = "mcpgw-connector-break";

/** A new token for one reply's break mark. */
export function breakToken(): string {
	return randomToken(12);
}

/** The text that ends a broken reply: the mark, then the sentence of why it broke. */
export function breakText(token: string, sentence: string): string {
	return `\u0000${token}${sentence}`;
}

/**
 * `body` without its break mark: passed on as it comes, until a mark of
 * `token`; a body that ends after one errors with `broken(sentence)`.
 */
export function withBreaks(
	body: ReadableStream<Uint8Array>,
	token: string,
	broken: (sentence: string) => Error,
): ReadableStream<Uint8Array> {
	const mark = breakText(token, "");
	const decoder = new TextDecoder();
	const encoder = new TextEncoder();
	let held = "";
	let sentence: string | null = null;
	return body.pipeThrough(
		new TransformStream<Uint8Array, Uint8Array>({
			transform(chunk, controller) {
				const text = decoder.decode(chunk, { stream: true });
				if (sentence !== null) {
					sentence += text;
					return;
				}
				const seen = held + text;
				const at = seen.indexOf(mark);
				if (at >= 0) {
					sentence = seen.slice(at + mark.length);
					held = "";
					if (at > 0) controller.enqueue(encoder.encode(seen.slice(0, at)));
					return;
				}
				const keep = heldBack(seen, mark);
				held = seen.slice(seen.length - keep);
				if (seen.length > keep) controller.enqueue(encoder.encode(seen.slice(0, seen.length - keep)));
			},
			flush(controller) {
				const rest = decoder.decode();
				if (sentence !== null) {
					controller.error(broken(sentence + rest));
					return;
				}
				if (held + rest) controller.enqueue(encoder.encode(held + rest));
			},
		}),
	);
}

/** How many characters at the end of `text` may be the start of `mark` (0 when its last NUL is not). */
function heldBack(text: string, mark: string): number {
	const at = text.lastIndexOf("\u0000");
	if (at < 0) return 0;
	const tail = text.slice(at);
	return mark.startsWith(tail) ? tail.length : 0;
}
