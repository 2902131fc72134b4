/** Values the CLI project's global setup (test/cli/global-setup.ts) hands to its tests via inject(). */
declare module "vitest" {
	export interface ProvidedContext {
		/** The gateway under `wrangler dev`, `http://127.0.0.1:<port>`. */
		cliGatewayUrl: string;
		/** The built gateway's entry module, for a test that serves a gateway of its own. */
		cliGatewayEntry: string;
		/** Its ADMIN_TOKEN, generated for the run. */
		cliAdminToken: string;
		/** The demo upstream's MCP endpoint (scripts/fixtures/upstream-server.ts). */
		cliUpstreamUrl: string;
	}
}

export {};
