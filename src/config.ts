import { z } from "zod";
import { GatewayError } from "./mcp/gateway-error.ts";

const seconds = (fallback: number) => z.coerce.number().int().positive().default(fallback);
const bytes = (fallback: number) => z.coerce.number().int().positive().default(fallback);
const list = (fallback: string) =>
	z
		.string()
		.default(fallback)
		.transform((value) =>
			value
				.split(",")
				.map((entry) => entry.trim())
				.filter((entry) => entry.length > 0),
		);

/** Hosts a local gateway answers on when ALLOWED_HOSTS is not set. */
export const LOCAL_HOSTS = "localhost,127.0.0.1,[::1]";

/** Whether a host is this machine's own (plain http is tolerated only there). */
export function isLoopbackHost(hostname: string): boolean {
	return hostname === "localhost" || hostname === "[::1]" || /^127(\.\d{1,3}){3}$/.test(hostname);
}

/** An OAuth issuer or endpoint: https, or http on loopback (local development), never with credentials or a fragment. */
const issuerUrl = z
	.string()
	.url("must be a URL")
	.refine((value) => {
		const url = URL.parse(value);
		return (
			url !== null &&
			(url.protocol === "https:" || (url.protocol === "http:" && isLoopbackHost(url.hostname))) &&
			url.username === "" &&
			url.hash === "" &&
			url.search === ""
		);
	}, "must be an https URL (http only on localhost) without credentials, query or fragment");

