import { availableParallelism } from "node:os";
import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { configDefaults, defineConfig } from "vitest/config";
import {
	APPROVAL_WEBHOOK_SECRET,
	GATEWAY_OTLP_TENANT,
	GUARD_WEBHOOK_SECRET,
	GUARD_WEBHOOK_WRONG_SECRET,
} from "./scripts/fixtures/fixture-names.ts";
import { cliProject } from "./test/cli/project.ts";
import { pagesProject } from "./test/pages/project.ts";

/** The test project's name; the plugin runs the gateway under test as Worker `vitest-plugin-runner-<name>`. */
const PROJECT = "gateway";
/** The project of the tests that need the whole gateway (edge and Durable Objects) exporting telemetry. */
const TELEMETRY_PROJECT = "telemetry";
/** Its test files; the gateway project leaves them out. */
const TELEMETRY_TESTS = "test/telemetry-*.test.ts";

/** Fixture credentials of the test Worker; nothing here is a real secret. */
const testAdminBearer = "test-admin-token-0123456789abcdefghij";

const testBindings = {
	ADMIN_TOKEN: testAdminBearer,
	SESSION_SECRET: "test-session-secret-0123456789abcdef",
	KEY_SECRET: "test-key-secret-0123456789abcdefghijkl",
	TOKEN_VAULT_KEY: "test-vault-key-0123456789abcdefghijkl",
	UPSTREAM_ALPHA_TOKEN: "alpha-secret",
	// The API key the OpenAPI tests fill the petstore documents' api_key scheme with.
	UPSTREAM_PETSTORE_KEY: "special-key",
	// What approval notices are signed with; the approval webhook receiver checks it.
	UPSTREAM_APPROVAL_WEBHOOK_SECRET: APPROVAL_WEBHOOK_SECRET,
	// The guard webhook receiver's signing secret, and one it refuses (test/guard-webhook.test.ts).
	UPSTREAM_GUARD_WEBHOOK_SECRET: GUARD_WEBHOOK_SECRET,
	UPSTREAM_GUARD_WEBHOOK_WRONG: GUARD_WEBHOOK_WRONG_SECRET,
	// Short timeouts keep failure tests fast; expiry tests use an injected clock.
	UPSTREAM_TIMEOUT_SECONDS: "10",
	KEY_CACHE_TTL_SECONDS: "0",
	ENDPOINT_CACHE_TTL_SECONDS: "0",
	// Tool-call counts sent after every call: a test that waits for its request's background work
	// (waitOnExecutionContext) would otherwise wait out the 10 s batching of the dashboard's counter.
	CALL_COUNTS_FLUSH_SECONDS: "0",
	// The tests read tool calls' accounts from their log lines (off by default: test/observability-off.test.ts).
	TOOL_CALL_LOG: "on",
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

/**
 * Telemetry off, whatever a local .dev.vars from `npm start` says: no test but those of the
 * telemetry project exports anything, and none says anything to a port nobody listens on.
 */
const telemetryOff = {
	OTEL_EXPORTER_OTLP_ENDPOINT: "",
	OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "",
	OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: "",
};

/**
 * Telemetry of the whole gateway to the test receiver's tenant GATEWAY_OTLP_TENANT (the project runs
 * one file at a time, so that tenant holds one file's exports), metrics and spans at every flush.
 */
function telemetryTo(otlpPort: number): Record<string, string> {
	return {
		OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${otlpPort}/t/${GATEWAY_OTLP_TENANT}`,
		OTEL_SERVICE_NAME: "mcp-edge-gateway-test",
		OTEL_METRIC_EXPORT_INTERVAL: "1",
		// Spans at every flush too, not coalesced: a test sees what one request recorded.
		OTEL_BSP_SCHEDULE_DELAY: "0",
		// A stalled collector in a test should not hold the test Worker's exports for long.
		OTEL_BSP_EXPORT_TIMEOUT: "2000",
	};
}

/** The gateway under test in workerd, as project `project`, with telemetry on or off. */
function gatewayWorker(project: string, telemetry: "on" | "off") {
	/** The Worker whose Durable Object classes the second edge binds to. */
	const GATEWAY = `vitest-plugin-runner-${project}`;
	return cloudflareTest(({ inject }) => {
		const bindings = {
			...testBindings,
			...(telemetry === "on" ? telemetryTo(inject<number>("otlpPort")) : telemetryOff),
		};
		return {
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
							CALL_COUNTS: { className: "CallCountsDO", scriptName: GATEWAY },
							CONNECTORS: { className: "ConnectorDO", scriptName: GATEWAY },
						},
					},
				],
			},
		};
	});
}

export default defineConfig({
	test: {
		// Test files mostly wait (on workerd, upstreams, the identity provider): two at a time even on
		// two cores, where Vitest's default (cores - 1) would run one. About 140 s instead of 190 s there.
		maxWorkers: Math.max(2, availableParallelism() - 1),
		projects: [
			// The gateway in workerd, telemetry off; the page tests and the telemetry tests are the other projects'.
			{
				extends: true,
				plugins: [gatewayWorker(PROJECT, "off")],
				test: {
					name: PROJECT,
					// One isolate per worker for all its files: the gateway's modules load once per worker instead
					// of once per file (most of the project's time). Each file starts with the isolate's caches
					// empty (test/support/fresh-isolate.ts), and leaves the registry as it found it for others'
					// people (access rules it wrote are removed).
					isolate: false,
					setupFiles: ["./test/support/fresh-isolate.ts"],
					globalSetup: ["./test/global-setup.ts"],
					testTimeout: 20_000,
					exclude: [...configDefaults.exclude, "test/pages/**", "test/cli/**", TELEMETRY_TESTS],
				},
			},
			// The gateway in workerd exporting its telemetry to the test OTLP receiver, one file at a time.
			{
				extends: true,
				plugins: [gatewayWorker(TELEMETRY_PROJECT, "on")],
				test: {
					name: TELEMETRY_PROJECT,
					globalSetup: ["./test/global-setup.ts"],
					testTimeout: 20_000,
					include: [TELEMETRY_TESTS],
					fileParallelism: false,
				},
			},
			// The pages in a real browser, in Node, with the gateway under `wrangler dev`.
			pagesProject,
			// The mcpgw command line, spawned against a gateway under `wrangler dev`.
			cliProject,
		],
	},
});
