/**
 * A server's OAuth protected resource metadata (RFC 9728), as the gateway
 * reads it through the connector to connect a person's account (`auth:
 * oauth`). The gateway knows the server only by its connector address, so
 * the connector stands in for its upstream's address both ways: a request for
 * the well-known document is read at the upstream's own well-known address,
 * and a 401 challenge that names the upstream's metadata names the connector
 * address of it instead, which the gateway can follow.
 */
import { connectorMetadataUrl } from "../../../src/registry/connector-tokens.ts";

/** Where RFC 9728 puts the metadata of `upstream`: the well-known path, then the upstream's path; then the root. */
export function upstreamMetadataUrls(upstream: string, wellKnown: string): string[] {
	const url = new URL(upstream);
	const path = url.pathname.replace(/\/$/, "");
	const root = new URL(wellKnown, url).href;
	return path === "" ? [root] : [new URL(`${wellKnown}${path}`, url).href, root];
}

/** A `resource_metadata` parameter of a challenge, with where its value starts and ends. */
const RESOURCE_METADATA = /(^|[\s,])(resource_metadata\s*=\s*)(?:"([^"]*)"|([^\s,]+))/i;

/**
 * A 401's `WWW-Authenticate` with its `resource_metadata` on the upstream's
 * origin named as the server's connector address of it; a value elsewhere
 * (metadata published on another host) is left as it is.
 */
export function challengeThroughConnector(challenge: string, upstream: string, server: string): string {
	const match = RESOURCE_METADATA.exec(challenge);
	const named = match?.[3] ?? match?.[4];
	if (!match || named === undefined || !URL.canParse(named)) return challenge;
	if (new URL(named).origin !== new URL(upstream).origin) return challenge;
	const replaced = `${match[1]}${match[2]}"${connectorMetadataUrl(server)}"`;
	return challenge.slice(0, match.index) + replaced + challenge.slice(match.index + match[0].length);
}
