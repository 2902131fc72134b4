import { randomToken } from "../../primitives/crypto.ts";
import { configDigest } from "../config-digest.ts";
import { connectorUrl } from "../connector-tokens.ts";
import type { KvPublisher } from "../kv-publisher.ts";
import { KV_NAMES } from "../kv-records.ts";
import type { ServerInput, ServerRecord } from "../schemas.ts";
import type { RegistryTables } from "../tables/registry-tables.ts";

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
	 * them, for the caller to drop their live connectors.
	 */
	async put(
		name: string,
		input: ServerInput,
	): Promise<{ server: ServerRecord; created: boolean; droppedTokens: string[] } | { conflict: string }> {
		// Hashed before the checks: nothing below awaits, so checks and write stay atomic.
		const config = {
			url: addressOf(name, input),
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
			generation: existing?.generation ?? randomToken(12),
			configDigest: digest,
			// Not part of the config digest: capturing arguments changes no upstream session.
			captureArguments: input.captureArguments,
			createdAt: existing?.createdAt ?? now,
			updatedAt: now,
		});
		const droppedTokens = server.connector ? [] : this.tables.connectorTokens.deleteOf(name);
		await this.publisher.publishWrite([...this.namesOf(name), ...droppedTokens.map(KV_NAMES.connectorToken)]);
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
		await this.publisher.publishWrite([
			...this.namesOf(name),
			KV_NAMES.pins(name),
			...droppedTokens.map(KV_NAMES.connectorToken),
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
 * Where a server's requests go: its URL, or for a server reached through
 * connectors its connector address, which every path that reaches an upstream
 * by address then uses unchanged (the upstream fetch sends it to the server's
 * ConnectorDO). The one place a connector server gets an address.
 */
function addressOf(name: string, input: ServerInput): string {
	if (input.connector) return connectorUrl(name);
	if (input.url === undefined) throw new Error(`registry: server ${name} has neither url nor connector`);
	return input.url;
}
