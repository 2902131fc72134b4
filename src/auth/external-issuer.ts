import {
	createRemoteJWKSet,
	customFetch,
	errors,
	type FetchImplementation,
	type JWTVerifyGetKey,
	jwtVerify,
	type RemoteJWKSet,
} from "jose";
import { z } from "zod";
import { describeError } from "../mcp/gateway-error.ts";
import { readCapped } from "../mcp/read-capped.ts";
import { ExpiringMap, isolateCache } from "../primitives/expiring-map.ts";
import { type ClaimedIdentity, identityFromClaims } from "./identity.ts";
import { discoverJwksUrl, FETCH_TIMEOUT_MS, IssuerUnavailable, MAX_DOCUMENT_BYTES } from "./issuer-metadata.ts";

/**
 * The organisation's authorization server, when the gateway is a pure OAuth
 * resource server in front of it: bearer tokens that are not API keys are its
 * JWT access tokens (RFC 9068), verified against its published keys.
 */
export interface ExternalIssuer {
	/** Exactly as the tokens' `iss` and the metadata's `issuer` spell it (no normalising). */
	issuer: string;
	/** What the tokens' `aud` must contain: by default the gateway's resource URL. */
	audience: string;
	/** The issuer's JWKS; null: discovered from its metadata. */
	jwksUrl: string | null;
	/** Its every email address counts as verified, flag or not (EMAIL_VERIFIED_ISSUERS). */
	emailsVerified: boolean;
	/** What a token must have to be taken for an access token; null: the default (see acceptAsAccessToken). */
	requiredTyp: "at+jwt" | null;
	requiredScope: string | null;
}

/** The token is not acceptable; `reason` is a short sentence safe to show the client (401). */
export class TokenRejected extends Error {
	constructor(
		readonly reason: string,
		options?: { cause?: unknown },
	) {
		super(reason, options);
		this.name = "TokenRejected";
	}
}

/**
 * Asymmetric signatures only. `none` is no signature; HS* would need a secret
 * shared with the issuer, and accepting it invites the key-confusion attack
 * (an RSA public key used as the HMAC secret). jose refuses these before any
 * key is looked up, so such a token costs no network. Ed25519 is RFC 9864's
 * fully specified name for what EdDSA means here.
 */
const ALGORITHMS = [
	"RS256",
	"RS384",
	"RS512",
	"PS256",
	"PS384",
	"PS512",
	"ES256",
	"ES384",
	"ES512",
	"EdDSA",
	"Ed25519",
];
/** Clock skew forgiven between the issuer and this isolate, on `exp` and `nbf`. */
const CLOCK_TOLERANCE_SECONDS = 30;
/** After a key set fetch, an unknown `kid` waits this long before it may cause another (garbage kids cannot flood the issuer). */
const JWKS_COOLDOWN_MS = 30_000;
/** A cached key set is refetched after this long even when every kid is known, so revoked keys leave. */
const JWKS_MAX_AGE_MS = 10 * 60_000;
/**
 * Token types accepted, normalised (lowercase, no `application/`). RFC 9068
 * asks for `at+jwt`, but many issuers send `JWT` or nothing; other types
 * (logout tokens, DPoP proofs, ...) are never access tokens.
 */
const ACCESS_TOKEN_TYPES = new Set(["at+jwt", "jwt"]);

/** The scopes a token carries: `scope` (RFC 9068, space-separated), or `scp` (Okta's list, Entra ID's string). */
const ScopeClaimsSchema = z.looseObject({
	scope: z.string().max(8192).optional(),
	scp: z.union([z.string().max(8192), z.array(z.string().max(256)).max(256)]).optional(),
});

function scopesOf(payload: unknown): string[] {
	const parsed = ScopeClaimsSchema.safeParse(payload);
	if (!parsed.success) return [];
	const { scope, scp } = parsed.data;
	const listed = [scope ?? "", ...(Array.isArray(scp) ? scp : [scp ?? ""])];
	return listed.flatMap((entry) => entry.split(" ")).filter((entry) => entry.length > 0);
}

/**
 * What one isolate remembers about issuers: discovered JWKS URLs (only a
 * lookup that succeeded, so the next request retries a failed one; a lookup
 * under way is its own request's, never awaited by another) and jose's key
 * sets, which cache keys across requests (and, on Workers, let each request
 * load a cold set itself). Keyed by issuer and by JWKS URL; an isolate serves
 * one configured issuer, so these stay tiny.
 */
interface IssuerCaches {
	jwksUrls: ExpiringMap<string>;
	keySets: Map<string, RemoteJWKSet>;
	fetch: typeof fetch;
}

