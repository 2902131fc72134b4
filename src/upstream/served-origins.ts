import type { FetchLike } from "./upstream-fetch.ts";

/*
 * The one fetch seam every upstream request goes through. Most upstreams are
 * URLs on the network; some addresses stand for upstreams the gateway reaches
 * another way (a server served by connectors, `https://connector.invalid/...`).
 * Those are served here by a fetcher the Worker's entry registers at start-up,
 * so this layer routes them without knowing what serves them (the connectors
 * layer sits above it). A URL server pays one prefix check per served origin.
 */

const served: Array<{ prefix: string; fetcher: FetchLike }> = [];

/**
 * Sends the requests addressed under `origin` to `fetcher` instead of the network.
 * Registering an origin again replaces its fetcher (a module evaluated twice).
 *
 * @example
 * serveOrigin(CONNECTOR_ORIGIN, connectorFetch);
 */
export function serveOrigin(origin: string, fetcher: FetchLike): void {
	const prefix = `${origin}/`;
	const existing = served.find((entry) => entry.prefix === prefix);
	if (existing) existing.fetcher = fetcher;
	else served.push({ prefix, fetcher });
}

/** The default fetcher of every upstream request: a served origin's fetcher, else the network. */
export const upstreamFetch: FetchLike = (input, init) => {
	for (const entry of served) if (input.startsWith(entry.prefix)) return entry.fetcher(input, init);
	return fetch(input, init);
};

/**
 * Whether `url` is under a served origin: an address the gateway itself gave a
 * server it reaches another way. What such a server publishes (its protected
 * resource metadata among it) comes through its served fetcher, from the
 * connector or document the operator set up for that server alone.
 */
export function isServedAddress(url: string): boolean {
	return served.some((entry) => url.startsWith(entry.prefix));
}
