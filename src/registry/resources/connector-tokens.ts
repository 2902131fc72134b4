import { connectorTokenDigest, mintConnectorToken } from "../connector-tokens.ts";
import type { KvPublisher } from "../kv-publisher.ts";
import { KV_NAMES } from "../kv-records.ts";
import type { RegistryTables } from "../tables/registry-tables.ts";

/** A connector token as operators see it: never the token, never its digest. */
export interface ListedConnectorToken {
	id: string;
	createdAt: number;
	lastSeenAt: number | null;
}

/** Why a server's tokens cannot be made or listed: it does not exist, or it is reached by URL. */
export type NoConnectorServer = { missing: true } | { notConnector: true };

/**
 * The RegistryDO's connector tokens: made here for one connector server,
 * stored as the digest of the token, published to KV as
 * `connector-token/<id>` (what the edge reads to admit a connector), and
 * deleted from both when revoked or when their server goes or takes a URL
 * (resources/servers.ts). `lastSeenAt` is written once per connection and
 * never published.
 */
export class ConnectorTokensResource {
	constructor(
		private readonly tables: RegistryTables,
		private readonly publisher: KvPublisher,
	) {}

	/** A new token for `server`, returned this once. The digest is computed before the checks: nothing awaits between them and the write. */
	async make(server: string): Promise<{ id: string; token: string; createdAt: number } | NoConnectorServer> {
		const { id, token } = mintConnectorToken();
		const digest = await connectorTokenDigest(token);
		const refused = this.refusal(server);
		if (refused) return refused;
		const createdAt = Date.now();
		this.tables.connectorTokens.insert({ id, server, digest, createdAt, lastSeenAt: null });
		await this.publisher.publishWrite([KV_NAMES.connectorToken(id)]);
		return { id, token, createdAt };
	}

	/** The tokens of `server`, oldest first. */
	list(server: string): { connectorTokens: ListedConnectorToken[] } | NoConnectorServer {
		const refused = this.refusal(server);
		if (refused) return refused;
		return {
			connectorTokens: this.tables.connectorTokens
				.of(server)
				.map(({ id, createdAt, lastSeenAt }) => ({ id, createdAt, lastSeenAt })),
		};
	}

	/** Revokes the token `id` of `server`; whether it had one. */
	revoke(server: string, id: string): Promise<boolean> {
		return this.publisher.publishDelete(this.tables.connectorTokens.delete(server, id), () => [
			KV_NAMES.connectorToken(id),
		]);
	}

	/** A connector came with the token `id` at `at` (once per connection); whether the token still exists. */
	seen(id: string, at: number): boolean {
		return this.tables.connectorTokens.seen(id, at);
	}

	private refusal(server: string): NoConnectorServer | null {
		const record = this.tables.servers.get(server);
		if (!record) return { missing: true };
		return record.connector ? null : { notConnector: true };
	}
}
