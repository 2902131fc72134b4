import type { Settings } from "../config.ts";
import type { Env } from "../env.ts";
import { describeError, GatewayError } from "../mcp/gateway-error.ts";
import { ExpiringMap } from "../primitives/expiring-map.ts";
import type { WaitUntil } from "../primitives/wait-until.ts";
import { limitHolderOf, parsePrincipalId } from "../registry/access-rules.ts";
import { DEFAULT_RATE_CLASS, RATE_CLASSES, type RateClass } from "../registry/rate-classes.ts";
import type { ApiKeyRecord } from "../registry/schemas.ts";

/** Bound on each per-isolate verdict list, so a flood of keys or addresses cannot grow memory. */
const MAX_VERDICTS = 1_000;

/**
 * Verdicts of the rate-limiting bindings, per isolate: who is over a limit,
 * and until when. On the hot path the bindings are asked without waiting for
 * their answer (it would add a round trip to every request: about 1.3 ms
 * under `wrangler dev`); a "no" applies from the next request on, for the
 * binding's period. The bindings are approximate and per location anyway, so
 * the request that crosses a limit going through changes nothing that matters.
 */
class Verdicts {
	private readonly refused = new ExpiringMap<true>({ maxEntries: MAX_VERDICTS });

	/** Whether `who` is over its limit now. */
	limited(who: string): boolean {
		return this.refused.get(who) !== undefined;
	}

	/** Records a "no" of the binding: `who` is refused for `periodMs`. */
	refuse(who: string, periodMs: number): void {
		this.refused.set(who, true, periodMs);
	}

	/** Asks the binding about `who` in the background; a "no" is recorded for the next request. */
	ask(
		limiter: RateLimit | undefined,
		who: string,
		settings: Settings,
		waitUntil: WaitUntil,
		onRefused?: () => void,
	): void {
		if (!limiter) return;
		waitUntil(this.answer(limiter, who, settings, onRefused));
	}

	/**
	 * Asks the binding about `who` and waits for the answer: whether this
	 * request may go on. A "no" is recorded, so later requests are refused
	 * without asking; an unavailable binding lets the request through.
	 */
	async answer(
		limiter: RateLimit | undefined,
		who: string,
		settings: Settings,
		onRefused?: () => void,
	): Promise<boolean> {
		if (!limiter) return true;
		try {
			if ((await limiter.limit({ key: who })).success) return true;
		} catch (error) {
			console.warn(`rate limiter unavailable: ${describeError(error)}`);
			return true;
		}
		this.refuse(who, settings.rateLimitPeriodSeconds * 1000);
		onRefused?.();
		return false;
	}
}

/** Key verdicts per binding: a key moved to another class is not held by its old class's "no". */
const keyVerdicts = new Map<string, Verdicts>();

function keyVerdictsOf(binding: string): Verdicts {
	const found = keyVerdicts.get(binding);
	if (found) return found;
	const made = new Verdicts();
	keyVerdicts.set(binding, made);
	return made;
}
const addressVerdicts = new Verdicts();
const oauthVerdicts = new Verdicts();

/** The client's address as Cloudflare reports it; locally and in tests it may be absent. */
export function clientIp(request: Request): string {
	return request.headers.get("cf-connecting-ip") ?? "unknown";
}

/**
 * The failed-lookup lockout of one client address (AUTH_FAILURE_LIMITER).
 * It guards only credentials that cannot be verified without a read — the
 * tokens of the gateway's own authorization server, checked in KV: `admit`
 * before such a read (429 while the address is locked out), `failed` when the
 * read found no valid token. API keys (a MAC) and an external issuer's JWTs
 * (a signature) verify by local computation, cost no read when they are
 * wrong, and are never refused by the lockout: garbage from one address
 * cannot lock its neighbours out of credentials that verify. A token this
 * isolate already verified is served from its cache without a read, so
 * without the lockout too.
 */
export interface LookupGuard {
	/** Throws 429 when the address is locked out; called only before a read. */
	admit(): void;
	/** Counts a read that found nothing valid against the address. */
	failed(): void;
}

export function lookupGuard(env: Env, settings: Settings, request: Request, waitUntil: WaitUntil): LookupGuard {
	const ip = clientIp(request);
	const who = `auth-failure:${ip}`;
	return {
		admit: () => {
			if (addressVerdicts.limited(who)) throw tooManyFailures(settings);
		},
		failed: () =>
			addressVerdicts.ask(env.AUTH_FAILURE_LIMITER, who, settings, waitUntil, () =>
				console.warn(JSON.stringify({ event: "auth_failures_limited", ip })),
			),
	};
}

