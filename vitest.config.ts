import { availableParallelism } from "node:os";
import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { configDefaults, defineConfig } from "vitest/config";
import { cliProject } from "./test/cli/project.ts";
import { pagesProject } from "./test/pages/project.ts";

/** The test project's name; the plugin runs the gateway under test as Worker `vitest-plugin-runner-<name>`. */
const PROJECT = "gateway";
/** The Worker whose Durable Object classes the second edge binds to. */
const GATEWAY = `vitest-plugin-runner-${PROJECT}`;

/** Fixture credentials of the test Worker; nothing here is a real secret. */
const testAdminBearer = "test-admin-token-0123456789abcdefghij";

const bindings = {
	ADMIN_TOKEN: testAdminBearer,
	SESSION_SECRET: "test-session-secret-0123456789abcdef",
	KEY_SECRET: "test-key-secret-0123456789abcdefghijkl",
	TOKEN_VAULT_KEY: "test-vault-key-0123456789abcdefghijkl",
	UPSTREAM_ALPHA_TOKEN: "alpha-secret",
	// Short timeouts keep failure tests fast; expiry tests use an injected clock.
	UPSTREAM_TIMEOUT_SECONDS: "10",
	KEY_CACHE_TTL_SECONDS: "0",
	ENDPOINT_CACHE_TTL_SECONDS: "0",
	// Small enough for a test to exceed with the demo's blob tool.
	MAX_REPLY_BYTES: String(2 * 1024 * 1024),
	ALLOWED_ORIGINS: "https://app.example",
	// The tests' own host; anything else is refused as DNS rebinding.
	ALLOWED_HOSTS: "gateway.test,localhost,127.0.0.1",
	// The test upstreams are plain http on loopback.
	ALLOW_HTTP_UPSTREAMS: "true",
	// API keys only by default, whatever a local .dev.vars from `npm start` says; the OAuth tests
	// run the app with their own settings (test/support/oauth-client.ts).
	OIDC_ISSUER: "",
	OIDC_CLIENT_ID: "",
	OIDC_CLIENT_SECRET: "",
	OAUTH_ISSUER: "",
	// The gateway's identity signing keys (ES256 JWKs made for these tests, not secrets): the current one
	// and the one before a rotation, which the JWKS publishes too.
	IDENTITY_SIGNING_KEY: JSON.stringify({
		kty: "EC",
		crv: "P-256",
		x: "a24-JSafg6edayiotzO983gH7HLJJpACQFz4ZM3PaPs",
		y: "bG5MDFhpjRDHQ9tj-LJ59pT4gzvz9DH3Fk0ZwpG-mzw",
		d: "uQ86ZnZiRLF7G16UV_hTOLMsNgLABpM4Y-ym6cVQycE",
		kid: "test-identity-2026-12",
	}),
	IDENTITY_SIGNING_KEY_PREVIOUS: JSON.stringify({
		kty: "EC",
		crv: "P-256",
		x: "OwkF0oNiqG41u8-tJXwml7bPRyrkbOZKoJNWInxWRb0",
		y: "Z4x_PxQCV3eVt3i0gvIf1yDQDMiPZ2N490i7Khmr1IE",
		d: "sQi7Omy6AfUMlMeU4jR7cf8HLm3nxlUwdVnu817n3PI",
		kid: "test-identity-2026-11",
	}),
};

/**
 * Rate limits of the test Worker: generous for the suite (no test sends more
 * than a few hundred requests with one key), small enough for the limit
 * tests to reach. Failed token lookups and OAuth endpoint calls without
 * CF-Connecting-IP share one bucket each, which the whole suite must stay under.
 */
/** The registry's KV namespace, shared by the gateway and the second edge. */
const REGISTRY_KV_ID = "registry-kv";
/** The gateway's authorization server's grants and tokens, shared by both edges too. */
const OAUTH_KV_ID = "oauth-kv";

const ratelimits = {
	KEY_RATE_LIMITER: { namespace_id: "1001", simple: { limit: 400, period: 60 as const } },
	// More than twice standard's: a high key sends what takes a standard key past its limit, and is not refused.
	KEY_RATE_LIMITER_HIGH: { namespace_id: "1004", simple: { limit: 2_000, period: 60 as const } },
	AUTH_FAILURE_LIMITER: { namespace_id: "1002", simple: { limit: 60, period: 60 as const } },
	OAUTH_LIMITER: { namespace_id: "1003", simple: { limit: 400, period: 60 as const } },
};

export default defineConfig({
	plugins: [
		cloudflareTest(({ inject }) => ({
			wrangler: { configPath: "./wrangler.toml" },
			miniflare: {
				bindings,
				ratelimits,
				kvNamespaces: { REGISTRY_KV: REGISTRY_KV_ID, OAUTH_KV: OAUTH_KV_ID },
				serviceBindings: { EDGE_B: "edge-b" },
				workers: [
					{
						name: "edge-b",
						modules: true,
						scriptPath: inject<string>("secondEdgePath"),
						compatibilityDate: "2026-11-01",
						compatibilityFlags: ["global_fetch_strictly_public", "enable_request_signal"],
						bindings,
						ratelimits,
						// The same namespace as the gateway's: one registry read path for both edges.
						kvNamespaces: { REGISTRY_KV: REGISTRY_KV_ID, OAUTH_KV: OAUTH_KV_ID },
						durableObjects: {
							SESSIONS: { className: "SessionDO", scriptName: GATEWAY },
							REGISTRY: { className: "RegistryDO", scriptName: GATEWAY },
							KEY_SESSIONS: { className: "KeySessionsDO", scriptName: GATEWAY },
							VAULTS: { className: "TokenVaultDO", scriptName: GATEWAY },
						},
					},
				],
			},
		})),
	],
	test: {
		// Test files mostly wait (on workerd, upstreams, the identity provider): two at a time even on
		// two cores, where Vitest's default (cores - 1) would run one. About 140 s instead of 190 s there.
		maxWorkers: Math.max(2, availableParallelism() - 1),
		projects: [
			// The gateway in workerd, with the plugin above (inherited); the page tests are the other project's.
			{
				extends: true,
				test: {
					name: PROJECT,
					globalSetup: ["./test/global-setup.ts"],
					testTimeout: 20_000,
					exclude: [...configDefaults.exclude, "test/pages/**", "test/cli/**"],
				},
			},
			// The pages in a real browser, in Node, with the gateway under `wrangler dev`.
			pagesProject,
			// The mcpgw command line, spawned against a gateway under `wrangler dev`.
			cliProject,
		],
	},
});
