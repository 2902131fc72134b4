import { z } from "zod";
import { AccessRuleRecordSchema } from "./access-rules.ts";
import { GuardRecordSchema } from "./guard-records.ts";
import { PolicyRecordSchema } from "./policy-records.ts";
import { ApiKeyRecordSchema, ServerRecordSchema } from "./schemas.ts";
import type { RegistryTables } from "./tables/registry-tables.ts";

/**
 * What the registry publishes to Workers KV, the read path of the edge and
 * the sessions. Every admin write commits in the RegistryDO first and is then
 * written through here (never ahead of it). Values are parsed with the
 * records' schemas (schemas.ts) when read: a record that does not parse counts as unreadable.
 *
 * - `key/<id>`: an API key's record with the SHA-256 of the key.
 * - `endpoint/<name>`: what `/mcp/<name>` is: a server, or a virtual server with its existing members.
 * - `servers`: every server, for the aggregate `/mcp`.
 * - `access-rules`: every access rule, in the order they are tried (OAuth sign-ins).
 * - `policies`: every tool policy, in the order they are evaluated (governance compiles them).
 * - `guards`: every content guard, by name (governance scans with them); absent until the first is made.
 * - `pins/<server>`: a server's approved tool definitions (tool-pins.ts); absent until first recorded.
 * - `connector-token/<id>`: a connector token's server and digest (connector-tokens.ts), what admits a connector.
 * - `openapi/<server>`: a server's compiled API (tables/openapi-apis-table.ts), what its tools are answered from.
 */
export const KV_NAMES = {
	key: (id: string) => `key/${id}`,
	endpoint: (name: string) => `endpoint/${name}`,
	servers: "servers",
	rules: "access-rules",
	policies: "policies",
	guards: "guards",
	pins: (server: string) => `pins/${server}`,
	connectorToken: (id: string) => `connector-token/${id}`,
	openApi: (server: string) => `openapi/${server}`,
} as const;

/**
 * Bumped when the published records change shape: a registry that finds an
 * older format recorded republishes everything at start. 2: servers carry `protocol`.
 * 3: access rules are published. 4: keys and access rules carry `rateClass`, and tool policies are published.
 * 5: content guards are published.
 */
export const KV_FORMAT = 5;

/** An API key's record as published: with the SHA-256 (hex) of the whole key, which itself is never stored. */
export const StoredKeySchema = ApiKeyRecordSchema.extend({ digest: z.string() });
export type StoredKey = z.infer<typeof StoredKeySchema>;

export const ServerListSchema = z.array(ServerRecordSchema);

export const AccessRuleListSchema = z.array(AccessRuleRecordSchema);

export const PolicyListSchema = z.array(PolicyRecordSchema);

export const GuardListSchema = z.array(GuardRecordSchema);

/** Every KV name the registry publishes now. */
export function publishedNames(tables: RegistryTables): string[] {
	const endpoints = tables.endpoints.names().map((name) => KV_NAMES.endpoint(name));
	const keys = tables.keys.ids().map((id) => KV_NAMES.key(id));
	const pins = tables.pins.servers().map((server) => KV_NAMES.pins(server));
	const connectorTokens = tables.connectorTokens.ids().map((id) => KV_NAMES.connectorToken(id));
	const apis = tables.openApiApis.servers().map((server) => KV_NAMES.openApi(server));
	return [
		KV_NAMES.servers,
		KV_NAMES.rules,
		KV_NAMES.policies,
		KV_NAMES.guards,
		...endpoints,
		...keys,
		...pins,
		...connectorTokens,
		...apis,
	];
}

/** What a KV name holds according to the registry of record now; null: it should not exist. */
export function publishedValue(tables: RegistryTables, name: string): unknown {
	if (name === KV_NAMES.rules) return tables.accessRules.list();
	if (name === KV_NAMES.policies) return tables.policies.list();
	if (name === KV_NAMES.guards) return tables.guards.list();
	if (name === KV_NAMES.servers) return tables.servers.list();
	const [kind, ...rest] = name.split("/");
	const id = rest.join("/");
	if (kind === "key") return tables.keys.stored(id);
	if (kind === "endpoint") return tables.endpoints.resolve(id);
	if (kind === "pins") return tables.pins.of(id);
	if (kind === "connector-token") return tables.connectorTokens.stored(id);
	if (kind === "openapi") return tables.openApiApis.published(id);
	throw new Error(`registry: unknown KV name ${name}`);
}
