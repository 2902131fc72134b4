import type { ResolvedEndpoint } from "../schemas.ts";
import type { ServersTable } from "./servers-table.ts";
import type { VirtualServersTable } from "./virtual-servers-table.ts";

/**
 * The names `/mcp/:name` resolves, which servers and virtual servers share:
 * statements over both tables. No table of its own, so no schema.
 */
export class EndpointsTable {
	constructor(
		private readonly sql: SqlStorage,
		private readonly servers: ServersTable,
		private readonly virtualServers: VirtualServersTable,
	) {}

	/** What `/mcp/:name` refers to, with a virtual server's existing members. */
	resolve(name: string): ResolvedEndpoint | null {
		const server = this.servers.get(name);
		if (server) return { kind: "server", server };
		const virtualServer = this.virtualServers.get(name);
		if (!virtualServer) return null;
		return { kind: "virtual", virtualServer, members: this.servers.named(virtualServer.servers) };
	}

	/** Every name a server or a virtual server holds. */
	names(): string[] {
		return this.sql
			.exec<{ name: string }>("SELECT name FROM servers UNION SELECT name FROM virtual_servers")
			.toArray()
			.map((row) => row.name);
	}

	/** Those of `names` that are a server or a virtual server. */
	existing(names: readonly string[]): Set<string> {
		return new Set(
			this.sql
				.exec<{ name: string }>(
					`SELECT name FROM servers WHERE name IN (SELECT value FROM json_each(?))
					 UNION SELECT name FROM virtual_servers WHERE name IN (SELECT value FROM json_each(?))`,
					JSON.stringify(names),
					JSON.stringify(names),
				)
				.toArray()
				.map((row) => row.name),
		);
	}
}