/** Worker vars and secrets, by their names in wrangler.toml, with their defaults. */
const VarsSchema = z
	.object({
		// A short admin token can be guessed; refusing it at start beats running with it.
		ADMIN_TOKEN: z.string().min(32, "ADMIN_TOKEN must be at least 32 characters").optional(),
		SESSION_SECRET: z.string().min(32, "SESSION_SECRET must be at least 32 characters").optional(),
		KEY_SECRET: z.string().min(32, "KEY_SECRET must be at least 32 characters").optional(),
		// Workers KV does not accept a cacheTtl below 30 s; 0 leaves KV's default.
		KV_CACHE_TTL_SECONDS: z.coerce
			.number()
			.int()
			.refine((value) => value === 0 || value >= 30, "KV_CACHE_TTL_SECONDS must be 0 or at least 30")
			.default(30),
		IDLE_TIMEOUT_SECONDS: seconds(30 * 60),
		TOUCH_INTERVAL_SECONDS: seconds(60),
		MAX_SESSION_AGE_SECONDS: seconds(24 * 60 * 60),
		MAX_BODY_BYTES: bytes(4 * 1024 * 1024),
		MAX_REPLY_BYTES: bytes(10 * 1024 * 1024),
		KEY_CACHE_TTL_SECONDS: z.coerce.number().int().nonnegative().default(10),
		ENDPOINT_CACHE_TTL_SECONDS: z.coerce.number().int().nonnegative().default(10),
		// At most 20: the delayed send runs in a request's waitUntil, which lasts 30 s after its answer.
		CALL_COUNTS_FLUSH_SECONDS: z.coerce.number().int().nonnegative().max(20).default(10),
		// A `tool_call` log line per tool call (Workers Logs): an audit trail an operator turns on; off, a
		// call costs no log line (the dashboard's counts, spans and an Analytics Engine dataset do not need it).
		TOOL_CALL_LOG: z.enum(["on", "off"]).default("off"),
		UPSTREAM_TIMEOUT_SECONDS: seconds(60),
		RECHECK_INTERVAL_SECONDS: seconds(30),
		UNVERIFIED_LIMIT_SECONDS: seconds(5 * 60),
		MAX_SESSIONS_PER_KEY: z.coerce.number().int().positive().default(100),
		RATE_LIMIT_PERIOD_SECONDS: z.coerce.number().int().positive().default(60),
		EVENT_BUFFER_EVENTS: z.coerce.number().int().positive().default(500),
		EVENT_BUFFER_BYTES: bytes(1024 * 1024),
		EVENT_BUFFER_SECONDS: seconds(5 * 60),
		SSE_RETRY_MS: z.coerce.number().int().positive().default(1000),
		LISTEN_WINDOW_SECONDS: seconds(25),
		MAX_PENDING_CLIENT_REQUESTS: z.coerce.number().int().positive().default(32),
		// Long calls held as tasks (see src/session/tasks/): how long a 2026-07-28 call runs before it becomes one,
		// how long a task's result is kept at most, and how many tasks one session may hold at once.
		TASK_PROMOTE_AFTER_MS: z.coerce.number().int().nonnegative().default(5000),
		TASK_TTL_SECONDS: seconds(60 * 60),
		MAX_TASKS_PER_SESSION: z.coerce.number().int().positive().default(32),
		ALLOWED_ORIGINS: list(""),
		ALLOWED_HOSTS: list(LOCAL_HOSTS).transform((hosts) => hosts.map((host) => host.toLowerCase())),
		ALLOW_HTTP_UPSTREAMS: z.enum(["true", "false"], "ALLOW_HTTP_UPSTREAMS must be true or false").default("false"),
		// The gateway's own authorization server, signing people in with this OpenID Connect provider.
		OIDC_ISSUER: issuerUrl.optional(),
		OIDC_CLIENT_ID: z.string().min(1).max(255).optional(),
		OIDC_CLIENT_SECRET: z.string().min(1).optional(),
		OIDC_SCOPES: z.string().default("openid email profile"),
		// Lifetimes of the gateway's own tokens. A sign-in lasts as long as its refresh token: after that
		// the person signs in at the identity provider again (the gateway does not ask it on refresh).
		OAUTH_ACCESS_TOKEN_TTL_SECONDS: z.coerce.number().int().min(60).max(86_400).default(3600),
		OAUTH_REFRESH_TOKEN_TTL_SECONDS: z.coerce
			.number()
			.int()
			.min(60)
			.max(365 * 86_400)
			.default(30 * 86_400),
		// Or an external authorization server whose JWT access tokens the gateway accepts.
		OAUTH_ISSUER: issuerUrl.optional(),
		OAUTH_AUDIENCE: z.string().min(1).optional(),
		OAUTH_JWKS_URL: issuerUrl.optional(),
		// The scopes clients should ask the external authorization server for (space-separated).
		OAUTH_SCOPES: z.string().default(""),
		// What makes one of its JWTs an access token rather than an ID token (see acceptsAsAccessToken).
		OAUTH_REQUIRED_TYP: z
			.string()
			.transform((value) => value.toLowerCase().replace(/^application\//, ""))
			.refine((value) => value === "at+jwt", "must be at+jwt (RFC 9068's type), or unset")
			.optional(),
		OAUTH_REQUIRED_SCOPE: z
			.string()
			.regex(/^[\x21\x23-\x5B\x5D-\x7E]+$/, "must be one scope (no spaces or quotes)")
			.optional(),
		// Issuers whose every email address the operator trusts as verified, though they send no email_verified.
		EMAIL_VERIFIED_ISSUERS: list(""),
	})
	.refine((v) => !(v.OIDC_ISSUER && v.OAUTH_ISSUER), {
		message:
			"set OIDC_ISSUER (the gateway signs people in) or OAUTH_ISSUER (an external authorization server), not both",
		path: ["OAUTH_ISSUER"],
	})
	.refine((v) => !v.OIDC_ISSUER || (v.OIDC_CLIENT_ID && v.OIDC_CLIENT_SECRET), {
		message: "OIDC_ISSUER needs OIDC_CLIENT_ID and the OIDC_CLIENT_SECRET secret",
		path: ["OIDC_CLIENT_ID"],
	})
	.refine((v) => v.OAUTH_ISSUER || (v.OAUTH_REQUIRED_TYP === undefined && v.OAUTH_REQUIRED_SCOPE === undefined), {
		message: "OAUTH_REQUIRED_TYP and OAUTH_REQUIRED_SCOPE apply to the tokens of OAUTH_ISSUER, which is not set",
		path: ["OAUTH_REQUIRED_TYP"],
	})
	// A typo here would silently leave every address unverified; the issuer the gateway uses is the only one it can name.
	.refine((v) => v.EMAIL_VERIFIED_ISSUERS.every((issuer) => issuer === v.OIDC_ISSUER || issuer === v.OAUTH_ISSUER), {
		message: "may name only the issuer the gateway uses, exactly as OIDC_ISSUER or OAUTH_ISSUER spells it",
		path: ["EMAIL_VERIFIED_ISSUERS"],
	});

/**
 * How people (not machines) authenticate: "off" (API keys only); "gateway":
 * the gateway is the authorization server and signs people in with an OpenID
 * Connect provider; "external": tokens of another authorization server.
 * API keys work in every mode.
 */
export type OAuthSettings =
	| { mode: "off" }
	| {
			mode: "gateway";
			/** `emailsVerified`: the operator trusts its every address (EMAIL_VERIFIED_ISSUERS). */
			oidc: { issuer: string; clientId: string; clientSecret: string; scopes: string; emailsVerified: boolean };
			/** Seconds an access token, and a sign-in (its refresh token), last. */
			accessTokenTtl: number;
			refreshTokenTtl: number;
	  }
	| {
			mode: "external";
			issuer: string;
			audience: string | null;
			jwksUrl: string | null;
			scopes: string[];
			/** The operator trusts its every address (EMAIL_VERIFIED_ISSUERS). */
			emailsVerified: boolean;
			/** OAUTH_REQUIRED_TYP, OAUTH_REQUIRED_SCOPE: null leaves the default (at+jwt or a scope). */
			requiredTyp: "at+jwt" | null;
			requiredScope: string | null;
	  };

/** The settings: each var in the unit and shape the gateway uses (milliseconds, lists, flags). */
const SettingsSchema = VarsSchema.transform((v) => ({
	adminToken: v.ADMIN_TOKEN,
	sessionSecret: v.SESSION_SECRET,
	/** Signs API keys so the edge can verify them without any read. */
	keySecret: v.KEY_SECRET,
	/** How long a location's KV cache may serve a registry record (KV's `cacheTtl`). */
	kvCacheTtlSeconds: v.KV_CACHE_TTL_SECONDS,
	idleTimeoutMs: v.IDLE_TIMEOUT_SECONDS * 1000,
	touchIntervalMs: v.TOUCH_INTERVAL_SECONDS * 1000,
	/** A session ends this long after it opened, busy or not. */
	maxSessionAgeMs: v.MAX_SESSION_AGE_SECONDS * 1000,
	maxBodyBytes: v.MAX_BODY_BYTES,
	/** Cap on one upstream JSON reply or SSE event, and on one member's whole list (all pages). */
	maxReplyBytes: v.MAX_REPLY_BYTES,
	keyCacheTtlMs: v.KEY_CACHE_TTL_SECONDS * 1000,
	/** How long an edge isolate keeps an endpoint's record (and the server list); 0: not at all. */
	endpointCacheTtlMs: v.ENDPOINT_CACHE_TTL_SECONDS * 1000,
	/** How often an edge isolate sends its tool-call counts to the dashboard's counter; 0: after every call. */
	callCountsFlushMs: v.CALL_COUNTS_FLUSH_SECONDS * 1000,
	/** Each tool call's `tool_call` event is also a log line (TOOL_CALL_LOG=on). */
	toolCallLog: v.TOOL_CALL_LOG === "on",
	upstreamTimeoutMs: v.UPSTREAM_TIMEOUT_SECONDS * 1000,
	/** A session re-verifies with the registry at most this often. */
	recheckIntervalMs: v.RECHECK_INTERVAL_SECONDS * 1000,
	/** A session that cannot be verified this long after its last successful recheck ends. */
	unverifiedLimitMs: v.UNVERIFIED_LIMIT_SECONDS * 1000,
	/** Live sessions one API key may hold at once. */
	maxSessionsPerKey: v.MAX_SESSIONS_PER_KEY,
	/** The period of the rate-limiting bindings, sent as Retry-After with a 429. */
	rateLimitPeriodSeconds: v.RATE_LIMIT_PERIOD_SECONDS,
	/** The per-session buffer streams resume from: at most this many events, bytes, and this old. */
	eventBuffer: {
		maxEvents: v.EVENT_BUFFER_EVENTS,
		maxBytes: v.EVENT_BUFFER_BYTES,
		maxAgeMs: v.EVENT_BUFFER_SECONDS * 1000,
	},
	/** The `retry` the gateway's SSE streams carry: how long a client waits before resuming. */
	sseRetryMs: v.SSE_RETRY_MS,
	/** A listening GET stream is closed (with `retry`) after this long, or at its session's next recheck. */
	listenWindowMs: v.LISTEN_WINDOW_SECONDS * 1000,
	/** Requests one member may have waiting for the client's answer (sampling, elicitation, roots, ping), per session. */
	maxPendingClientRequests: v.MAX_PENDING_CLIENT_REQUESTS,
	/** Long calls held as tasks: a 2026-07-28 call still running after `promoteAfterMs` is answered as a task; results kept at most `ttlMs`. */
	tasks: {
		promoteAfterMs: v.TASK_PROMOTE_AFTER_MS,
		ttlMs: v.TASK_TTL_SECONDS * 1000,
		maxPerSession: v.MAX_TASKS_PER_SESSION,
	},
	allowedOrigins: v.ALLOWED_ORIGINS,
	/** Host names the gateway answers on (`*.example.com` allows subdomains); others get 403. */
	allowedHosts: v.ALLOWED_HOSTS,
	/** Plain-http upstream URLs are accepted only when this is set (local development). */
	allowHttpUpstreams: v.ALLOW_HTTP_UPSTREAMS === "true",
	oauth: oauthSettings(v),
}));
export type Settings = z.output<typeof SettingsSchema>;

const cache = new WeakMap<object, Settings>();

/**
 * Reads settings from the Worker env. Empty strings count as unset, so a var
 * left blank in wrangler.toml takes the default. A configuration that cannot
 * be safe is refused: every request then fails with a `misconfigured` error
 * that says which setting is wrong (never its value).
 */
export function settingsFrom(env: object): Settings {
	const cached = cache.get(env);
	if (cached) return cached;
	const raw = Object.fromEntries(Object.entries(env).filter(([, value]) => typeof value === "string" && value !== ""));
	const parsed = SettingsSchema.safeParse(raw);
	if (!parsed.success) {
		const issue = parsed.error.issues[0];
		throw new GatewayError(
			"misconfigured",
			`The gateway is misconfigured and refuses to serve: ${issue?.path.join(".")}: ${issue?.message}.`,
		);
	}
	const settings = parsed.data;
	cache.set(env, settings);
	return settings;
}

function oauthSettings(v: z.output<typeof VarsSchema>): OAuthSettings {
	if (v.OIDC_ISSUER && v.OIDC_CLIENT_ID && v.OIDC_CLIENT_SECRET) {
		return {
			mode: "gateway",
			oidc: {
				issuer: v.OIDC_ISSUER,
				clientId: v.OIDC_CLIENT_ID,
				clientSecret: v.OIDC_CLIENT_SECRET,
				scopes: v.OIDC_SCOPES,
				emailsVerified: v.EMAIL_VERIFIED_ISSUERS.includes(v.OIDC_ISSUER),
			},
			accessTokenTtl: v.OAUTH_ACCESS_TOKEN_TTL_SECONDS,
			refreshTokenTtl: v.OAUTH_REFRESH_TOKEN_TTL_SECONDS,
		};
	}
	if (v.OAUTH_ISSUER) {
		return {
			mode: "external",
			issuer: v.OAUTH_ISSUER,
			audience: v.OAUTH_AUDIENCE ?? null,
			jwksUrl: v.OAUTH_JWKS_URL ?? null,
			scopes: v.OAUTH_SCOPES.split(/\s+/).filter((scope) => scope.length > 0),
			emailsVerified: v.EMAIL_VERIFIED_ISSUERS.includes(v.OAUTH_ISSUER),
			requiredTyp: v.OAUTH_REQUIRED_TYP === undefined ? null : "at+jwt",
			requiredScope: v.OAUTH_REQUIRED_SCOPE ?? null,
		};
	}
	return { mode: "off" };
}
