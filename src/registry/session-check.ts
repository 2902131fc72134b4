import { keyMayUseServer, membersDeniedTo, userPathAllowed } from "./access.ts";
import { parsePrincipalId } from "./access-rules.ts";
import { quoteList } from "./quoted-names.ts";
import type { ApiKeyRecord, ResolvedEndpoint, ServerRecord, SessionCheckInput, SessionCheckResult } from "./schemas.ts";

/** What the registry holds now that a session's check needs, however it was read (SQLite or KV). */
export interface CheckSnapshot {
	key: ApiKeyRecord | null;
	/** The endpoint by name, for `/mcp/:name` sessions; ignored for the aggregate `/mcp`. */
	endpoint: ResolvedEndpoint | null;
	/** Current records of the session's member servers (those that still exist). */
	servers: ReadonlyMap<string, ServerRecord>;
}

/**
 * Whether a live session may go on: its key still exists with the same user
 * path; its endpoint is the same incarnation (generation) and still open to
 * the key; every member is still the incarnation it opened with and allowed
 * to the key (by name, or as a current member of the virtual server the key
 * names). Members whose configuration changed are returned as they are now.
 */
export function checkSessionAgainst(snapshot: CheckSnapshot, input: SessionCheckInput): SessionCheckResult {
	const key = snapshot.key;
	if (!key) {
		const principal = parsePrincipalId(input.keyId);
		return {
			ok: false,
			reason: principal
				? `access rule '${principal.rule}' no longer grants this identity (it was removed, or its match changed)`
				: "the API key was revoked",
		};
	}
	if (key.userPath !== input.userPath) {
		return { ok: false, reason: "the API key's user path no longer matches the session's" };
	}
	const endpoint = input.endpoint;
	const current = snapshot.endpoint;
	// A key that names the virtual server reaches its members through it, while they are its members.
	const throughVirtual =
		endpoint.kind === "virtual" && current?.kind === "virtual" && keyMayUseServer(key, endpoint.name)
			? new Set(current.virtualServer.servers)
			: null;
	const changed: ServerRecord[] = [];
	for (const member of input.members ?? []) {
		const server = snapshot.servers.get(member.name);
		if (server?.generation !== member.generation) {
			return { ok: false, reason: `member server '${member.name}' was deleted or recreated` };
		}
		if (!keyMayUseServer(key, member.name) && !throughVirtual?.has(member.name)) {
			return { ok: false, reason: `the API key may not use member server '${member.name}'` };
		}
		if (server.configDigest !== member.configDigest) changed.push(server);
	}
	const ok = { ok: true as const, changed };
	if (endpoint.kind === "aggregate") return ok;
	if (endpoint.kind === "server") {
		if (current?.kind !== "server" || current.server.generation !== endpoint.generation) {
			return { ok: false, reason: `server '${endpoint.name}' was deleted or recreated` };
		}
		if (!keyMayUseServer(key, endpoint.name)) {
			return { ok: false, reason: `the API key may not use server '${endpoint.name}'` };
		}
		return ok;
	}
	if (current?.kind !== "virtual" || current.virtualServer.generation !== endpoint.generation) {
		return { ok: false, reason: `virtual server '${endpoint.name}' was deleted or recreated` };
	}
	if (!userPathAllowed(key.userPath, current.virtualServer.userPaths)) {
		return { ok: false, reason: `user path '${key.userPath}' may not use virtual server '${endpoint.name}'` };
	}
	const denied = membersDeniedTo(key, current.virtualServer);
	if (denied.length > 0) {
		return {
			ok: false,
			reason: `the API key may not use ${quoteList(denied)}, members of virtual server '${endpoint.name}'`,
		};
	}
	return ok;
}
