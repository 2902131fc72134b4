/** Values the pages project's global setup (test/pages/support/global-setup.ts) hands to its tests via inject(). */
declare module "vitest" {
	export interface ProvidedContext {
		/** The gateway under `wrangler dev`, `http://127.0.0.1:<port>`, signing people in at `pagesIdpIssuer`. */
		pagesGatewayUrl: string;
		/** Its ADMIN_TOKEN, generated for the run. */
		pagesAdminToken: string;
		/** The local OpenID Connect provider (scripts/fixtures/oidc-idp.ts). */
		pagesIdpIssuer: string;
		/** `oauth-demo`'s MCP endpoint (scripts/fixtures/oauth-upstream.ts), registered as npm start registers it. */
		pagesOAuthUpstreamUrl: string;
	}
}

export {};
