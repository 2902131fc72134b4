/**
 * The Worker's env: the bindings and vars of wrangler.toml, as `wrangler types`
 * generates them (`WranglerEnv` in worker-configuration.d.ts; `npm run types`
 * regenerates it, `npm run lint` fails when it is out of date), and the secrets,
 * which wrangler.toml does not list (`wrangler secret put`; locally .dev.vars).
 * The rest of src imports `Env` from here.
 */
export interface Env extends WranglerEnv {
	/** Guards /admin (32+ characters). */
	ADMIN_TOKEN?: string;
	/** Signs session IDs (32+ characters). */
	SESSION_SECRET?: string;
	/** Signs API keys (32+ characters). */
	KEY_SECRET?: string;
	/** The gateway's client secret at the OpenID Connect provider (OIDC_ISSUER). */
	OIDC_CLIENT_SECRET?: string;
	/** Upstream credentials referenced from server headers as `${UPSTREAM_NAME}`. */
	[name: string]: unknown;
}
