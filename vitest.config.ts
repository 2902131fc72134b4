import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

/** The test project's name; the plugin runs the gateway under test as Worker `vitest-plugin-runner-<name>`. */
const PROJECT = "gateway";
/** The Worker whose Durable Object classes the second edge binds to. */
const GATEWAY = `vitest-plugin-runner-${PROJECT}`;

/** Fixture credentials of the test Worker; nothing here is a real secret. */
const testAdminBearer = "test-admin-token-0123456789abcdefghij";

const bindings = {
	ADMIN_TOKEN: testAdminBearer,
	SESSION_SECRET: "test-session-secret-0123456789abcdef",
	UPSTREAM_ALPHA_TOKEN: "alpha-secret",
	// Short timeouts keep failure tests fast; expiry tests use an injected clock.
	UPSTREAM_TIMEOUT_SECONDS: "10",
	KEY_CACHE_TTL_SECONDS: "0",
	// Small enough for a test to exceed with the demo's blob tool.
	MAX_REPLY_BYTES: String(2 * 1024 * 1024),
	ALLOWED_ORIGINS: "https://app.example",
};

export default defineConfig({
	plugins: [
		cloudflareTest(({ inject }) => ({
			wrangler: { configPath: "./wrangler.toml" },
			miniflare: {
				bindings,
				serviceBindings: { EDGE_B: "edge-b" },
				workers: [
					{
						name: "edge-b",
						modules: true,
						scriptPath: inject<string>("secondEdgePath"),
						compatibilityDate: "2026-11-01",
						bindings,
						durableObjects: {
							SESSIONS: { className: "SessionDO", scriptName: GATEWAY },
							REGISTRY: { className: "RegistryDO", scriptName: GATEWAY },
						},
					},
				],
			},
		})),
	],
	test: {
		name: PROJECT,
		globalSetup: ["./test/global-setup.ts"],
		testTimeout: 20_000,
	},
});
