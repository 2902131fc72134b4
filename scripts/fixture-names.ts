/** Names and values shared by the fixture upstream (Node) and the tests (workerd); nothing here may import Node APIs. */

/** A tool name of 70 characters, longer than many model APIs accept once namespaced. */
export const LONG_TOOL_NAME = "summarize_the_quarterly_financial_report_for_the_given_business_unit_xy";

/**
 * The `retry` (ms) of the resumable test upstream's priming events: how long a
 * client waits before it resumes a reply the upstream closed. Short, to keep tests fast.
 */
export const RESUME_RETRY_MS = 20;

/**
 * The gateway's confidential client at the test identity provider
 * (scripts/oidc-idp.ts, started by test/global-setup.ts): what the test
 * Worker's OIDC_CLIENT_ID and OIDC_CLIENT_SECRET name. A fixture, not a secret.
 */
export const IDP_GATEWAY_CLIENT = {
	client_id: "mcp-edge-gateway",
	client_secret: "test-oidc-client-secret-0123456789",
	redirect_uris: ["http://localhost/oauth/callback", "http://gateway.test/oauth/callback"],
	token_endpoint_auth_method: "client_secret_basic",
};

/** The MCP resource the test identity provider issues JWT access tokens for (its `aud`). */
export const IDP_RESOURCE = "http://localhost/mcp";

/** A client of test/oidc-idp.test.ts itself, which signs in without the gateway. */
export const IDP_TEST_CLIENT = {
	client_id: "idp-test",
	client_secret: "idp-test-secret-0123456789",
	redirect_uris: ["http://localhost/test-callback"],
	token_endpoint_auth_method: "client_secret_basic",
};
