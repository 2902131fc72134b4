/**
 * The headers that cross the connector: everything the gateway sent for the
 * upstream, and everything the upstream answered, except the hop-by-hop
 * headers of one HTTP connection, which belong to neither end of the relay.
 */

/** Hop-by-hop (RFC 9110 §7.6.1), and the two a new request or frame computes for itself. */
const HOP_BY_HOP = new Set([
	"connection",
	"keep-alive",
	"proxy-authenticate",
	"proxy-authorization",
	"proxy-connection",
	"te",
	"trailer",
	"transfer-encoding",
	"upgrade",
	"host",
	"content-length",
]);

/** A request frame's header pairs as the Headers of the request the connector makes. */
export function requestHeaders(pairs: readonly (readonly [string, string])[]): Headers {
	const headers = new Headers();
	for (const [name, value] of pairs) if (!HOP_BY_HOP.has(name.toLowerCase())) headers.append(name, value);
	return headers;
}

/** A response's headers as a response frame's pairs. */
export function responseHeaderPairs(headers: Headers): [string, string][] {
	const pairs: [string, string][] = [];
	headers.forEach((value, name) => {
		if (!HOP_BY_HOP.has(name)) pairs.push([name, value]);
	});
	return pairs;
}
