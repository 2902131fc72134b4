import { GatewayError } from "../mcp/gateway-error.ts";

/** How much of an upstream's `WWW-Authenticate` challenge an error keeps for the operator. */
const MAX_CHALLENGE_CHARS = 512;

/**
 * What an upstream's HTTP failure status means, for every path that meets
 * one (2025 sessions, the era probe, listening, the stateless 2026-07-28
 * path). A 401 is the credentials configured for the server refused
 * (`upstream_auth_required`, its challenge kept in `details`); anything else
 * is an `upstream_error` naming the status. The client never gets the
 * upstream's status as the gateway's own: a 401 from the gateway means the
 * client's credential was refused, and an OAuth client would sign in again.
 *
 * @example
 * throw upstreamStatusError("alpha", 401, "tools/call", response.headers.get("www-authenticate"));
 */
export function upstreamStatusError(
	server: string,
	status: number,
	what: string,
	challenge: string | null = null,
): GatewayError {
	if (status === 401) {
		return new GatewayError(
			"upstream_auth_required",
			`Upstream server '${server}' rejected the gateway's credentials (HTTP 401) for ${what}, so it was not performed. The gateway operator should check the credentials configured for '${server}' (its headers, and the secrets they reference).`,
			{ server, ...(challenge ? { details: { wwwAuthenticate: challenge.slice(0, MAX_CHALLENGE_CHARS) } } : {}) },
		);
	}
	const detail =
		status === 403
			? "its credentials were rejected (HTTP 403); check the headers configured for it"
			: `it answered HTTP ${status}`;
	return new GatewayError("upstream_error", `Upstream server '${server}' failed ${what}: ${detail}.`, { server });
}

/** An upstream reply that is not what MCP allows (`what` says what it sent). */
export function upstreamProtocolError(server: string, what: string): GatewayError {
	return new GatewayError("upstream_error", `Upstream server '${server}' sent ${what}.`, { server });
}
