import type { Settings } from "../config.ts";
import type { Env } from "../env.ts";
import { describeError, GatewayError } from "../mcp/gateway-error.ts";

/** Bound on each per-isolate verdict list, so a flood of keys or addresses cannot grow memory. */
const MAX_VERDICTS = 1_000;

/** Keeps background work alive after the response (the request's `waitUntil`). */
export type WaitUntil = (promise: Promise<unknown>) => void;

/**
 * Verdicts of the rate-limiting bindings, per isolate: who is over a limit,
 * and until when. The bindings are asked on every request without waiting
 * for their answer (it would add a round trip to every request: about 1.3 ms
 * under `wrangler dev`); a "no" applies from the next request on, for the
 * binding's period. The bindings are approximate and per location anyway, so
 * the request that crosses a limit going through changes nothing that matters.
 */
class Verdicts {
	private readonly until = new Map<string, number>();

	/** Whether `who` is over its limit now. */
	limited(who: string): boolean {
		const until = this.until.get(who);
		if (until === undefined) return false;
		if (until > Date.now()) return true;
		this.until.delete(who);
		return false;
	}

	/** Records a "no" of the binding: `who` is refused for `periodMs`. */
	refuse(who: string, periodMs: number): void {
		if (this.until.size >= MAX_VERDICTS) {
			const oldest = this.until.keys().next();
			if (!oldest.done) this.until.delete(oldest.value);
		}
		this.until.set(who, Date.now() + periodMs);
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
		waitUntil(
			limiter
				.limit({ key: who })
				.then(({ success }) => {
					if (success) return;
					this.refuse(who, settings.rateLimitPeriodSeconds * 1000);
					onRefused?.();
				})
				.catch((error: unknown) => console.warn(`rate limiter unavailable: ${describeError(error)}`)),
		);
	}
}

const keyVerdicts = new Verdicts();
const addressVerdicts = new Verdicts();

/** The client's address as Cloudflare reports it; locally and in tests it may be absent. */
export function clientIp(request: Request): string {
	return request.headers.get("cf-connecting-ip") ?? "unknown";
}

/** Throws 429 when this client IP is over its limit of failed authentications (before any key lookup). */
export function refuseLockedOut(ip: string, settings: Settings): void {
	if (addressVerdicts.limited(`auth-failure:${ip}`)) throw tooManyFailures(settings);
}

/**
 * Counts a failed authentication against the client's IP (AUTH_FAILURE_LIMITER),
 * and returns the error to answer: 401. Past the limit, the address's later
 * requests get 429 before any key lookup, for the binding's period.
 */
export function failedAuthentication(
	env: Env,
	settings: Settings,
	ip: string,
	unauthenticated: GatewayError,
	waitUntil: WaitUntil,
): GatewayError {
	addressVerdicts.ask(env.AUTH_FAILURE_LIMITER, `auth-failure:${ip}`, settings, waitUntil, () =>
		console.warn(JSON.stringify({ event: "auth_failures_limited", ip })),
	);
	return unauthenticated;
}

/** Throws 429 when the key is over its request rate (KEY_RATE_LIMITER); counts this request against it. */
export function limitKeyRate(env: Env, settings: Settings, keyId: string, waitUntil: WaitUntil): void {
	if (keyVerdicts.limited(`key:${keyId}`)) {
		throw new GatewayError(
			"rate_limited",
			`Too Many Requests: this API key sent more requests than its rate limit allows; retry after ${settings.rateLimitPeriodSeconds} s.`,
			{ headers: { "retry-after": String(settings.rateLimitPeriodSeconds) } },
		);
	}
	keyVerdicts.ask(env.KEY_RATE_LIMITER, `key:${keyId}`, settings, waitUntil);
}

function tooManyFailures(settings: Settings): GatewayError {
	return new GatewayError(
		"rate_limited",
		`Too Many Requests: too many failed authentications from this address; retry after ${settings.rateLimitPeriodSeconds} s with a valid API key.`,
		{ headers: { "retry-after": String(settings.rateLimitPeriodSeconds) } },
	);
}
