import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

export default defineConfig({
	plugins: [
		cloudflareTest({
			wrangler: { configPath: "./wrangler.toml" },
			miniflare: {
				bindings: {
					ADMIN_TOKEN: "test-admin-token",
					SESSION_SECRET: "test-session-secret-0123456789abcdef",
					ALPHA_TOKEN: "alpha-secret",
					// Short timeouts keep failure tests fast; expiry tests use an injected clock.
					UPSTREAM_TIMEOUT_SECONDS: "10",
					KEY_CACHE_TTL_SECONDS: "0",
					ALLOWED_ORIGINS: "https://app.example",
				},
			},
		}),
	],
	test: {
		globalSetup: ["./test/global-setup.ts"],
		testTimeout: 20_000,
	},
});
