import { settingsFrom } from "../../config.ts";
import type { Env } from "../../env.ts";
import { GatewayError } from "../../mcp/gateway-error.ts";
import { sha256Hex } from "../../primitives/crypto.ts";
import { mintApiKey, newKeyId } from "../api-key.ts";
import type { KvPublisher } from "../kv-publisher.ts";
import { KV_NAMES, type StoredKey } from "../kv-records.ts";
import type { ApiKeyRecord, KeyInput } from "../schemas.ts";
import type { RegistryTables } from "../tables/registry-tables.ts";
import { unknownGrants } from "./unknown-grants.ts";

/** The RegistryDO's API keys: issued here, stored as a digest, revoked by id. */
export class KeysResource {
	constructor(
		private readonly tables: RegistryTables,
		private readonly publisher: KvPublisher,
		private readonly env: Env,
	) {}

	/**
	 * Creates a key and returns its secret, which is never stored or shown again. Every name in
	 * its `servers` must be a server or a virtual server now: a typo would otherwise make a key
	 * that reaches nothing. Nothing awaits between that check and the write.
	 */
	async create(input: KeyInput): Promise<{ record: ApiKeyRecord; key: string } | { invalid: string }> {
		const secret = settingsFrom(this.env).keySecret;
		if (!secret) {
			throw new GatewayError(
				"misconfigured",
				"The gateway is misconfigured: the KEY_SECRET secret is not set (at least 32 characters), so no API key can be issued.",
			);
		}
		const id = newKeyId();
		const key = await mintApiKey(secret, id);
		const digest = await sha256Hex(key);
		const invalid = unknownGrants(this.tables.endpoints, input.servers);
		if (invalid) return { invalid };
		const record: ApiKeyRecord = {
			id,
			name: input.name ?? null,
			userPath: input.userPath,
			servers: input.servers ?? null,
			maxSessions: input.maxSessions ?? null,
			rateClass: input.rateClass,
			disclosure: input.disclosure,
			alwaysList: input.alwaysList,
			format: "self-verifying",
			createdAt: Date.now(),
		};
		this.tables.keys.insert({ ...record, digest });
		await this.publisher.publishWrite([KV_NAMES.key(id)]);
		return { record, key };
	}

	list(): ApiKeyRecord[] {
		return this.tables.keys.list();
	}

	revoke(id: string): Promise<boolean> {
		return this.publisher.publishDelete(this.tables.keys.delete(id), () => [KV_NAMES.key(id)]);
	}

	/** A key's stored record with its digest (what is published as `key/<id>`); null if none. */
	stored(id: string): StoredKey | null {
		return this.tables.keys.stored(id);
	}
}
