/**
 * The gateway's addresses the organisation's OpenID Connect provider sends
 * people back to, one per way of signing in. Every one must be registered as
 * a redirect URI of the gateway's client at the provider, or that sign-in
 * ends on the provider's `invalid_redirect_uri`: `npm start`, the demo
 * provider and the page tests all register `gatewayCallbackUrls`, so a
 * callback added here is registered everywhere at once.
 */

/** A client's authorization at the gateway's own authorization server (`/authorize`). */
export const CALLBACK_PATH = "/oauth/callback";
/** The sign-in of the gateway's own pages: `/connections`, a connect link's confirmation, the dashboard. */
export const SIGN_IN_CALLBACK_PATH = "/connections/sign-in-callback";

const PROVIDER_CALLBACK_PATHS = [CALLBACK_PATH, SIGN_IN_CALLBACK_PATH] as const;

/**
 * Every redirect URI the gateway at `origin` (`http://127.0.0.1:8787`, no
 * path) uses at its OpenID Connect provider.
 *
 * @example
 * gatewayCallbackUrls("http://127.0.0.1:8787")
 * // ["http://127.0.0.1:8787/oauth/callback", "http://127.0.0.1:8787/connections/sign-in-callback"]
 */
export function gatewayCallbackUrls(origin: string): string[] {
	return PROVIDER_CALLBACK_PATHS.map((path) => new URL(path, origin).href);
}
