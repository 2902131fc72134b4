import { describeError } from "../mcp/gateway-error.ts";
import { readCapped } from "../mcp/read-capped.ts";
import { startDeadline } from "../primitives/deadline.ts";

/** The largest document fetched: past it the rest is not read. */
export const MAX_DOCUMENT_BYTES = 4 * 1024 * 1024;
/** No document server needs longer to hand over its document. */
const DOCUMENT_FETCH_MS = 10_000;
/** Redirects within the document's own origin followed at most this often. */
const MAX_REDIRECTS = 3;

export interface DocumentFetchOptions {
	allowHttpUpstreams: boolean;
	fetch: typeof fetch;
}

/**
 * An OpenAPI document fetched from `url` at a PUT: bounded in size and time,
 * plain http only where http upstreams are allowed, and redirects followed
 * only within the URL's own origin (a redirect to another host could hand the
 * gateway a document the operator never named). The final URL is what a
 * relative `servers` entry resolves against.
 */
export async function fetchDocument(
	url: string,
	options: DocumentFetchOptions,
): Promise<{ text: string; url: string } | { problem: string }> {
	const deadline = startDeadline(DOCUMENT_FETCH_MS);
	try {
		let current = new URL(url);
		const origin = current.origin;
		for (let hops = 0; ; hops++) {
			if (current.protocol === "http:" && !options.allowHttpUpstreams) {
				return { problem: "url is plain http and ALLOW_HTTP_UPSTREAMS is not true; use https" };
			}
			let response: Response;
			try {
				// Called on its own: workerd's fetch refuses to run as a method of another object ("Illegal invocation").
				const fetcher = options.fetch;
				response = await fetcher(current, {
					headers: { accept: "application/json, application/yaml, text/yaml, */*;q=0.5" },
					redirect: "manual",
					signal: deadline.signal,
				});
			} catch (error) {
				if (deadline.signal.aborted) return { problem: `the document at ${origin} did not arrive within 10 seconds` };
				return { problem: `the document could not be fetched from ${origin}: ${describeError(error)}` };
			}
			if (response.status >= 300 && response.status < 400) {
				await response.body?.cancel();
				const location = response.headers.get("location");
				const next = location === null ? null : URL.parse(location, current);
				if (next === null) return { problem: `${origin} answered ${response.status} without a usable Location` };
				if (next.origin !== origin) {
					return { problem: `${origin} redirected to another host (${next.origin}), which is not followed` };
				}
				if (hops + 1 > MAX_REDIRECTS) return { problem: `${origin} redirected more than ${MAX_REDIRECTS} times` };
				current = next;
				continue;
			}
			if (!response.ok) {
				await response.body?.cancel();
				return { problem: `fetching the document from ${origin} answered HTTP ${response.status}` };
			}
			let bytes: Uint8Array | null;
			try {
				bytes = response.body ? await readCapped(response.body, MAX_DOCUMENT_BYTES) : new Uint8Array();
			} catch (error) {
				if (deadline.signal.aborted) return { problem: `the document at ${origin} did not arrive within 10 seconds` };
				return { problem: `the document from ${origin} could not be read: ${describeError(error)}` };
			}
			if (bytes === null) {
				return {
					problem: `the document is larger than ${MAX_DOCUMENT_BYTES / (1024 * 1024)} MiB, which the gateway does not read`,
				};
			}
			return { text: new TextDecoder().decode(bytes), url: current.href };
		}
	} finally {
		deadline.clear();
	}
}
