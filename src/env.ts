import type { RegistryDO } from "./registry/registry-do.ts";
import type { SessionDO } from "./session/session-do.ts";

/** The bindings and vars of the Worker and its Durable Objects (see wrangler.toml). */
export interface Env {
	SESSIONS: DurableObjectNamespace<SessionDO>;
	REGISTRY: DurableObjectNamespace<RegistryDO>;
	ADMIN_TOKEN?: string;
	SESSION_SECRET?: string;
	IDLE_TIMEOUT_SECONDS?: string;
	TOUCH_INTERVAL_SECONDS?: string;
	MAX_BODY_BYTES?: string;
	MAX_REPLY_BYTES?: string;
	KEY_CACHE_TTL_SECONDS?: string;
	UPSTREAM_TIMEOUT_SECONDS?: string;
	RECHECK_INTERVAL_SECONDS?: string;
	UNVERIFIED_LIMIT_SECONDS?: string;
	ALLOWED_ORIGINS?: string;
	/** Upstream credentials referenced from server headers as `${NAME}`. */
	[name: string]: unknown;
}
