import type { ApiKeyRecord, VirtualServerRecord } from "./schemas.ts";

/** Whether a key may use a server: keys without a server list may use all. */
export function keyMayUseServer(key: Pick<ApiKeyRecord, "servers">, server: string): boolean {
	return key.servers === null || key.servers.includes(server);
}

/**
 * Whether a user path is among the allowed ones: equal to an entry or below it,
 * segment by segment (`/team` allows `/team/a` but not `/teamx`). Null allows all.
 */
export function userPathAllowed(userPath: string, allowed: string[] | null): boolean {
	if (allowed === null) return true;
	return allowed.some((entry) => {
		// "/" already ends in a separator; appending another would match nothing.
		const prefix = entry.endsWith("/") ? entry : `${entry}/`;
		return userPath === entry || userPath.startsWith(prefix);
	});
}

/**
 * Whether a key may use a virtual server: its user path must be allowed, and it
 * must be allowed every member, so a virtual server never widens what a key reaches.
 */
export function keyMayUseVirtualServer(
	key: Pick<ApiKeyRecord, "servers" | "userPath">,
	virtualServer: Pick<VirtualServerRecord, "servers" | "userPaths">,
): boolean {
	return (
		userPathAllowed(key.userPath, virtualServer.userPaths) &&
		virtualServer.servers.every((server) => keyMayUseServer(key, server))
	);
}
