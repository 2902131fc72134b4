import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { shapeList } from "../../governance/decision.ts";
import type { ListItems, ListKind } from "../../mcp/list-kinds.ts";
import type { UpstreamPool } from "../upstream-pool.ts";
import type { ListSource } from "./catalog.ts";
import type { MemberSessions } from "./member-sessions.ts";

/**
 * Where the catalog's lists come from: a member's whole list, fetched over
 * its upstream session, shaped as the operator offers it (what the session
 * keeps, routes by and compares, as callers see it; see decision.ts). Each
 * member's tools as its upstream last listed them are kept beside, for
 * pinning (what changed upstream, whatever the shaping made of it).
 */
export class MemberLists implements ListSource {
	/** Each member's tools as its upstream last listed them (before shaping). */
	private readonly upstreamTools = new Map<string, Tool[]>();

	constructor(
		private readonly members: MemberSessions,
		private readonly pool: UpstreamPool,
	) {}

	/**
	 * Fetches a whole list from a member (a member that does not offer it has
	 * an empty one). Notifications seen on the way (list_changed) go to the
	 * members' listener, which invalidates and refreshes.
	 */
	async fetchList<K extends ListKind>(server: string, kind: K): Promise<Array<ListItems[K]>> {
		const member = this.members.member(server);
		const items = await this.pool
			.connection(member)
			.listOffered(await this.members.session(member), kind, (notification) =>
				this.members.noticed(server, notification),
			);
		if (kind === "tools") this.upstreamTools.set(server, items as Tool[]);
		return shapeList(member, kind, items);
	}

	/** The member's tools as its upstream last listed them (none yet: empty). */
	upstreamToolsOf(server: string): Tool[] {
		return this.upstreamTools.get(server) ?? [];
	}
}
