import { SignJWT } from "jose";
import { randomToken } from "../primitives/crypto.ts";
import { ExpiringMap } from "../primitives/expiring-map.ts";
import type { Caller } from "./caller.ts";
import { ASSERTION_ALG, hasSigningKey, type PublishedKey, type SigningKeyEnv, signingKeys } from "./signing-keys.ts";

/** How long an assertion is valid: long enough for one request to arrive, short enough that a leaked one is soon useless. */
export const ASSERTION_LIFETIME_SECONDS = 60;
/** An assertion is reused while more than this is left of its life, so one that reaches the upstream still has time. */
export const ASSERTION_REUSE_MARGIN_MS = 30_000;
/** Assertions one isolate keeps at most (one per principal, audience and key). */
const MAX_CACHED_ASSERTIONS = 5_000;

/** The claims of a gateway identity assertion, as an upstream verifies them. */
export interface AssertionClaims {
	/** The gateway's origin. */
	iss: string;
	/** The server's URL. */
	aud: string;
	/** A person's subject at their issuer, or `key:<keyId>` for an API key. */
	sub: string;
	/** A person's address, present only when verified (`Identity.email` is null otherwise). */
	email?: string;
	groups: string[];
	/** The API key's id; absent for a person. */
	key_id?: string;
	iat: number;
	exp: number;
	jti: string;
}

export interface IdentityAsserterOptions {
	/** The clock, in milliseconds (tests pass their own). */
	now?: () => number;
	maxEntries?: number;
}

/**
 * Signs the assertions `identity` servers get: a JWT of who is calling, for
 * one server, for a minute. Signing is cached per principal and audience
 * while more than 30 s of an assertion's life is left, and concurrent
 * requests share one signing, so a burst of calls signs once.
 */
export class IdentityAsserter {
	private readonly cache: ExpiringMap<string>;
	private readonly now: () => number;

	constructor(options: IdentityAsserterOptions = {}) {
		this.now = options.now ?? Date.now;
		this.cache = new ExpiringMap({ maxEntries: options.maxEntries ?? MAX_CACHED_ASSERTIONS, now: this.now });
	}

	/**
	 * The assertion for `caller` at the server `audience` (its URL), issued by
	 * the gateway at `origin`. Rejects with `SigningKeyMisconfigured` when
	 * `IDENTITY_SIGNING_KEY` is missing or unusable.
	 */
	async assertion(
		caller: Caller,
		audience: string,
		origin: string,
		env: SigningKeyEnv,
		flight: object,
	): Promise<string> {
		const keys = await signingKeys(env);
		const subject = subjectOf(caller);
		// Everything the token says is in the key, so a person whose groups changed at a new sign-in gets a new one.
		const key = JSON.stringify([keys.current.kid, origin, audience, caller.principalId, subject]);
		return this.cache.load(
			key,
			async () => {
				const iat = Math.floor(this.now() / 1000);
				const claims: AssertionClaims = {
					iss: origin,
					aud: audience,
					...subject,
					iat,
					exp: iat + ASSERTION_LIFETIME_SECONDS,
					jti: randomToken(16),
				};
				return new SignJWT({ ...claims })
					.setProtectedHeader({ alg: ASSERTION_ALG, kid: keys.current.kid, typ: "JWT" })
					.sign(keys.current.privateKey);
			},
			() => ASSERTION_LIFETIME_SECONDS * 1000 - ASSERTION_REUSE_MARGIN_MS,
			flight,
		);
	}
}

/** The claims that name the caller: a person by their identity, an API key by its id. */
function subjectOf(caller: Caller): Pick<AssertionClaims, "sub" | "email" | "groups" | "key_id"> {
	if (caller.identity) {
		const { subject, email, groups } = caller.identity;
		return { sub: subject, ...(email === null ? {} : { email }), groups };
	}
	if (caller.keyId !== null) return { sub: `key:${caller.keyId}`, groups: [], key_id: caller.keyId };
	// callerOf never builds this; a person without an identity must not be asserted as anyone.
	throw new TypeError(`caller ${caller.principalId} has neither an identity nor a key id`);
}

const shared = new IdentityAsserter();

/**
 * The gateway's assertion of who `caller` is, for the server at `audience`,
 * issued as `origin`: an ES256 JWT (`kid` of IDENTITY_SIGNING_KEY), valid
 * 60 s, cached in this isolate while more than 30 s of it is left.
 *
 * @example
 * const jwt = await identityAssertion(caller, server.url, new URL(request.url).origin, env, request);
 * headers.set("authorization", `Bearer ${jwt}`);
 */
export function identityAssertion(
	caller: Caller,
	audience: string,
	origin: string,
	env: SigningKeyEnv,
	flight: object,
): Promise<string> {
	return shared.assertion(caller, audience, origin, env, flight);
}

/** The JWKS the gateway publishes: its current key and, across a rotation, the previous one. */
export interface JwksDocument {
	keys: PublishedKey[];
}

/**
 * What `/.well-known/jwks.json` answers, or null when no signing key is
 * configured. Rejects with `SigningKeyMisconfigured` for a key that is set but unusable.
 */
export async function jwksDocument(env: SigningKeyEnv): Promise<JwksDocument | null> {
	if (!hasSigningKey(env)) return null;
	const keys = await signingKeys(env);
	return { keys: keys.previous ? [keys.current.published, keys.previous] : [keys.current.published] };
}
