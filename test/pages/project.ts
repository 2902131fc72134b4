import type { TestProjectInlineConfiguration } from "vitest/config";

/**
 * The pages project: the gateway's people-facing pages (the sign-in and the
 * consent after it, the refusal, `/`, `/connections`, `/admin/docs`, the
 * identity provider's login) driven in Debian's Chromium by
 * playwright-core. It runs in Node: the global setup builds the gateway
 * once and serves it under `wrangler dev` with the local identity provider,
 * as `npm run conformance` does; each test file opens one browser, each test
 * a fresh context.
 */
export const pagesProject: TestProjectInlineConfiguration = {
	test: {
		name: "pages",
		environment: "node",
		include: ["test/pages/**/*.test.ts"],
		globalSetup: ["./test/pages/support/global-setup.ts"],
		// A page flow is a handful of navigations through the gateway and the identity provider.
		testTimeout: 20_000,
		hookTimeout: 30_000,
	},
};
