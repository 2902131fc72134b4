import type { Settings } from "../config.ts";
import type { Env } from "../env.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import { sha256Hex } from "../primitives/crypto.ts";
import { isolateCache, keepFound } from "../primitives/expiring-map.ts";
import type { Identity } from "../registry/access-rules.ts";
import { type AccessRuleRecord, principalId, principalRecord, ruleFor } from "../registry/access-rules.ts";
import type { RegistryReader } from "../registry/registry-reader.ts";
import type { ApiKeyRecord } from "../registry/schemas.ts";
import {
	authorizationServer,
	GrantPropsSchema,
	grantIdOf,
	hasGatewayTokenShape,
	resourceOf,
	userIdOf,
} from "./authorization-server.ts";
import { TokenRejected, verifyExternalToken } from "./external-issuer.ts";
import type { ClaimedIdentity } from "./identity.ts";
import { IssuerUnavailable } from "./issuer-metadata.ts";
import { bearerChallenge } from "./protected-resource.ts";
import type { LookupGuard } from "./rate-limits.ts";
import { logRefusal, REFUSALS, refusalReason } from "./refusal.ts";

/** The access rules, per isolate for as long as endpoint records (a rule change reaches new requests within it). */
const rulesCache = isolateCache<AccessRuleRecord[]>({ maxEntries: 1 });

/**
 * The principal an OAuth access token stands for, in the shape of a key
 * record: the token is validated (the gateway's own, by its authorization
 * server: known, unexpired, for this resource; an external issuer's, as a
 * JWT: signature, issuer, audience, expiry, an access token's type or scope),
 * then the access rules turn its identity into what it may use. Throws 401
 * (with a challenge naming the resource metadata) for a token that is not
 * valid, 403 when no rule grants the identity anything (saying why, not who:
 * the log says who), 503 when the issuer or the rules cannot be read (`reader`
 * is the request's, which rejects a failed read as `registry_unavailable`).
 * A gateway token is read from KV only past `guard` (the failed-lookup
 * lockout of the client's address), and a read that finds nothing counts
 * against it; a JWT verifies by its signature and never meets the guard.
 */
export async function principalOfToken(
	token: string,
	request: Request,
	env: Env,
	settings: Settings,
	reader: RegistryReader,
	guard: LookupGuard,
): Promise<{ record: ApiKeyRecord; identity: Identity }> {
	const origin = new URL(request.url).origin;
	const oauth = settings.oauth;
	let claimed: ClaimedIdentity;
	let userId: string;
	let grantId: string | null = null;
	let trustedIssuer: string;
	if (oauth.mode === "gateway") {
		const known = await knownToken(token, request, env, settings, guard);
		if (!known) {
			throw invalidToken(settings, origin, "The access token is unknown, expired, revoked or for another resource.");
		}
		({ userId, grantId } = known);
		// Only what the sign-in counted was kept in the grant: an unverified address is not there to report.
		claimed = { identity: known.identity, unverifiedEmail: null };
		trustedIssuer = oauth.oidc.issuer;
	} else if (oauth.mode === "external") {
		try {
			claimed = await verifyExternalToken(token, {
				issuer: oauth.issuer,
				audience: oauth.audience ?? resourceOf(origin),
				jwksUrl: oauth.jwksUrl,
				emailsVerified: oauth.emailsVerified,
				requiredTyp: oauth.requiredTyp,
				requiredScope: oauth.requiredScope,
			});
		} catch (error) {
			if (error instanceof TokenRejected) {
				throw invalidToken(settings, origin, `The access token was refused: ${error.reason}.`);
			}
			if (error instanceof IssuerUnavailable) {
				throw new GatewayError(
					"issuer_unavailable",
					"The authorization server's signing keys could not be read; the token could not be checked.",
					{ cause: error },
				);
			}
			throw error;
		}
		userId = await userIdOf(claimed.identity);
		trustedIssuer = oauth.issuer;
	} else {
		throw invalidToken(settings, origin, "Invalid API key: it is unknown, malformed or has been revoked.");
	}
	const rules = await rulesCache.load(
		"rules",
		() => reader.rules(),
		() => settings.endpointCacheTtlMs,
		reader,
	);
	const { identity } = claimed;
	const rule = ruleFor(rules, identity, trustedIssuer);
	if (!rule) {
		const reason = refusalReason(rules, claimed, trustedIssuer);
		logRefusal("oauth_token_refused", claimed, reason, { userId });
		throw new GatewayError(
			"forbidden",
			`Forbidden: this account may not use this gateway (${REFUSALS[reason]}); ask its operator for access.`,
		);
	}
	const id = principalId({ rule: rule.name, generation: rule.generation, userId, grantId });
	const record = principalRecord(id, [rule], identity.email ?? identity.subject);
	if (!record) throw new Error("a principal's own rule did not resolve");
	return { record, identity };
}

/** What a valid token of the gateway's own authorization server says, until when. */
interface KnownToken {
	identity: Identity;
	userId: string;
	grantId: string | null;
	expiresAt: number;
}

/**
 * Valid tokens of the gateway's own authorization server, per isolate for
 * KEY_CACHE_TTL_SECONDS (as keys are), under the resource they were
 * validated for and their SHA-256: most requests then cost no KV read, and a
 * token is never taken from the cache at a host it was not validated for
 * (another host of the deployment is another resource, which the
 * authorization server would refuse it for). Invalid tokens are never kept;
 * a revoked token stops within the TTL, and its sessions at their next
 * recheck, as a revoked key's do.
 */
const tokens = isolateCache<KnownToken | null>({ maxEntries: 1_000 });

async function knownToken(
	token: string,
	request: Request,
	env: Env,
	settings: Settings,
	guard: LookupGuard,
): Promise<KnownToken | null> {
	// Not one of ours by its shape: refused without a read, so it neither meets nor counts against the lockout.
	if (!hasGatewayTokenShape(token)) return null;
	const origin = new URL(request.url).origin;
	const resource = resourceOf(origin);
	const name = `${resource} ${await sha256Hex(token)}`;
	const known = await tokens.load(
		name,
		async () => {
			guard.admit();
			const validated = await authorizationServer(origin, settings)
				.validateToken(resource, token, env)
				.catch((error: unknown) => {
					throw new GatewayError(
						"issuer_unavailable",
						"The gateway's authorization server could not check the token.",
						{
							cause: error,
						},
					);
				});
			const props = GrantPropsSchema.safeParse(validated?.props);
			if (!validated || !props.success) {
				guard.failed();
				return null;
			}
			const userId = validated.userId;
			return {
				identity: props.data.identity,
				userId,
				grantId: grantIdOf(token, userId),
				expiresAt: validated.expiresAt,
			};
		},
		keepFound(settings.keyCacheTtlMs),
		request,
	);
	// A cached token still expires on time (the library's `expiresAt` is in seconds).
	return known && known.expiresAt * 1000 > Date.now() ? known : null;
}

/** 401 `invalid_token`: the challenge tells the client where to get a new one. */
export function invalidToken(settings: Settings, origin: string, message: string): GatewayError {
	return new GatewayError("unauthenticated", message, {
		headers: { "www-authenticate": bearerChallenge(settings, origin, { code: "invalid_token", description: message }) },
	});
}
