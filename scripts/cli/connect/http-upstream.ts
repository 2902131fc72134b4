/**
 * `--upstream <url>`: every request the gateway sends goes to a streamable
 * HTTP server on the connector's network, as it came (method, headers, body),
 * and its response comes back as it went (status, headers, the body streamed).
 */
import { logLine } from "./connect-log.ts";
import type { IncomingCall } from "./request-runs.ts";

export class HttpUpstream {
	readonly #url: string;

	constructor(url: string) {
		this.#url = url;
	}

	async handle(call: IncomingCall): Promise<Response> {
		try {
			return await fetch(this.#url, {
				method: call.method,
				headers: call.headers,
				...(call.body === undefined ? {} : { body: call.body }),
				signal: call.signal,
				redirect: "manual",
			});
		} catch (error) {
			if (call.signal.aborted) throw error;
			const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : String(error);
			logLine(`the upstream ${this.#url} could not be reached: ${cause}`);
			throw new Error(`the upstream ${this.#url} could not be reached from the connector (${cause})`, { cause: error });
		}
	}
}
