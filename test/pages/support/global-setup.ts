/**
 * The pages project's peers, started once for all its test files: the
 * gateway built once and served by `wrangler dev` on a free loopback port
 * with temporary state (scripts/conformance/gateway.ts, as `npm run
 * conformance` serves it), signing people in at the local OpenID Connect
 * provider (scripts/fixtures/oidc-idp.ts), with `npm start`'s demo behind it:
 * its four servers and its access rules (scripts/demo-registry.ts), the
 * provider's client registered with every callback the gateway uses
 * (`gatewayCallbackUrls`), as `npm start` registers it. What the tests need
 * reaches them with `inject()`.
 */
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { buildGateway, startGateway } from "../../../scripts/conformance/gateway.ts";
import { registerDemo } from "../../../scripts/demo-registry.ts";
import { startIdentityUpstream } from "../../../scripts/fixtures/identity-upstream.ts";
import { startModernUpstream } from "../../../scripts/fixtures/modern-upstream.ts";
import { startOAuthUpstream } from "../../../scripts/fixtures/oauth-upstream.ts";
import { startIdp } from "../../../scripts/fixtures/oidc-idp.ts";
import { startUpstream } from "../../../scripts/fixtures/upstream-server.ts";
import { freePort, HOST, Processes } from "../../../scripts/processes.ts";
import { gatewayCallbackUrls } from "../../../src/auth/provider-callbacks.ts";

/** The gateway's client at the identity provider. A fixture, not a secret. */
const GATEWAY_CLIENT_ID = "mcp-edge-gateway";

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
		// npm start's demo servers, each a fixture on a free port.
		const demo = await startUpstream({ name: "demo" });
		closers.push(() => demo.close());
		const modernDemo = await startModernUpstream({ name: "modern-demo", legacy: "reject" });
		closers.push(() => modernDemo.close());
		const oauthDemo = await startOAuthUpstream({ port: 0 });
		closers.push(() => oauthDemo.close());
		const whoamiDemo = await startIdentityUpstream({ jwksUrl: `${origin}/.well-known/jwks.json`, issuer: origin });
		closers.push(() => whoamiDemo.close());
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
				// The call figures after every call, so the dashboard's page tests see a call at once.
				CALL_COUNTS_FLUSH_SECONDS: "0",
			},
			secrets: {
				OIDC_CLIENT_SECRET: clientSecret,
				TOKEN_VAULT_KEY: randomBytes(32).toString("base64url"),
				IDENTITY_SIGNING_KEY: JSON.stringify(signingKey()),
			},
		});
		// PAGES_VERBOSE=1: the gateway's own log on stderr, to see why a page failed.
		if (process.env.PAGES_VERBOSE) gateway.child.onLine((line) => console.error(`gateway: ${line}`));
		const admin = async (method: string, path: string, body: unknown) => {
			const response = await fetch(`${gateway.url}/admin${path}`, {
				method,
				headers: { authorization: `Bearer ${gateway.adminToken}`, "content-type": "application/json" },
				body: JSON.stringify(body),
				signal: AbortSignal.timeout(10_000),
			});
			if (!response.ok) throw new Error(`${method} /admin${path} failed: ${response.status} ${await response.text()}`);
		};
		await registerDemo(admin, {
			demo: demo.url,
			modernDemo: modernDemo.url,
			oauthDemo: oauthDemo.url,
			whoamiDemo: whoamiDemo.url,
		});
		project.provide("pagesGatewayUrl", gateway.url);
		project.provide("pagesAdminToken", gateway.adminToken);
		project.provide("pagesIdpIssuer", idp.issuer);
		project.provide("pagesOAuthUpstreamUrl", oauthDemo.url);
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
