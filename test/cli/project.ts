import type { TestProjectInlineConfiguration } from "vitest/config";

/**
 * The CLI project: `mcpgw` spawned as a user runs it, in Node, against one
 * real gateway under `wrangler dev` and one demo upstream, both started once
 * by its global setup for every test file.
 */
export const cliProject: TestProjectInlineConfiguration = {
	test: {
		name: "cli",
		environment: "node",
		include: ["test/cli/**/*.test.ts"],
		globalSetup: ["./test/cli/global-setup.ts"],
		// A test is a handful of CLI runs, each a Node start (about half a second) and a few admin requests.
		testTimeout: 30_000,
		hookTimeout: 30_000,
	},
};
