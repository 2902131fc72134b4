import { env } from "cloudflare:workers";
import { GatewayError } from "../mcp/gateway-error.ts";
import { readCapped } from "../mcp/read-capped.ts";
import { connectorServerOf } from "../registry/connector-tokens.ts";
import type { FetchLike } from "../upstream/upstream-fetch.ts";
import { BREAK_HEADER, withBreaks } from "./broken-reply.ts";
import { connectorObject } from "./connector-do.ts";
import { REFUSAL_HEADER } from "./connector-refusal.ts";

/** A refusal's sentence is short; more is not read. */
const MAX_SENTENCE_BYTES = 4096;

/**
 * The upstream fetch of a server reached through connectors: the request,
 * addressed to `connectorUrl(server)`, goes to that server's ConnectorDO, which
 * carries it over a connector's WebSocket. The object's own refusals (no
 * connector online, the connector went away before answering) become the
 * gateway's `upstream_unavailable` with the object's sentence; every other
 * answer is the connector's and is returned as an upstream's.
 * Registered as the fetcher of CONNECTOR_ORIGIN by the Worker's entry.
 */
export const connectorFetch: FetchLike = async (input, init) => {
	const server = connectorServerOf(input);
	if (server === null) throw new GatewayError("misconfigured", "A connector address names no server.");
	const response = await connectorObject(env, server).fetch(new Request(input, init));
	const reason = response.headers.get(REFUSAL_HEADER);
	if (reason === null) return withoutBreakMark(response, server);
	const bytes = response.body ? await readCapped(response.body, MAX_SENTENCE_BYTES) : null;
	const sentence =
		bytes === null ? `The connectors of '${server}' could not carry the request.` : new TextDecoder().decode(bytes);
	// Gone after the request was sent: it may have run, and the sentence says so in the words.
	const kind = reason === "went_away" ? "outcome_uncertain" : "upstream_unavailable";
	throw new GatewayError(kind, sentence, { server, details: { reason } });
};

/** A connector's answer whose body, if it breaks off, errors with the object's sentence (broken-reply.ts). */
function withoutBreakMark(response: Response, server: string): Response {
	const token = response.headers.get(BREAK_HEADER);
	if (token === null || response.body === null) return response;
	const headers = new Headers(response.headers);
	headers.delete(BREAK_HEADER);
	const body = withBreaks(
		response.body,
		token,
		(sentence) => new GatewayError("outcome_uncertain", sentence, { server, details: { reason: "broke_off" } }),
	);
	return new Response(body, { status: response.status, statusText: response.statusText, headers });
}
