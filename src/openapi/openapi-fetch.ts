import { env } from "cloudflare:workers";
import { settingsFrom } from "../config.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import { openApiServerOf } from "../registry/openapi-records.ts";
import type { FetchLike } from "../upstream/upstream-fetch.ts";
import { publishedApi } from "./api-store.ts";
import { documentHandler } from "./document-server.ts";

/**
 * The upstream fetch of a server made from an OpenAPI document: a request
 * addressed to `openApiUrl(server, digest)` is answered here, in the
 * isolate that made it (the edge's or a session's), by the document server
 * over the compiled API the address names; no second hop. Registered as the
 * fetcher of OPENAPI_ORIGIN by the Worker's entry.
 */
export const openApiFetch: FetchLike = async (input, init) => {
	const address = openApiServerOf(input);
	if (address === null) throw new GatewayError("misconfigured", "A document server's address names no server.");
	const request = new Request(input, init);
	const published = await publishedApi(env, address.server, address.digest, request);
	if (published === null) {
		throw new GatewayError(
			"upstream_unavailable",
			`Server '${address.server}' changed while this request was on its way; try again.`,
			{ server: address.server },
		);
	}
	const settings = settingsFrom(env);
	const handler = documentHandler(published, {
		vars: env,
		maxReplyBytes: settings.maxReplyBytes,
		allowHttpUpstreams: settings.allowHttpUpstreams,
		fetch: (url, requestInit) => fetch(url, requestInit),
	});
	return handler.fetch(request);
};
