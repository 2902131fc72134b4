import type { Env as GatewayEnv } from "../src/env.ts";

// The tests' `env` (cloudflare:test, cloudflare:workers): the gateway's, secrets included, and the
// bindings vitest.config.ts adds for the tests.
declare global {
	namespace Cloudflare {
		interface Env extends GatewayEnv {
			/** The gateway bundled as a second edge Worker (two-edges.test.ts). */
			EDGE_B: Fetcher;
		}
	}
}
