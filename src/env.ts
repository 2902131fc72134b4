import type { KeySessionsDO } from "./registry/key-sessions-do.ts";
import type { RegistryDO } from "./registry/registry-do.ts";
import type { SessionDO } from "./session/session-do.ts";

/** The bindings and vars of the Worker and its Durable Objects (see wrangler.toml). */
export interface Env {
	SESSIONS: DurableObjectNamespace<SessionDO>;
	REGISTRY: DurableObjectNamespace<RegistryDO>;
	KEY_SESSIONS: DurableObjectNamespace<KeySessionsDO>;
	/** The registry's read path, written through by the RegistryDO (see src/registry/kv-records.ts). */
	REGISTRY_KV: KVNamespace;
	/** Grants, tokens and clients of the gateway's own OAuth authorization server (OIDC_ISSUER set). */
	OAUTH_KV?: KVNamespace;
	/** Requests per API key (wrangler.toml `[[ratelimits]]`); absent: not limited. */
	KEY_RATE_LIMITER?: RateLimit;
	/** Failed token lookups per client IP; absent: not limited. */
	AUTH_FAILURE_LIMITER?: RateLimit;
	/** Calls to the authorization server's register, authorize and token endpoints per client IP; absent: not limited. */
	OAUTH_LIMITER?: RateLimit;
	ADMIN_TOKEN?: string;
	SESSION_SECRET?: string;
	KEY_SECRET?: string;
	KV_CACHE_TTL_SECONDS?: string;
	IDLE_TIMEOUT_SECONDS?: string;
	TOUCH_INTERVAL_SECONDS?: string;
	MAX_BODY_BYTES?: string;
	MAX_REPLY_BYTES?: string;
	KEY_CACHE_TTL_SECONDS?: string;
	ENDPOINT_CACHE_TTL_SECONDS?: string;
	UPSTREAM_TIMEOUT_SECONDS?: string;
	RECHECK_INTERVAL_SECONDS?: string;
	UNVERIFIED_LIMIT_SECONDS?: string;
	ALLOWED_ORIGINS?: string;
	ALLOWED_HOSTS?: string;
	ALLOW_HTTP_UPSTREAMS?: string;
	MAX_SESSION_AGE_SECONDS?: string;
	MAX_SESSIONS_PER_KEY?: string;
	RATE_LIMIT_PERIOD_SECONDS?: string;
	EVENT_BUFFER_EVENTS?: string;
	EVENT_BUFFER_BYTES?: string;
	EVENT_BUFFER_SECONDS?: string;
	SSE_RETRY_MS?: string;
	LISTEN_WINDOW_SECONDS?: string;
	MAX_PENDING_CLIENT_REQUESTS?: string;
	OIDC_ISSUER?: string;
	OIDC_CLIENT_ID?: string;
	OIDC_CLIENT_SECRET?: string;
	OIDC_SCOPES?: string;
	OAUTH_ACCESS_TOKEN_TTL_SECONDS?: string;
	OAUTH_REFRESH_TOKEN_TTL_SECONDS?: string;
	OAUTH_ISSUER?: string;
	OAUTH_AUDIENCE?: string;
	OAUTH_JWKS_URL?: string;
	OAUTH_SCOPES?: string;
	OAUTH_REQUIRED_SCOPE?: string;
	OAUTH_REQUIRED_TYP?: string;
	EMAIL_VERIFIED_ISSUERS?: string;
	/** Upstream credentials referenced from server headers as `${UPSTREAM_NAME}`. */
	[name: string]: unknown;
}
