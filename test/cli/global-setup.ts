/**
 * The CLI project's peers, started once for all its test files: the gateway
 * built once and served by `wrangler dev` with temporary state (as `npm run
 * conformance` serves it), and the demo upstream `npm start` runs.
 */
import type { TestProject } from "vitest/node";
import { buildGateway, startGateway } from "../../scripts/conformance/gateway.ts";
import { startUpstream } from "../../scripts/fixtures/upstream-server.ts";
import { Processes } from "../../scripts/processes.ts";

export default async function setup(project: TestProject) {
	const procs = new Processes();
	process.once("exit", () => procs.killAllSync());
	const dir = procs.tempDir("mcp-edge-cli-");
	const upstream = await startUpstream({ name: "demo" });
	const stop = () => Promise.all([procs.stopAll(), upstream.close()]).then(() => undefined);
	try {
		const build = await buildGateway(procs, dir);
		const gateway = await startGateway(procs, build, { name: "gateway for the CLI tests (wrangler dev)", dir });
		project.provide("cliGatewayUrl", gateway.url);
		// The same build, for a test that serves a gateway of its own (its registry and runtime apart from the others').
		project.provide("cliGatewayEntry", build.entry);
		project.provide("cliAdminToken", gateway.adminToken);
		project.provide("cliUpstreamUrl", upstream.url);
	} catch (error) {
		await stop();
		throw error;
	}
	return stop;
}
