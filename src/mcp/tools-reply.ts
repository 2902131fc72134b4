import { type ListToolsResult, ListToolsResultSchema, type RequestId } from "@modelcontextprotocol/sdk/types.js";
import type { WaitUntil } from "../primitives/wait-until.ts";
import { parseJsonRpcMessage } from "./jsonrpc.ts";
import { readCapped } from "./read-capped.ts";
import { readSseEvents } from "./sse.ts";

/**
 * Reading a tools/list reply the gateway passes on unchanged, beside the
 * client: the body is teed, the client's branch is the reply exactly as it
 * came (bytes, status, headers, pace), and the copy is read in the
 * background, under the reply cap, for what it lists.
 */

/**
 * `reply` as the client gets it, its body's copy handed to `observe` in the
 * background (`waitUntil`). A copy that is not read to its end is cancelled
 * by `observe`'s reader; that does not touch the client's branch. A failure
 * of `observe` is logged, never the client's.
 */
export function observedReply(
	reply: Response,
	observe: (copy: ReadableStream<Uint8Array>, sse: boolean) => Promise<void>,
	waitUntil: WaitUntil,
): Response {
	if (!reply.body) return reply;
	const [client, copy] = reply.body.tee();
	const sse = (reply.headers.get("content-type") ?? "").includes("text/event-stream");
	waitUntil(
		observe(copy, sse).catch((error: unknown) => {
			console.warn(`observing a tools/list reply failed: ${error instanceof Error ? error.message : String(error)}`);
		}),
	);
	return new Response(client, { status: reply.status, statusText: reply.statusText, headers: reply.headers });
}

/**
 * The tools/list result answering request `id` in a reply body (a JSON
 * reply, or the response event of an SSE one), parsed with the SDK's
 * ListToolsResultSchema; null when the body holds none (an error, another
 * id, a reply over `maxBytes`, a stream that ended first). Reads no more
 * than `maxBytes` of JSON, nor an SSE event larger than that.
 */
export async function toolsResultOf(
	body: ReadableStream<Uint8Array>,
	sse: boolean,
	id: RequestId,
	maxBytes: number,
): Promise<ListToolsResult | null> {
	let result: ListToolsResult | null = null;
	const answer = (text: string): boolean => {
		const message = parseJsonRpcMessage(text);
		if (message === null || "method" in message || !("id" in message) || message.id !== id) return false;
		if ("result" in message) {
			const parsed = ListToolsResultSchema.safeParse(message.result);
			result = parsed.success ? parsed.data : null;
		}
		// The answer (a result, or an error that lists nothing): nothing after it is read.
		return true;
	};
	if (sse) {
		await readSseEvents(body, (event) => answer(event.data), maxBytes).catch((error: unknown) => {
			// An event over the cap is not read; anything else is a stream that broke, which the client sees too.
			if (!(error instanceof RangeError)) throw error;
		});
		return result;
	}
	const bytes = await readCapped(body, maxBytes);
	if (bytes !== null) answer(new TextDecoder().decode(bytes));
	return result;
}
