import { startDeadline } from "../primitives/deadline.ts";

/** What one OTLP/HTTP export came to; never an exception. */
export type PostOutcome = { ok: true } | { ok: false; reason: string };

/**
 * POSTs one OTLP/HTTP JSON request (the body a JSON serializer of
 * @opentelemetry/otlp-transformer made) and settles within `timeoutMs`, whatever the
 * collector does: a stalled collector costs the isolate one pending fetch until the
 * timeout, never a request's answer. The deadline is disarmed as soon as the export ends
 * (not `AbortSignal.timeout`, whose timer would keep a Durable Object awake for the whole bound).
 */
export async function postOtlp(
	url: string,
	headers: Readonly<Record<string, string>>,
	body: Uint8Array,
	timeoutMs: number,
): Promise<PostOutcome> {
	const deadline = startDeadline(timeoutMs);
	try {
		const response = await fetch(url, {
			method: "POST",
			headers: { ...headers, "content-type": "application/json" },
			body,
			signal: deadline.signal,
		});
		// The body (an ExportTraceServiceResponse, maybe a partial success) is not needed; read it off
		// so the connection is released.
		await response.body?.cancel();
		return response.ok ? { ok: true } : { ok: false, reason: `HTTP ${response.status}` };
	} catch (error) {
		if (error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError")) {
			return { ok: false, reason: `no answer within ${timeoutMs} ms` };
		}
		if (error instanceof Error) return { ok: false, reason: error.message };
		return { ok: false, reason: String(error) };
	} finally {
		deadline.clear();
	}
}

/** The URL as a log line may show it: no query (a collector's key might ride there), no credentials. */
export function displayEndpoint(url: string): string {
	const parsed = new URL(url);
	return `${parsed.origin}${parsed.pathname}`;
}
