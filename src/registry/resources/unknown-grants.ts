import { quoteList } from "../quoted-names.ts";
import type { EndpointsTable } from "../tables/endpoints-table.ts";

/**
 * Why a key's or rule's `servers` cannot be granted: the names that are neither a server nor
 * a virtual server, in a sentence; null when every name exists (or there is no list).
 */
export function unknownGrants(endpoints: EndpointsTable, names: readonly string[] | undefined): string | null {
	if (!names || names.length === 0) return null;
	const known = endpoints.existing(names);
	const unknown = [...new Set(names.filter((name) => !known.has(name)))];
	if (unknown.length === 0) return null;
	return `servers: no server or virtual server named ${quoteList(unknown, endpoints.names())}`;
}