/**
 * Throws 429 when the key is over its request rate; counts this request
 * against it. The key's rate class names the binding that counts
 * (rate-classes.ts; "unlimited": none). A signed-in person's requests count
 * together, whichever client or sign-in sent them (`limitHolderOf`), under
 * their rule's class. The class comes with the key record the request was
 * authenticated with, so choosing the binding costs no read.
 */
export function limitKeyRate(
	env: Env,
	settings: Settings,
	key: Pick<ApiKeyRecord, "id" | "rateClass">,
	waitUntil: WaitUntil,
): void {
	const binding = keyRateBinding(env, key.rateClass);
	if (binding === null) return;
	const who = `key:${limitHolderOf(key.id)}`;
	const verdicts = keyVerdictsOf(binding.name);
	if (verdicts.limited(who)) {
		const sender = parsePrincipalId(key.id)
			? "you sent more requests than your rate limit allows, counted over every client you signed in with"
			: "this API key sent more requests than its rate limit allows";
		throw new GatewayError(
			"rate_limited",
			`Too Many Requests: ${sender} (rate class ${key.rateClass}); retry after ${settings.rateLimitPeriodSeconds} s.`,
			{ headers: retryAfter(settings) },
		);
	}
	verdicts.ask(binding.limiter, who, settings, waitUntil);
}

/** Classes already reported as missing their binding in this isolate: one warning each, at first use. */
const reportedMissing = new Set<RateClass>();

/**
 * The binding that counts a class's requests, or null for a class without a
 * limit. A class whose binding this deployment lacks (a wrangler.toml of its
 * own, written before the class existed) counts against standard's, with
 * one warning per isolate: a key promoted to a class nobody deployed keeps
 * the limit it had rather than losing every limit.
 */
function keyRateBinding(env: Env, rateClass: RateClass): { name: string; limiter: RateLimit | undefined } | null {
	const name = RATE_CLASSES[rateClass];
	if (name === null) return null;
	const limiter: RateLimit | undefined = env[name];
	if (limiter !== undefined || rateClass === DEFAULT_RATE_CLASS) return { name, limiter };
	if (!reportedMissing.has(rateClass)) {
		reportedMissing.add(rateClass);
		console.warn(
			JSON.stringify({
				event: "rate_class_binding_missing",
				rateClass,
				binding: name,
				fallback: DEFAULT_RATE_CLASS,
				message: `rate class ${rateClass} has no ${name} binding in this deployment; its requests count against ${DEFAULT_RATE_CLASS} (${RATE_CLASSES[DEFAULT_RATE_CLASS]}). Add the [[ratelimits]] binding to wrangler.toml.`,
			}),
		);
	}
	const fallback = RATE_CLASSES[DEFAULT_RATE_CLASS];
	return { name: fallback, limiter: env[fallback] };
}

/**
 * The refusal of a call to the gateway's unauthenticated authorization-server
 * endpoints (register, authorize, token) when the client's address is over
 * its rate of them (OAUTH_LIMITER); null: go on. Each such call may write to
 * KV (a client, an authorization in progress, tokens), so the binding is
 * waited for: one address leaves at most the binding's limit of records per
 * period and location, each expiring as the library says. Once refused, the
 * address is refused in this isolate for the period without asking again.
 */
export async function oauthEndpointRefusal(
	env: Env,
	settings: Settings,
	request: Request,
): Promise<GatewayError | null> {
	const ip = clientIp(request);
	const who = `oauth:${ip}`;
	const allowed =
		!oauthVerdicts.limited(who) &&
		(await oauthVerdicts.answer(env.OAUTH_LIMITER, who, settings, () =>
			console.warn(JSON.stringify({ event: "oauth_requests_limited", ip })),
		));
	if (allowed) return null;
	return new GatewayError(
		"rate_limited",
		`Too Many Requests: too many sign-in, registration or token requests came from this address; retry after ${settings.rateLimitPeriodSeconds} s.`,
		{ headers: retryAfter(settings) },
	);
}

function tooManyFailures(settings: Settings): GatewayError {
	return new GatewayError(
		"rate_limited",
		`Too Many Requests: too many unknown or expired access tokens came from this address; retry after ${settings.rateLimitPeriodSeconds} s. API keys are not affected.`,
		{ headers: retryAfter(settings) },
	);
}

function retryAfter(settings: Settings): Record<string, string> {
	return { "retry-after": String(settings.rateLimitPeriodSeconds) };
}
