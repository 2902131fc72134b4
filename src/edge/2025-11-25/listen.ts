import { SSE_HEADERS } from "../../mcp/sse.ts";
import { openWindow, type SessionStub } from "../listen-window.ts";
import type { McpContext } from "../request-context.ts";

/**
 * A 2025 client's GET: one listening window (`openWindow`), the stream
 * closed at its end; the client resumes (Last-Event-ID) and the edge admits
 * it again then, as every request. While the upstream's stream is paced (it
 * ended early), the answer is an empty stream whose `retry` says when to come back.
 */
export async function serveListen(c: McpContext, stub: SessionStub): Promise<Response> {
	const window = await openWindow(c, stub, c.req.raw.headers.get("last-event-id"));
	return window instanceof Response ? window : retryLater(window.retryMs);
}

/** A stream with no events: the client comes back after `retry`, when the upstream may be listened to again. */
function retryLater(waitMs: number): Response {
	return new Response(`: the upstream ended its stream early; listen again after retry\nretry: ${waitMs}\n\n`, {
		headers: SSE_HEADERS,
	});
}
