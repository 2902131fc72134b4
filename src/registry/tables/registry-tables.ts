import { AccessRulesTable } from "./access-rules-table.ts";
import { ConnectionsTable } from "./connections-table.ts";
import { ConnectorTokensTable } from "./connector-tokens-table.ts";
import { EndpointsTable } from "./endpoints-table.ts";
import { GuardsTable } from "./guards-table.ts";
import { KeysTable } from "./keys-table.ts";
import { MetaTable } from "./meta-table.ts";
import { createTables } from "./migrations.ts";
import { ObservedToolsTable } from "./observed-tools-table.ts";
import { OpenApiApisTable } from "./openapi-apis-table.ts";
import { OutboxTable } from "./outbox-table.ts";
import { PinsTable } from "./pins-table.ts";
import { PoliciesTable } from "./policies-table.ts";
import { ServersTable } from "./servers-table.ts";
import { VirtualServersTable } from "./virtual-servers-table.ts";

/**
 * The registry's SQLite tables, one module per resource, each with its own
 * statements (read and written synchronously: nothing here awaits). A row is
 * its record (schemas.ts) field by field (record-rows.ts).
 */
export interface RegistryTables {
	readonly servers: ServersTable;
	readonly virtualServers: VirtualServersTable;
	/** The names servers and virtual servers share. */
	readonly endpoints: EndpointsTable;
	readonly keys: KeysTable;
	readonly accessRules: AccessRulesTable;
	readonly policies: PoliciesTable;
	/** Content guards (src/governance/guards/). */
	readonly guards: GuardsTable;
	readonly pins: PinsTable;
	readonly observedTools: ObservedToolsTable;
	readonly connections: ConnectionsTable;
	/** Connector tokens, as digests, each for one server. */
	readonly connectorTokens: ConnectorTokensTable;
	/** The compiled APIs of servers made from OpenAPI documents. */
	readonly openApiApis: OpenApiApisTable;
	/** What waits to be written through to KV, and the format it was last written in. */
	readonly outbox: OutboxTable;
	readonly meta: MetaTable;
}

/** The records named by their operators, by the words the admin API uses for them. */
export type NamedKind = keyof Pick<
	RegistryTables,
	"servers" | "virtualServers" | "accessRules" | "policies" | "guards"
>;

/** The tables of the registry in `sql`, created where missing (older ones are migrated by `migrateTables`). */
export function openRegistryTables(sql: SqlStorage): RegistryTables {
	createTables(sql);
	const servers = new ServersTable(sql);
	const virtualServers = new VirtualServersTable(sql);
	return {
		servers,
		virtualServers,
		endpoints: new EndpointsTable(sql, servers, virtualServers),
		keys: new KeysTable(sql),
		accessRules: new AccessRulesTable(sql),
		policies: new PoliciesTable(sql),
		guards: new GuardsTable(sql),
		pins: new PinsTable(sql),
		observedTools: new ObservedToolsTable(sql),
		connections: new ConnectionsTable(sql),
		connectorTokens: new ConnectorTokensTable(sql),
		openApiApis: new OpenApiApisTable(sql),
		outbox: new OutboxTable(sql),
		meta: new MetaTable(sql),
	};
}
