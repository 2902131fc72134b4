import { stableJson } from "../../mcp/stable-json.ts";
import { randomToken, sha256Hex } from "../../primitives/crypto.ts";
import { configDigest } from "../config-digest.ts";
import { connectorUrl } from "../connector-tokens.ts";
import type { KvPublisher } from "../kv-publisher.ts";
import { KV_NAMES } from "../kv-records.ts";
import { type CompiledApi, CompiledApiSchema, openApiUrl } from "../openapi-records.ts";
import type { OpenApiRecord, ServerInput, ServerRecord } from "../schemas.ts";
import type { ApiRow } from "../tables/openapi-apis-table.ts";
import type { RegistryTables } from "../tables/registry-tables.ts";

/** What the edge made of a server's OpenAPI document: the API compiled, and the document's text when given inline. */
export interface CompiledDocument {
	api: CompiledApi;
	/** The document as the operator gave it inline, kept to export it again; null when fetched from its URL. */
	document: string | null;
}

/** The RegistryDO's servers: upstream servers with their generation and config digest. */
export class ServersResource {
	constructor(
		private readonly tables: RegistryTables,
		private readonly publisher: KvPublisher,
	) {}

	/**
	 * Creates or replaces a server. A replacement keeps its generation; a new name gets a fresh one.
	 * Refuses a name a virtual server holds, since both are addressed as `/mcp/:name`. Nothing
	 * after the digest awaits, so no other call can run between the check and the write.
	 * A connector server switched to a URL loses its connector tokens: `droppedTokens` names
	 * them, for the caller to drop their live connectors. A server made from an OpenAPI document
	 * comes with its API compiled by the edge (`compiled`), which is kept and published beside it.
	 */
	async put(
		name: string,
		input: ServerInput,
		compiled: CompiledDocument | null = null,
	): Promise<{ server: ServerRecord; created: boolean; droppedTokens: string[] } | { conflict: string }> {
		const openapi = await openApiOf(input, compiled);
		// Hashed before the checks: nothing below awaits, so checks and write stay atomic.
		const config = {
			url: addressOf(name, input, openapi?.record ?? null),
			headers: input.headers,
			timeoutSeconds: input.timeoutSeconds ?? null,
			protocol: input.protocol,
			auth: input.auth,
			tools: input.tools ?? null,
			prompts: input.prompts ?? null,
			resources: input.resources ?? null,
			pinning: input.pinning,
		};
		const digest = await configDigest(config);
		if (this.tables.virtualServers.get(name)) {
			return { conflict: `'${name}' is already the name of a virtual server; servers and virtual servers share names` };
		}
		const now = Date.now();
		const existing = this.tables.servers.get(name);
		const server = this.tables.servers.put({
			name,
			...config,
			connector: input.connector ? {} : null,
			openapi: openapi?.record ?? null,
			generation: existing?.generation ?? randomToken(12),
			configDigest: digest,
			// Not part of the config digest: capturing arguments changes no upstream session.
			captureArguments: input.captureArguments,
			createdAt: existing?.createdAt ?? now,
			updatedAt: now,
		});
		const droppedTokens = server.connector ? [] : this.tables.connectorTokens.deleteOf(name);
		if (openapi) this.tables.openApiApis.put({ server: name, ...openapi.row });
		const hadApi = openapi === null && this.tables.openApiApis.delete(name);
		await this.publisher.publishWrite([
			...this.namesOf(name),
			...droppedTokens.map(KV_NAMES.connectorToken),
			...(openapi !== null || hadApi ? [KV_NAMES.openApi(name)] : []),
		]);
		return { server, created: existing === null, droppedTokens };
	}

	get(name: string): ServerRecord | null {
		return this.tables.servers.get(name);
	}

	list(): ServerRecord[] {
		return this.tables.servers.list();
	}

	/**
	 * Deletes a server, its pins and its connector tokens: a server created again under the name
	 * starts with none. The ids of the tokens it took, for the caller to drop their live
	 * connectors; null when no server has the name.
	 */
	async delete(name: string): Promise<{ droppedTokens: string[] } | null> {
		const deleted = this.tables.servers.delete(name);
		if (!deleted) return null;
		this.tables.pins.delete(name);
		this.tables.observedTools.delete(name);
		const droppedTokens = this.tables.connectorTokens.deleteOf(name);
		const hadApi = this.tables.openApiApis.delete(name);
		await this.publisher.publishWrite([
			...this.namesOf(name),
			KV_NAMES.pins(name),
			...droppedTokens.map(KV_NAMES.connectorToken),
			...(hadApi ? [KV_NAMES.openApi(name)] : []),
		]);
		return { droppedTokens };
	}

	/** KV names a change of server `name` affects: its endpoint, the server list, virtual servers using it. */
	private namesOf(name: string): string[] {
		const virtual = this.tables.virtualServers.withMember(name).map((member) => KV_NAMES.endpoint(member));
		return [KV_NAMES.endpoint(name), KV_NAMES.servers, ...virtual];
	}
}

/**
 * Where a server's requests go: its URL; for a server reached through
 * connectors its connector address; for one made from a document the address
 * of its compiled API. Every path that reaches an upstream by address then
 * uses it unchanged (the upstream fetch serves the last two). The one place a
 * server gets an address.
 */
function addressOf(name: string, input: ServerInput, openapi: OpenApiRecord | null): string {
	if (input.connector) return connectorUrl(name);
	if (openapi) return openApiUrl(name, openapi.digest);
	if (input.url === undefined) throw new Error(`registry: server ${name} has neither url, connector nor openapi`);
	return input.url;
}

/**
 * A document server's record and row: the compiled API parsed again (it
 * crossed an RPC boundary), and the digest of what its calls depend on, the
 * API and the credentials' references, which its address carries.
 */
async function openApiOf(
	input: ServerInput,
	compiled: CompiledDocument | null,
): Promise<{ record: OpenApiRecord; row: Omit<ApiRow, "server"> } | null> {
	if (!input.openapi) return null;
	if (!compiled) throw new Error("registry: a server made from a document needs its compiled API");
	const api = CompiledApiSchema.parse(compiled.api);
	const credentials = input.openapi.credentials ?? {};
	const personal = input.auth.type !== "operator";
	const digest = (await sha256Hex(stableJson({ api, credentials, personal }))).slice(0, 32);
	return {
		record: {
			url: input.openapi.url ?? null,
			baseUrl: input.openapi.baseUrl ?? null,
			credentials,
			digest,
			tools: api.operations.length,
		},
		row: { digest, api, credentials, personal, document: compiled.document },
	};
}
