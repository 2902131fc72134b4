import { startDeadline } from "../upstream/deadline.ts";
import { fetchUpstream } from "../upstream/upstream-fetch.ts";
import type { UpstreamTarget } from "../upstream/upstream-target.ts";

/**
 * Client headers a 2026-07-28 request carries to its upstream: the transport's
 * own (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, every `Mcp-Param-*`,
 * known or not, as intermediaries must), content negotiation and tracing.
 * Never the client's credentials, cookies or session id: the upstream gets the
 * operator's configured headers instead (invariant 10).
 */
const FORWARDED = new Set(["accept", "content-type", "user-agent", "traceparent", "tracestate", "baggage"]);
const NEVER_FORWARDED = new Set(["mcp-session-id"]);

/** Response headers the client gets back from the upstream. */
const RETURNED = ["content-type", "cache-control", "x-accel-buffering"];

/**
 * A 2026-07-28 request to a 2026-07-28 upstream needs no state: the edge sends
 * the body as it came (the envelope, names and arguments untouched) with the
 * credentials swapped, and streams the answer back. No Durable Object is
 * involved. The deadline covers the upstream's answer starting; the stream
 * itself runs until the upstream ends it or the client goes away (which
 * cancels the upstream request, the era's cancellation).
 */
export async function forwardModern(target: UpstreamTarget, request: Request, body: string): Promise<Response> {
	const headers = new Headers();
	for (const [name, value] of request.headers) {
		if (FORWARDED.has(name) || (name.startsWith("mcp-") && !NEVER_FORWARDED.has(name))) headers.set(name, value);
	}
	for (const [name, value] of Object.entries(target.headers)) headers.set(name, value);
	const deadline = startDeadline(target.timeoutMs);
	let upstream: Response;
	try {
		upstream = await fetchUpstream(target, { method: "POST", headers, body }, deadline);
	} finally {
		deadline.clear();
	}
	const returned = new Headers();
	for (const name of RETURNED) {
		const value = upstream.headers.get(name);
		if (value !== null) returned.set(name, value);
	}
	return new Response(upstream.body, { status: upstream.status, headers: returned });
}
