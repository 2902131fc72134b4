import type { ApiKeyRecord, VirtualServerRecord } from "./schemas.ts";

/**
 * Whether a key's list names `name`, a server or a virtual server (they share
 * one namespace); keys without a list name everything. A server a key names is
 * reached at `/mcp/<name>` and in `/mcp`; a virtual server it names, only at
 * its own endpoint.
 */
export function keyMayUseServer(key: Pick<ApiKeyRecord, "servers">, name: string): boolean {
	return key.servers === null || key.servers.includes(name);
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
 * Whether a key may use a virtual server: its user path must be allowed, and
 * the key must name the virtual server itself (a grant of that endpoint, whose
 * members it then reaches through it and nowhere else) or be allowed every
 * member. Either way a virtual server never widens what a key reaches.
 */
export function keyMayUseVirtualServer(
	key: Pick<ApiKeyRecord, "servers" | "userPath">,
	virtualServer: Pick<VirtualServerRecord, "name" | "servers" | "userPaths">,
): boolean {
	return userPathAllowed(key.userPath, virtualServer.userPaths) && membersDeniedTo(key, virtualServer).length === 0;
}

/** The members of a virtual server the key may not use through it: none when the key names it. */
export function membersDeniedTo(
	key: Pick<ApiKeyRecord, "servers">,
	virtualServer: Pick<VirtualServerRecord, "name" | "servers">,
): string[] {
	if (keyMayUseServer(key, virtualServer.name)) return [];
	return virtualServer.servers.filter((server) => !keyMayUseServer(key, server));
}
