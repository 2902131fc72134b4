import { randomToken } from "../../primitives/crypto.ts";
import { configDigest } from "../config-digest.ts";
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
	 */
	async put(
		name: string,
		input: ServerInput,
	): Promise<{ server: ServerRecord; created: boolean } | { conflict: string }> {
		// Hashed before the checks: nothing below awaits, so checks and write stay atomic.
		const config = {
			url: input.url,
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
			generation: existing?.generation ?? randomToken(12),
			configDigest: digest,
			// Not part of the config digest: capturing arguments changes no upstream session.
			captureArguments: input.captureArguments,
			createdAt: existing?.createdAt ?? now,
			updatedAt: now,
		});
		await this.publisher.publishWrite(this.namesOf(name));
		return { server, created: existing === null };
	}

	get(name: string): ServerRecord | null {
		return this.tables.servers.get(name);
	}

	list(): ServerRecord[] {
		return this.tables.servers.list();
	}

	/** Deletes a server and its pins: a server created again under the name starts with none. */
	delete(name: string): Promise<boolean> {
		const deleted = this.tables.servers.delete(name);
		if (deleted) {
			this.tables.pins.delete(name);
			this.tables.observedTools.delete(name);
		}
		return this.publisher.publishDelete(deleted, () => [...this.namesOf(name), KV_NAMES.pins(name)]);
	}

	/** KV names a change of server `name` affects: its endpoint, the server list, virtual servers using it. */
	private namesOf(name: string): string[] {
		const virtual = this.tables.virtualServers.withMember(name).map((member) => KV_NAMES.endpoint(member));
		return [KV_NAMES.endpoint(name), KV_NAMES.servers, ...virtual];
	}
}
