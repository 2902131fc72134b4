import { z } from "zod";
import { randomToken, secretsEqual, sha256Hex } from "../primitives/crypto.ts";
import { KV_NAMES } from "./kv-records.ts";

/*
 * Connector tokens: what a connector (`mcpgw connect`) presents when it dials
 * the gateway for one server. `mcpgwc1_<id>.<256 random bits>`: the id names
 * the token's record (so the edge reads one KV record, not a list), the
 * random part is the secret. The registry keeps only the SHA-256 of the whole
 * token; the token is shown once, when it is made.
 */

const PREFIX = "mcpgwc1_";
const ID_PATTERN = /^ct_[A-Za-z0-9_-]{16}$/;
const SECRET_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** A connector token's id: `ct_` and 16 URL-safe characters. */
export const ConnectorTokenIdSchema = z.string().regex(ID_PATTERN, "a connector token id is ct_ and 16 characters");

/** What the edge reads to admit a connector: KV `connector-token/<id>`. */
export const StoredConnectorTokenSchema = z.strictObject({
	id: ConnectorTokenIdSchema,
	/** The one server this token serves. */
	server: z.string(),
	/** SHA-256 (hex) of the whole token. */
	digest: z.string().regex(/^[0-9a-f]{64}$/),
	createdAt: z.number().int(),
});
export type StoredConnectorToken = z.infer<typeof StoredConnectorTokenSchema>;

/** A new token and its id; the token itself is returned to the operator once and never stored. */
export function mintConnectorToken(): { id: string; token: string } {
	const id = `ct_${randomToken(12)}`;
	return { id, token: `${PREFIX}${id}.${randomToken(32)}` };
}

/** The id a token claims, or null when it is not shaped like a connector token (checked before any read). */
export function connectorTokenId(token: string): string | null {
	if (!token.startsWith(PREFIX)) return null;
	const rest = token.slice(PREFIX.length);
	const dot = rest.indexOf(".");
	if (dot < 0) return null;
	const id = rest.slice(0, dot);
	const secret = rest.slice(dot + 1);
	return ID_PATTERN.test(id) && SECRET_PATTERN.test(secret) ? id : null;
}

/** What the registry stores of a token. */
export function connectorTokenDigest(token: string): Promise<string> {
	return sha256Hex(token);
}

/** The origin of the addresses that stand for connector servers: `.invalid` can never resolve (RFC 2606). */
export const CONNECTOR_ORIGIN = "https://connector.invalid";

/**
 * The address a server reached through connectors is given wherever an
 * upstream address is expected; the upstream fetch sends what is addressed to
 * it to the server's ConnectorDO instead of the network.
 */
export function connectorUrl(server: string): string {
	return `${CONNECTOR_ORIGIN}/${encodeURIComponent(server)}/mcp`;
}

/** Where RFC 9728 puts a protected resource's metadata: this, then the resource's path (path insertion). */
export const RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource";

/**
 * The address of a connector server's protected resource metadata: RFC 9728's
 * path insertion on `connectorUrl(server)`. The connector answers it with its
 * upstream's metadata, and names it in its upstream's 401 challenges.
 */
export function connectorMetadataUrl(server: string): string {
	return `${CONNECTOR_ORIGIN}${RESOURCE_METADATA_PATH}/${encodeURIComponent(server)}/mcp`;
}

/** What a connector address names: a server's MCP endpoint, or its protected resource metadata. */
export interface ConnectorAddress {
	server: string;
	part: "mcp" | "resource-metadata";
}

/** What an address under CONNECTOR_ORIGIN names, or null for any other address. */
export function connectorAddressOf(url: string): ConnectorAddress | null {
	if (!url.startsWith(`${CONNECTOR_ORIGIN}/`)) return null;
	const path = url.slice(CONNECTOR_ORIGIN.length).split(/[?#]/)[0] ?? "";
	if (path.startsWith(`${RESOURCE_METADATA_PATH}/`)) {
		const name = path.slice(RESOURCE_METADATA_PATH.length + 1).split("/")[0];
		return name ? { server: decodeURIComponent(name), part: "resource-metadata" } : null;
	}
	// The root metadata (and any other well-known document) belongs to no one server.
	if (path.startsWith("/.well-known/")) return null;
	const name = path.slice(1).split("/")[0];
	return name ? { server: decodeURIComponent(name), part: "mcp" } : null;
}

/** The server a connector address stands for (its MCP endpoint or its metadata), or null for any other address. */
export function connectorServerOf(url: string): string | null {
	return connectorAddressOf(url)?.server ?? null;
}

/**
 * The stored token `token` names, when it is that token and serves `server`;
 * null otherwise (unknown, revoked, another server's, or not this secret).
 * One KV read; the comparison of digests takes the same time however they differ.
 */
export async function admittedConnectorToken(
	kv: Pick<KVNamespace, "get">,
	token: string,
	server: string,
): Promise<StoredConnectorToken | null> {
	const id = connectorTokenId(token);
	if (!id) return null;
	const value: unknown = await kv.get(KV_NAMES.connectorToken(id), "json");
	if (value === null) return null;
	const stored = StoredConnectorTokenSchema.parse(value);
	if (stored.server !== server) return null;
	return (await secretsEqual(await connectorTokenDigest(token), stored.digest)) ? stored : null;
}
