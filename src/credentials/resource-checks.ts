import { isServedAddress } from "../upstream/served-origins.ts";
import { UpstreamAuthorizationRefused } from "./authorization-refused.ts";

/*
 * What discovery accepts of the addresses and resources a server's metadata
 * names: for a server registered by URL, only what covers that URL; for a
 * served server (a connector's, a document's; decision 0092), what its own
 * served fetcher says, read only at its own address.
 */

/** The well-known URLs RFC 9728 derives from the server's URL: for its path, then for its root. */
export function wellKnownResourceUrls(serverUrl: URL): URL[] {
	const path = serverUrl.pathname.replace(/\/$/, "");
	const root = new URL("/.well-known/oauth-protected-resource", serverUrl);
	if (path === "") return [root];
	return [new URL(`/.well-known/oauth-protected-resource${path}`, serverUrl), root];
}

/**
 * The metadata's `resource` when it covers the server: the server's URL
 * itself, or (as MCP clients accept) a URL of the same origin whose path is a
 * prefix of the server's at a segment boundary. Anything else is metadata for
 * another resource, and tokens asked for it would be someone else's.
 */
export function allowedResource(claimed: string, serverUrl: URL): URL {
	const refuse = () =>
		new UpstreamAuthorizationRefused(
			"resource_mismatch",
			`The upstream's metadata describes another resource (${claimed.slice(0, 200)}) than the server ${serverUrl.host}${serverUrl.pathname}, so the gateway does not trust it.`,
		);
	if (!URL.canParse(claimed)) throw refuse();
	const resource = new URL(claimed);
	if (resource.origin !== serverUrl.origin || resource.search || resource.hash) throw refuse();
	const prefix = resource.pathname.endsWith("/") ? resource.pathname : `${resource.pathname}/`;
	const path = serverUrl.pathname.endsWith("/") ? serverUrl.pathname : `${serverUrl.pathname}/`;
	if (!path.startsWith(prefix)) throw refuse();
	return resource;
}

/**
 * The metadata address a served server's challenge names, when it is the one
 * RFC 9728 derives from the server's address (its served fetcher answers
 * there, for that server alone). Any other address is refused: metadata read
 * elsewhere, even at another served server, would not be this server's.
 */
export function servedMetadataUrl(named: string, serverUrl: URL): URL {
	const [derived] = wellKnownResourceUrls(serverUrl);
	if (derived !== undefined && URL.canParse(named) && new URL(named).href === derived.href) return derived;
	throw new UpstreamAuthorizationRefused(
		"resource_mismatch",
		`The server ${serverUrl.host}${serverUrl.pathname} names its protected resource metadata at another address (${named.slice(0, 200)}) than its own (${derived?.href ?? "none"}), so the gateway does not read it.`,
	);
}

/**
 * The resource a served server's metadata names, accepted as the resource it
 * stands for (decision 0092): a connector's upstream names its private URL, a
 * document its API's. The metadata came through the served fetcher of this
 * server's own address, from what its operator set up for it, so it is the
 * server's word; the resource must still be an absolute URL without fragment
 * (RFC 8707), and tokens are asked for it as named.
 */
export function servedResource(claimed: string, serverUrl: URL): URL {
	if (URL.canParse(claimed)) {
		const resource = new URL(claimed);
		if (!resource.hash && (resource.protocol === "https:" || resource.protocol === "http:")) return resource;
	}
	throw new UpstreamAuthorizationRefused(
		"resource_mismatch",
		`The protected resource metadata of ${serverUrl.host}${serverUrl.pathname} names a resource that is not an absolute http(s) URL without fragment (${claimed.slice(0, 200)}), so the gateway does not trust it.`,
	);
}

/**
 * Whether `issuer` is an authorization server the gateway stands in for, on
 * behalf of the served server at `serverUrl`: a document server whose API's
 * authorization server is known only from its document's flows (decision
 * 0105) publishes that server's metadata under its own address, through its
 * served fetcher. A served issuer of any other server is refused.
 */
export function servedIssuer(issuer: URL, serverUrl: URL): boolean {
	if (!isServedAddress(issuer.href)) return false;
	if (serverUrl.href.startsWith(`${issuer.href.replace(/\/$/, "")}/`)) return true;
	throw new UpstreamAuthorizationRefused(
		"resource_mismatch",
		`The server ${serverUrl.host}${serverUrl.pathname} names an authorization server the gateway serves for another server (${issuer.href.slice(0, 200)}), so the gateway does not use it.`,
	);
}
