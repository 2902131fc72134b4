import type { ConnectionRecord } from "../schemas.ts";
import type { RegistryTables } from "../tables/registry-tables.ts";

/**
 * The RegistryDO's connections: a person's (or key's) connection to an `oauth`
 * server, recorded for the operators' listing and for cutting off: written
 * when one is made or removed, never on a call (the tokens live in the vault;
 * this is who, not what). Published nowhere.
 */
export class ConnectionsResource {
	constructor(private readonly tables: RegistryTables) {}

	record(connection: Omit<ConnectionRecord, "id">): ConnectionRecord {
		return this.tables.connections.put({ ...connection, id: `${connection.server} ${connection.vault}` });
	}

	forget(server: string, vault: string): boolean {
		return this.tables.connections.delete(`${server} ${vault}`);
	}

	/** The connections to a server, of a vault, or under an access rule; none when the query names nothing. */
	list(query: { server?: string; vault?: string; rule?: string }): ConnectionRecord[] {
		if (query.server !== undefined) return this.tables.connections.to(query.server);
		if (query.vault !== undefined) return this.tables.connections.of(query.vault);
		if (query.rule !== undefined) return this.tables.connections.under(query.rule);
		return [];
	}
}
