/**
 * `--upstream <url>`: every request the gateway sends goes to a streamable
 * HTTP server on the connector's network, as it came (method, headers, body),
 * and its response comes back as it went (status, headers, the body streamed),
 * except that a 401's `resource_metadata` names the connector address of the
 * server's metadata, which is read at the upstream's own (resource-metadata.ts).
 */
import { logLine } from "./connect-log.ts";
import type { IncomingCall } from "./request-runs.ts";
import { challengeThroughConnector, upstreamMetadataUrls } from "./resource-metadata.ts";

export class HttpUpstream {
	readonly #url: string;
	readonly #server: string;

	constructor(url: string, server: string) {
		this.#url = url;
		this.#server = server;
	}

	async handle(call: IncomingCall): Promise<Response> {
		if (call.path !== undefined) return this.#wellKnown(call, call.path);
		const response = await this.#send(this.#url, call);
		const challenge = response.headers.get("www-authenticate");
		if (response.status !== 401 || challenge === null) return response;
		const headers = new Headers(response.headers);
		headers.set("www-authenticate", challengeThroughConnector(challenge, this.#url, this.#server));
		return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
	}

	/** A well-known document of the upstream: at its path's address, else (404) at its root's, as RFC 9728 derives them. */
	async #wellKnown(call: IncomingCall, path: string): Promise<Response> {
		const [first, ...rest] = upstreamMetadataUrls(this.#url, path);
		let response = await this.#send(first ?? this.#url, call);
		for (const next of rest) {
			if (response.status !== 404) break;
			await response.body?.cancel();
			response = await this.#send(next, call);
		}
		return response;
	}

	async #send(url: string, call: IncomingCall): Promise<Response> {
		try {
			return await fetch(url, {
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
