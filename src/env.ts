/**
 * The Worker's env: the bindings and vars of wrangler.toml, as `wrangler types`
 * generates them (`WranglerEnv` in worker-configuration.d.ts; `npm run types`
 * regenerates it, `npm run lint` fails when it is out of date), and the secrets,
 * which wrangler.toml does not list (`wrangler secret put`; locally .dev.vars).
 * The rest of src imports `Env` from here.
 */
export interface Env extends Omit<WranglerEnv, "LOADER"> {
	/**
	 * The Worker Loader binding code mode runs programs through (docs/code-mode.md). Optional: a
	 * deployment without it works, and refuses `disclosure: "code"` at PUT.
	 */
	LOADER?: WorkerLoader;
	/** Guards /admin (32+ characters). */
	ADMIN_TOKEN?: string;
	/** Signs session IDs (32+ characters). */
	SESSION_SECRET?: string;
	/** Signs API keys (32+ characters). */
	KEY_SECRET?: string;
	/** The gateway's client secret at the OpenID Connect provider (OIDC_ISSUER). */
	OIDC_CLIENT_SECRET?: string;
	/**
	 * Headers of every OTLP export (`k=v,k2=v2`, percent-encoded): the collector's key. The other
	 * OTEL_* variables are plain settings (wrangler.toml, [vars]); src/telemetry/otel-config.ts reads them all.
	 */
	OTEL_EXPORTER_OTLP_HEADERS?: string;
	/** One signal's own export headers, over OTEL_EXPORTER_OTLP_HEADERS (e.g. a metrics dataset). */
	OTEL_EXPORTER_OTLP_TRACES_HEADERS?: string;
	OTEL_EXPORTER_OTLP_METRICS_HEADERS?: string;
	/**
	 * Signs the identity assertions `identity` servers get: an ES256 (P-256) private JWK as JSON,
	 * with a `kid`. Its public half is published at /.well-known/jwks.json.
	 */
	IDENTITY_SIGNING_KEY?: string;
	/** The key before a rotation (its private or public JWK): published in the JWKS, never used to sign. */
	IDENTITY_SIGNING_KEY_PREVIOUS?: string;
	/**
	 * Seals the people's upstream tokens in their vault objects (32+ characters; an AES-256-GCM
	 * key is derived from it with HKDF). Changing it without keeping the old one as
	 * TOKEN_VAULT_KEY_PREVIOUS makes every stored connection unreadable: people connect again.
	 */
	TOKEN_VAULT_KEY?: string;
	/** The vault's previous key while it rotates: opens what it sealed, never seals; values are sealed again under TOKEN_VAULT_KEY at their next write. */
	TOKEN_VAULT_KEY_PREVIOUS?: string;
	/**
	 * Optional Workers Analytics Engine dataset: one data point per tool call (`tool_call`
	 * events; columns in docs/observability.md). Unbound, the events are log lines and span events only.
	 */
	TOOL_CALLS?: AnalyticsEngineDataset;
	/** Upstream credentials referenced from server headers as `${UPSTREAM_NAME}`. */
	[name: string]: unknown;
}
