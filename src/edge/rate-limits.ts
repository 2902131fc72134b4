import type { Settings } from "../config.ts";
import type { Env } from "../env.ts";
import { GatewayError } from "../mcp/gateway-error.ts";

/** Bound on the per-isolate list of locked-out client IPs, so a flood of addresses cannot grow memory. */
const MAX_LOCKED_OUT = 1_000;

/**
 * Client IPs this isolate has seen exceed the failed-authentication limit, with
 * when their lockout ends. While locked out, an IP's requests get 429 before
 * any key lookup, so a flood of garbage tokens stops reaching the registry.
 */
const lockedOut = new Map<string, number>();

/** The client's address as Cloudflare reports it; locally and in tests it may be absent. */
export function clientIp(request: Request): string {
	return request.headers.get("cf-connecting-ip") ?? "unknown";
}

/** Throws 429 when this client IP is locked out after too many failed authentications. */
export function refuseLockedOut(ip: string, settings: Settings): void {
	const until = lockedOut.get(ip);
	if (until === undefined) return;
	if (until > Date.now()) throw tooManyFailures(settings);
	lockedOut.delete(ip);
}

/**
 * Counts a failed authentication against the client's IP (AUTH_FAILURE_LIMITER);
 * returns the error to answer: 401, or 429 once the IP is over its limit.
 */
export async function failedAuthentication(
	env: Env,
	settings: Settings,
	ip: string,
	unauthenticated: GatewayError,
): Promise<GatewayError> {
	const limiter = env.AUTH_FAILURE_LIMITER;
	if (!limiter || (await limiter.limit({ key: `auth-failure:${ip}` })).success) return unauthenticated;
	if (lockedOut.size >= MAX_LOCKED_OUT) {
		const oldest = lockedOut.keys().next();
		if (!oldest.done) lockedOut.delete(oldest.value);
	}
	lockedOut.set(ip, Date.now() + settings.rateLimitPeriodSeconds * 1000);
	console.warn(JSON.stringify({ event: "auth_failures_limited", ip }));
	return tooManyFailures(settings);
}

/** Throws 429 when the key is over its request rate (KEY_RATE_LIMITER). */
export async function limitKeyRate(env: Env, settings: Settings, keyId: string): Promise<void> {
	const limiter = env.KEY_RATE_LIMITER;
	if (!limiter || (await limiter.limit({ key: `key:${keyId}` })).success) return;
	throw new GatewayError(
		"rate_limited",
		`Too Many Requests: this API key sent more requests than its rate limit allows; retry after ${settings.rateLimitPeriodSeconds} s.`,
		{ headers: { "retry-after": String(settings.rateLimitPeriodSeconds) } },
	);
}

function tooManyFailures(settings: Settings): GatewayError {
	return new GatewayError(
		"rate_limited",
		`Too Many Requests: too many failed authentications from this address; retry after ${settings.rateLimitPeriodSeconds} s with a valid API key.`,
		{ headers: { "retry-after": String(settings.rateLimitPeriodSeconds) } },
	);
}
