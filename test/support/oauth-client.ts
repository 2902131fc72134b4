import { createExecutionContext, env } from "cloudflare:test";
import { type OAuthClientProvider, UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type {
	OAuthClientInformationMixed,
	OAuthClientMetadata,
	OAuthTokens,
} from "@modelcontextprotocol/sdk/shared/auth.js";
import { CfWorkerJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/cfworker";
import { afterEach, expect } from "vitest";
import { Browser } from "../../scripts/fixtures/browser.ts";
import { createApp } from "../../src/edge/app.ts";
import type { Env } from "../../src/env.ts";
import { admin, uniqueName } from "./gateway.ts";
import { issuerCall } from "./jwt-issuer.ts";

/** OAuth tests run on a loopback origin: OAuth allows plain http only there. */
export const ORIGIN = "http://localhost";
/** Where the test's MCP client wants its authorization code (it is never fetched). */
export const CLIENT_REDIRECT = "http://127.0.0.1:33418/callback";

/**
 * The gateway with OAuth settings of the test's choosing, as a fetch: its own
 * origins (ORIGIN, or the hosts of one deployment a test names) go to the
 * Worker app under `settings` (the Durable Objects and KV namespaces are the
 * test Worker's), everything else to the network.
 */
export function gatewayWith(settings: Partial<Env>, origins: readonly string[] = [ORIGIN]): typeof fetch {
	const app = createApp();
	const oauthEnv = { ...env, ...settings } as Env;
	return async (input, init) => {
		const request = new Request(input, init);
		if (!origins.includes(new URL(request.url).origin)) return fetch(request);
		return app.fetch(request, oauthEnv, createExecutionContext());
	};
}

/** An MCP client's OAuth state, in memory: what a desktop client keeps in its keychain. */
export class MemoryOAuthProvider implements OAuthClientProvider {
	client: OAuthClientInformationMixed | undefined;
	saved: OAuthTokens | undefined;
	verifier = "";
	/** Where the client sent its user last. */
	authorizationUrl: URL | undefined;

	constructor(
		readonly clientMetadata: OAuthClientMetadata = {
			client_name: "Test MCP Client",
			redirect_uris: [CLIENT_REDIRECT],
			grant_types: ["authorization_code", "refresh_token"],
			response_types: ["code"],
			token_endpoint_auth_method: "none",
		},
		readonly clientMetadataUrl?: string,
	) {}

	get redirectUrl(): string {
		return CLIENT_REDIRECT;
	}
	clientInformation() {
		return this.client;
	}
	saveClientInformation(information: OAuthClientInformationMixed) {
		this.client = information;
	}
	tokens() {
		return this.saved;
	}
	saveTokens(tokens: OAuthTokens) {
		this.saved = tokens;
	}
	redirectToAuthorization(url: URL) {
		this.authorizationUrl = url;
	}
	saveCodeVerifier(verifier: string) {
		this.verifier = verifier;
	}
	codeVerifier() {
		return this.verifier;
	}
}

/**
 * A person's access token through `gateway`, as an SDK client gets it: its
 * first connect is refused (401), it is sent to sign in, a scripted browser
 * signs `login` in (password `demo`) where it was sent, and the code comes
 * back to the client. `authorizationUrl` is where the client was sent.
 */
export async function signInAs(gateway: typeof fetch, path: string, login: string) {
	const provider = new MemoryOAuthProvider();
	const first = oauthClient(path, provider, gateway);
	await expect(first.client.connect(first.transport)).rejects.toBeInstanceOf(UnauthorizedError);
	const authorizationUrl = provider.authorizationUrl;
	if (!authorizationUrl) throw new Error("the client was not sent to sign in");
	const atClient = (url: URL) => url.href.startsWith(CLIENT_REDIRECT);
	const browser = new Browser();
	const loginPage = await browser.get(authorizationUrl, { stopAt: atClient });
	const landed = await browser.submit(loginPage, { fields: { login, password: "demo" } }, { stopAt: atClient });
	const code = landed.url.searchParams.get("code");
	if (!code) throw new Error(`no code: ${landed.url.href}`);
	await first.transport.finishAuth(code);
	return { provider, token: provider.saved?.access_token ?? "", authorizationUrl };
}

/** The SDK client on `path` with OAuth (and the cfworker validator, since Workers forbid Ajv). */
export function oauthClient(path: string, provider: OAuthClientProvider, gateway: typeof fetch) {
	const transport = new StreamableHTTPClientTransport(new URL(`${ORIGIN}${path}`), {
		authProvider: provider,
		fetch: gateway,
	});
	const client = new Client(
		{ name: "oauth-test", version: "1.0.0" },
		{ jsonSchemaValidator: new CfWorkerJsonSchemaValidator() },
	);
	return { client, transport };
}

/**
 * Creates access rules for one test file and deletes each test's rules after
 * it: the first matching rule decides, so one test's rule must not decide another's.
 */
export function testAccessRules(): (body: unknown) => Promise<string> {
	const rules: string[] = [];
	afterEach(async () => {
		for (const name of rules.splice(0)) await admin("DELETE", `/access-rules/${name}`);
	});
	return async (body) => {
		const name = uniqueName("rule");
		const response = await admin("PUT", `/access-rules/${name}`, body);
		if (response.status !== 201) throw new Error(`access rule: ${await response.text()}`);
		rules.push(name);
		return name;
	};
}

/** A person's access token at `issuer` for the gateway's resource (OAUTH_ISSUER = issuer). */
export async function personToken(issuer: string, sub: string, email: string): Promise<string> {
	const now = Math.floor(Date.now() / 1000);
	const claims = {
		iss: issuer,
		sub,
		aud: `${ORIGIN}/mcp`,
		scope: "mcp",
		email,
		email_verified: true,
		iat: now,
		exp: now + 600,
	};
	return (await issuerCall<{ token: string }>(issuer, "/sign", { claims })).token;
}
