import type { Identity } from "../registry/access-rules.ts";
import { parsePrincipalId } from "../registry/access-rules.ts";

/**
 * Who an upstream request is made for: the principal a request authenticated
 * as (an API key, or a person under an access rule), with what the
 * credentials of a server's `auth` mode need to know of them. Built by the
 * edge from the authenticated request; a session keeps it in its binding
 * (never the client's token).
 */
export interface Caller {
	/** The key id, or the principal id `oauth~<rule>~<generation>~<user>[~<grant>]`. */
	principalId: string;
	/**
	 * The name of the caller's vault object (`TokenVaultDO`): `person:<userId>`
	 * for a person (their user id is a digest of issuer and subject, so one
	 * person has one vault whichever rule or sign-in they came by), `key:<id>`
	 * for an API key.
	 */
	vault: string;
	/** The person's identity; null for an API key. */
	identity: Identity | null;
	/** The API key's id; null for a person. */
	keyId: string | null;
	/** The API key's name, when it was given one (what a tool policy sees as `principal.keyName`). */
	keyName?: string | null | undefined;
}

/** The caller a principal id stands for, with the identity its token carried (people only). */
export function callerOf(principalId: string, identity: Identity | null, keyName: string | null = null): Caller {
	const ref = parsePrincipalId(principalId);
	if (ref) return { principalId, vault: `person:${ref.userId}`, identity, keyId: null };
	return { principalId, vault: `key:${principalId}`, identity: null, keyId: principalId, keyName };
}
