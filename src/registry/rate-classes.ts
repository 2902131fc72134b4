import { z } from "zod";

/** Names of the Env's rate-limiting bindings, as `wrangler types` generates them from wrangler.toml. */
type RateLimitBinding = {
	[Name in keyof WranglerEnv]: WranglerEnv[Name] extends RateLimit ? Name : never;
}[keyof WranglerEnv];

/**
 * A rate class names the `[[ratelimits]]` binding that counts a caller's
 * requests: one binding does not fit every caller (600 a minute is too few
 * for a service key and too many for a person). Keys and access rules name a
 * class; `null` means no per-key limit at all. To add a class, add a
 * `[[ratelimits]]` binding to wrangler.toml, run `npm run types`, and name it
 * here: the admin API accepts the new name from then on. A class whose
 * binding a deployment lacks counts against `standard` (see rate-limits.ts).
 */
export const RATE_CLASSES = {
	standard: "KEY_RATE_LIMITER",
	high: "KEY_RATE_LIMITER_HIGH",
	unlimited: null,
} as const satisfies Record<string, RateLimitBinding | null>;

export type RateClass = keyof typeof RATE_CLASSES;

/** The class of keys and rules that name none, and of every record written before classes existed. */
export const DEFAULT_RATE_CLASS = "standard" satisfies RateClass;

const NAMES = Object.keys(RATE_CLASSES) as [RateClass, ...RateClass[]];

export const RateClassSchema = z.enum(NAMES, {
	error: `must be one of ${NAMES.map((name) => `"${name}"`).join(", ")}`,
});
