import { z } from "zod";
import { randomToken, sha256Hex } from "../primitives/crypto.ts";

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