/** How long a discovered JWKS URL is believed before the metadata is read again. */
const JWKS_URL_TTL_MS = 60 * 60_000;

function newCaches(fetchImpl: typeof fetch, jwksUrls: ExpiringMap<string>): IssuerCaches {
	return { jwksUrls, keySets: new Map(), fetch: fetchImpl };
}

// Looked up when called, not captured, so the runtime's fetch is whatever it is at that moment.
const platformCaches = newCaches((input, init) => fetch(input, init), isolateCache({ maxEntries: 16 }));
/** An injected fetch gets caches of its own: what one fetch found must not answer for another. */
const injectedCaches = new WeakMap<typeof fetch, IssuerCaches>();

function cachesFor(fetchImpl: typeof fetch | undefined): IssuerCaches {
	if (fetchImpl === undefined) return platformCaches;
	let caches = injectedCaches.get(fetchImpl);
	if (!caches) {
		caches = newCaches(fetchImpl, new ExpiringMap({ maxEntries: 16 }));
		injectedCaches.set(fetchImpl, caches);
	}
	return caches;
}

/**
 * The identity a JWT access token from `issuer` vouches for (and the address
 * it carried that does not count, if any). Throws
 * TokenRejected when the token is not acceptable (answer 401 with its
 * reason), IssuerUnavailable when the issuer's metadata or keys cannot be
 * fetched (answer 503). `fetch` replaces the runtime's for metadata and keys
 * (with caches of its own); `now` (ms) replaces the clock for `exp` and `nbf`.
 *
 * @example
 * const identity = await verifyExternalToken(bearer, { issuer: "https://idp.example", audience: "https://mcp.example/mcp", jwksUrl: null });
 */
export async function verifyExternalToken(
	token: string,
	issuer: ExternalIssuer,
	options: { fetch?: typeof fetch; now?: () => number } = {},
): Promise<ClaimedIdentity> {
	const caches = cachesFor(options.fetch);
	// A resolver, so metadata and keys are fetched only for a token that passed jose's structural and algorithm checks.
	const getKey: JWTVerifyGetKey = async (header, jws) => {
		const keySet = keySetFor(caches, await jwksUrlFor(caches, issuer));
		try {
			return await keySet(header, jws);
		} catch (error) {
			// These say something about the token's header; anything else (network, status, JSON, key import) is the issuer's failure.
			if (
				error instanceof errors.JWKSNoMatchingKey ||
				error instanceof errors.JWKSMultipleMatchingKeys ||
				error instanceof errors.JOSENotSupported
			) {
				throw error;
			}
			// Thrown by cappedFetch, already saying what went wrong.
			if (error instanceof IssuerUnavailable) throw error;
			throw new IssuerUnavailable(`the key set of ${issuer.issuer} could not be read: ${describeError(error)}`, {
				cause: error,
			});
		}
	};
	let verified: Awaited<ReturnType<typeof jwtVerify>>;
	try {
		verified = await jwtVerify(token, getKey, {
			issuer: issuer.issuer,
			audience: issuer.audience,
			algorithms: ALGORITHMS,
			clockTolerance: CLOCK_TOLERANCE_SECONDS,
			requiredClaims: ["exp", "sub"],
			currentDate: new Date(options.now ? options.now() : Date.now()),
		});
	} catch (error) {
		throw rejectionFor(error, issuer) ?? error;
	}
	acceptAsAccessToken(verified.protectedHeader.typ, verified.payload, issuer);
	const claimed = identityFromClaims(issuer.issuer, verified.payload, { emailsVerified: issuer.emailsVerified });
	if (!claimed) throw new TokenRejected("the token names no subject");
	return claimed;
}

/**
 * Refuses a JWT of the issuer that is not an access token. An ID token the
 * issuer made for a client whose id is the gateway's audience has the right
 * `iss`, `aud` and signature, yet says only who signed in to that client, and
 * whoever holds it (that client, or a site it was given to) must not use it
 * here. What sets an access token apart: RFC 9068's `typ` `at+jwt`, which no
 * ID token carries, or a scope (`scope`, `scp`), which ID tokens do not
 * carry either. By default one of the two is enough; OAUTH_REQUIRED_TYP
 * requires the type, OAUTH_REQUIRED_SCOPE one scope. Types that are never
 * access tokens (logout tokens, DPoP proofs, ...) are refused in any case.
 */
