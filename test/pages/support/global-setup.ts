/**
 * The pages project's peers, started once for all its test files: the
 * gateway built once and served by `wrangler dev` on a free loopback port
 * with temporary state (scripts/conformance/gateway.ts, as `npm run
 * conformance` serves it), signing people in at the local OpenID Connect
 * provider (scripts/fixtures/oidc-idp.ts); and, once it is part of the repo,
 * the OAuth upstream (scripts/fixtures/oauth-upstream.ts) whose accounts
 * people connect. What the tests need reaches them with `inject()`.
 */
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { buildGateway, startGateway } from "../../../scripts/conformance/gateway.ts";
import { startIdp } from "../../../scripts/fixtures/oidc-idp.ts";
import { freePort, HOST, Processes } from "../../../scripts/processes.ts";
import { ROOT } from "../../../scripts/wrangler-dev.ts";
import { gatewayCallbackUrls } from "../../../src/auth/provider-callbacks.ts";

/** The gateway's client at the identity provider. A fixture, not a secret. */
const GATEWAY_CLIENT_ID = "mcp-edge-gateway";
/** The OAuth upstream fixture, written on another branch: used once it is here. */
const OAUTH_UPSTREAM_MODULE = join(ROOT, "scripts", "fixtures", "oauth-upstream.ts");

interface OAuthUpstreamModule {
	startOAuthUpstream(options?: { port?: number }): Promise<{ url: string; close(): Promise<void> }>;
}

export default async function setup(project: TestProject) {
	const procs = new Processes();
	// Whatever ends the run, no workerd or wrangler is left behind.
	process.once("exit", () => procs.killAllSync());
	const dir = procs.tempDir("mcp-edge-pages-");
	const closers: Array<() => Promise<void>> = [];
	try {
		const build = await buildGateway(procs, dir);
		// The provider names the gateway's callbacks, so the gateway's port is chosen first.
		const port = await freePort();
		const origin = `http://${HOST}:${port}`;
		const clientSecret = randomBytes(32).toString("base64url");
		const idp = await startIdp({
			clients: [
				{
					client_id: GATEWAY_CLIENT_ID,
					client_secret: clientSecret,
					client_name: "MCP gateway",
					// As npm start registers it: every callback the gateway uses.
					redirect_uris: gatewayCallbackUrls(origin),
				},
			],
		});
		closers.push(() => idp.close());
		const upstream = await startOAuthUpstreamIfPresent();
		if (upstream) closers.push(() => upstream.close());
		const gateway = await startGateway(procs, build, {
			name: "gateway for the page tests (wrangler dev)",
			dir: join(dir, "gateway"),
			port,
			vars: {
				OIDC_ISSUER: idp.issuer,
				OIDC_CLIENT_ID: GATEWAY_CLIENT_ID,
				OIDC_SCOPES: "openid email profile",
				ALLOWED_HOSTS: `${HOST},localhost`,
				ALLOW_HTTP_UPSTREAMS: "true",
			},
			secrets: {
				OIDC_CLIENT_SECRET: clientSecret,
				TOKEN_VAULT_KEY: randomBytes(32).toString("base64url"),
				IDENTITY_SIGNING_KEY: JSON.stringify(signingKey()),
			},
		});
		// PAGES_VERBOSE=1: the gateway's own log on stderr, to see why a page failed.
		if (process.env.PAGES_VERBOSE) gateway.child.onLine((line) => console.error(`gateway: ${line}`));
		project.provide("pagesGatewayUrl", gateway.url);
		project.provide("pagesAdminToken", gateway.adminToken);
		project.provide("pagesIdpIssuer", idp.issuer);
		project.provide("pagesOAuthUpstreamUrl", upstream?.url ?? "");
	} catch (error) {
		await stop(procs, closers);
		throw error;
	}
	return () => stop(procs, closers);
}

async function stop(procs: Processes, closers: Array<() => Promise<void>>): Promise<void> {
	await Promise.all([procs.stopAll(), ...closers.map((close) => close())]);
}

/** The gateway's identity-assertion key: a fresh ES256 private JWK with a key id. */
function signingKey(): Record<string, unknown> {
	const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
	return { ...privateKey.export({ format: "jwk" }), kid: `pages-${randomBytes(4).toString("hex")}`, alg: "ES256" };
}

/** The OAuth upstream on a free port, when its fixture is in the repo; null until then. */
async function startOAuthUpstreamIfPresent(): Promise<{ url: string; close(): Promise<void> } | null> {
	if (!existsSync(OAUTH_UPSTREAM_MODULE)) return null;
	// A path the compiler does not resolve: this branch builds without the fixture.
	const fixture = (await import(OAUTH_UPSTREAM_MODULE)) as OAuthUpstreamModule;
	return fixture.startOAuthUpstream({ port: 0 });
}
