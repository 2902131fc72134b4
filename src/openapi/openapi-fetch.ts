import { env } from "cloudflare:workers";
import { settingsFrom } from "../config.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import { openApiServerOf } from "../registry/openapi-records.ts";
import type { PublishedApi } from "../registry/tables/openapi-apis-table.ts";
import type { FetchLike } from "../upstream/upstream-fetch.ts";
import { publishedApi } from "./api-store.ts";
import { authorizationServerMetadata, metadataAddressOf, resourceMetadata } from "./authorization-metadata.ts";
import { documentHandler } from "./document-server.ts";

/**
 * The upstream fetch of a server made from an OpenAPI document: a request
 * addressed to `openApiUrl(server, digest)` is answered here, in the isolate
 * that made it (the edge's or a session's), by the document server over the
 * compiled API the address names; no second hop (decision 0104). The
 * well-known addresses beside it answer the gateway's OAuth discovery for the
 * API (authorization-metadata.ts). Registered as the fetcher of
 * OPENAPI_ORIGIN by the Worker's entry.
 */
export const openApiFetch: FetchLike = async (input, init) => {
	const request = new Request(input, init);
	const metadata = metadataAddressOf(input);
	const address = metadata ?? openApiServerOf(input);
	if (address === null) return new Response(null, { status: 404 });
	const published = await publishedApi(env, address.server, address.digest, request);
	if (published === null) {
		throw new GatewayError(
			"upstream_unavailable",
			`Server '${address.server}' changed while this request was on its way; try again.`,
			{ server: address.server },
		);
	}
	if (metadata) return metadataAnswer(published, metadata.part, address.digest);
	const settings = settingsFrom(env);
	const refused = { byApi: false };
	const response = await documentHandler(published, {
		vars: env,
		maxReplyBytes: settings.maxReplyBytes,
		allowHttpUpstreams: settings.allowHttpUpstreams,
		fetch: (url, requestInit) => fetch(url, requestInit),
		refusedBearer: () => {
			refused.byApi = true;
		},
	}).fetch(request);
	// The API refused the person's token: answered as an MCP server answers a token it refuses, so the
	// gateway refreshes it once, or asks the person to connect again, as for any `oauth` server.
	if (refused.byApi) {
		await response.body?.cancel();
		return new Response(null, { status: 401, headers: { "www-authenticate": 'Bearer error="invalid_token"' } });
	}
	return response;
};

async function metadataAnswer(
	published: PublishedApi,
	part: "resource-metadata" | "authorization-server",
	digest: string,
): Promise<Response> {
	const document =
		part === "resource-metadata"
			? await resourceMetadata(published, digest, (url, init) => fetch(url, init))
			: authorizationServerMetadata(published, digest);
	return document === null ? new Response(null, { status: 404 }) : Response.json(document);
}