function acceptAsAccessToken(typ: string | undefined, payload: unknown, issuer: ExternalIssuer): void {
	const type = typ?.toLowerCase().replace(/^application\//, "");
	if (type !== undefined && !ACCESS_TOKEN_TYPES.has(type)) {
		throw new TokenRejected("the token is not an access token (typ)");
	}
	const scopes = scopesOf(payload);
	if (issuer.requiredTyp !== null && type !== issuer.requiredTyp) {
		throw new TokenRejected(`the token is not an access token (its typ is not ${issuer.requiredTyp})`);
	}
	if (issuer.requiredScope !== null && !scopes.includes(issuer.requiredScope)) {
		throw new TokenRejected(`the token does not carry the scope ${issuer.requiredScope}`);
	}
	if (issuer.requiredTyp === null && issuer.requiredScope === null && type !== "at+jwt" && scopes.length === 0) {
		throw new TokenRejected("the token is not an access token (neither typed at+jwt nor carrying a scope)");
	}
}

/** The client-facing reason for a jose error about the token, or null when the error is not about the token. */
function rejectionFor(error: unknown, issuer: ExternalIssuer): TokenRejected | null {
	const reject = (reason: string) => new TokenRejected(reason, { cause: error });
	if (error instanceof errors.JWTExpired) return reject("the token has expired");
	if (error instanceof errors.JWTClaimValidationFailed) {
		switch (error.claim) {
			case "aud":
				return reject("the token is not for this gateway (audience)");
			case "iss":
				return reject(`the token was not issued by ${issuer.issuer}`);
			case "nbf":
				return reject(error.reason === "invalid" ? "the token's nbf is not a number" : "the token is not valid yet");
			case "exp":
				return reject(error.reason === "missing" ? "the token has no expiry (exp)" : "the token's exp is not a number");
			case "sub":
				return reject("the token names no subject");
			default:
				return reject(`the token's ${error.claim} claim is not acceptable`);
		}
	}
	if (error instanceof errors.JWSSignatureVerificationFailed) return reject("the token's signature does not verify");
	if (error instanceof errors.JWKSNoMatchingKey)
		return reject("the token's signing key is not one the issuer publishes");
	if (error instanceof errors.JWKSMultipleMatchingKeys) {
		return reject("the token does not say which of the issuer's keys signed it (kid)");
	}
	if (error instanceof errors.JOSEAlgNotAllowed) return reject("the token's signing algorithm is not accepted (alg)");
	if (error instanceof errors.JWSInvalid || error instanceof errors.JWTInvalid) return reject("the token is not a JWT");
	// An unknown critical header parameter, or an algorithm the runtime lacks.
	if (error instanceof errors.JOSENotSupported)
		return reject("the token uses a JOSE feature the gateway does not support");
	return null;
}

/** jose's key set for `url`, kept for the isolate's life, so keys are cached across requests. */
function keySetFor(caches: IssuerCaches, url: string): RemoteJWKSet {
	let keySet = caches.keySets.get(url);
	if (!keySet) {
		keySet = createRemoteJWKSet(new URL(url), {
			timeoutDuration: FETCH_TIMEOUT_MS,
			cooldownDuration: JWKS_COOLDOWN_MS,
			cacheMaxAge: JWKS_MAX_AGE_MS,
			[customFetch]: cappedFetch(caches.fetch),
		});
		caches.keySets.set(url, keySet);
	}
	return keySet;
}

/** `fetchImpl` for jose's key set requests, with the body capped before jose parses it. */
function cappedFetch(fetchImpl: typeof fetch): FetchImplementation {
	return async (url, init) => {
		const response = await fetchImpl(url, init);
		// jose refuses anything but 200 itself, naming the status.
		if (response.status !== 200 || response.body === null) return response;
		const body = await readCapped(response.body, MAX_DOCUMENT_BYTES);
		if (body === null) throw new IssuerUnavailable(`the key set at ${url} is larger than ${MAX_DOCUMENT_BYTES} bytes`);
		// Only the bytes: the original headers could describe an encoding the body no longer has.
		return new Response(body, { status: 200 });
	};
}

/** The issuer's JWKS URL: configured, or discovered and then kept per isolate for JWKS_URL_TTL_MS. */
async function jwksUrlFor(caches: IssuerCaches, issuer: ExternalIssuer): Promise<string> {
	if (issuer.jwksUrl !== null) return issuer.jwksUrl;
	try {
		// Its own flight: one verification looks the metadata up once, and waits on no other request's lookup.
		return await caches.jwksUrls.load(
			issuer.issuer,
			() => discoverJwksUrl(caches.fetch, issuer.issuer),
			() => JWKS_URL_TTL_MS,
			{},
		);
	} catch (error) {
		throw error instanceof IssuerUnavailable ? error : new IssuerUnavailable(describeError(error), { cause: error });
	}
}
