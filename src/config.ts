import { z } from "zod";

const seconds = (fallback: number) => z.coerce.number().int().positive().default(fallback);
const bytes = (fallback: number) => z.coerce.number().int().positive().default(fallback);

/** Worker vars and secrets, parsed once per isolate into typed settings with defaults. */
const SettingsSchema = z.object({
	ADMIN_TOKEN: z.string().min(1).optional(),
	SESSION_SECRET: z.string().min(32, "SESSION_SECRET must be at least 32 characters").optional(),
	IDLE_TIMEOUT_SECONDS: seconds(30 * 60),
	TOUCH_INTERVAL_SECONDS: seconds(60),
	MAX_BODY_BYTES: bytes(4 * 1024 * 1024),
	MAX_REPLY_BYTES: bytes(10 * 1024 * 1024),
	KEY_CACHE_TTL_SECONDS: z.coerce.number().int().nonnegative().default(10),
	UPSTREAM_TIMEOUT_SECONDS: seconds(60),
	RECHECK_INTERVAL_SECONDS: seconds(30),
	UNVERIFIED_LIMIT_SECONDS: seconds(5 * 60),
	ALLOWED_ORIGINS: z
		.string()
		.default("")
		.transform((value) =>
			value
				.split(",")
				.map((origin) => origin.trim())
				.filter((origin) => origin.length > 0),
		),
});

export interface Settings {
	adminToken: string | undefined;
	sessionSecret: string | undefined;
	idleTimeoutMs: number;
	touchIntervalMs: number;
	maxBodyBytes: number;
	/** Cap on one upstream JSON reply or SSE event. */
	maxReplyBytes: number;
	keyCacheTtlMs: number;
	upstreamTimeoutMs: number;
	/** A session re-verifies with the registry at most this often. */
	recheckIntervalMs: number;
	/** A session that cannot be verified this long after its last successful recheck ends. */
	unverifiedLimitMs: number;
	allowedOrigins: string[];
}

const cache = new WeakMap<object, Settings>();

/**
 * Reads settings from the Worker env. Empty strings count as unset, so a var
 * left blank in wrangler.toml takes the default.
 */
export function settingsFrom(env: object): Settings {
	const cached = cache.get(env);
	if (cached) return cached;
	const raw = Object.fromEntries(Object.entries(env).filter(([, value]) => typeof value === "string" && value !== ""));
	const parsed = SettingsSchema.safeParse(raw);
	if (!parsed.success) {
		const issue = parsed.error.issues[0];
		throw new Error(`Invalid gateway configuration: ${issue?.path.join(".")}: ${issue?.message}`);
	}
	const v = parsed.data;
	const settings: Settings = {
		adminToken: v.ADMIN_TOKEN,
		sessionSecret: v.SESSION_SECRET,
		idleTimeoutMs: v.IDLE_TIMEOUT_SECONDS * 1000,
		touchIntervalMs: v.TOUCH_INTERVAL_SECONDS * 1000,
		maxBodyBytes: v.MAX_BODY_BYTES,
		maxReplyBytes: v.MAX_REPLY_BYTES,
		keyCacheTtlMs: v.KEY_CACHE_TTL_SECONDS * 1000,
		upstreamTimeoutMs: v.UPSTREAM_TIMEOUT_SECONDS * 1000,
		recheckIntervalMs: v.RECHECK_INTERVAL_SECONDS * 1000,
		unverifiedLimitMs: v.UNVERIFIED_LIMIT_SECONDS * 1000,
		allowedOrigins: v.ALLOWED_ORIGINS,
	};
	cache.set(env, settings);
	return settings;
}
