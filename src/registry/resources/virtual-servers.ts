import { randomToken } from "../../primitives/crypto.ts";
import type { KvPublisher } from "../kv-publisher.ts";
import { KV_NAMES } from "../kv-records.ts";
import { quoteList } from "../quoted-names.ts";
import type { VirtualServerInput, VirtualServerRecord } from "../schemas.ts";
import type { RegistryTables } from "../tables/registry-tables.ts";

/** The RegistryDO's virtual servers: named lists of member servers. */
export class VirtualServersResource {
	constructor(
		private readonly tables: RegistryTables,
		private readonly publisher: KvPublisher,
	) {}

	/**
	 * Creates or replaces a virtual server. A replacement keeps its generation, so live sessions
	 * survive an edit of the member list; a new name gets a fresh one. Every member must be an
	 * existing server: a typo would otherwise create an endpoint that silently lacks tools.
	 * Nothing awaits before the write, so the checks and the write are atomic.
	 */
	async put(
		name: string,
		input: VirtualServerInput,
	): Promise<{ virtualServer: VirtualServerRecord; created: boolean } | { conflict: string } | { invalid: string }> {
		if (this.tables.servers.get(name)) {
			return { conflict: `'${name}' is already the name of a server; servers and virtual servers share names` };
		}
		const known = new Set(this.tables.servers.named(input.servers).map((server) => server.name));
		const unknown = input.servers.filter((server) => !known.has(server));
		if (unknown.length > 0) {
			const virtual = unknown.filter((member) => this.tables.virtualServers.get(member) !== null);
			const missing = unknown.filter((member) => !virtual.includes(member));
			const problems: string[] = [];
			if (missing.length > 0) problems.push(`no server named ${quoteList(missing, this.tables.servers.names())}`);
			if (virtual.length > 0) problems.push(`members must be servers, not virtual servers: ${quoteList(virtual)}`);
			return { invalid: `servers: ${problems.join("; ")}` };
		}
		const now = Date.now();
		const existing = this.tables.virtualServers.get(name);
		const virtualServer = this.tables.virtualServers.put({
			name,
			servers: input.servers,
			userPaths: input.userPaths ?? null,
			tools: input.tools ?? null,
			prompts: input.prompts ?? null,
			resources: input.resources ?? null,
			disclosure: input.disclosure,
			alwaysList: input.alwaysList,
			generation: existing?.generation ?? randomToken(12),
			createdAt: existing?.createdAt ?? now,
			updatedAt: now,
		});
		await this.publisher.publishWrite([KV_NAMES.endpoint(name)]);
		return { virtualServer, created: existing === null };
	}

	get(name: string): VirtualServerRecord | null {
		return this.tables.virtualServers.get(name);
	}

	list(): VirtualServerRecord[] {
		return this.tables.virtualServers.list();
	}

	delete(name: string): Promise<boolean> {
		return this.publisher.publishDelete(this.tables.virtualServers.delete(name), () => [KV_NAMES.endpoint(name)]);
	}
}
