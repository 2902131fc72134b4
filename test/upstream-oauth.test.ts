import { beforeEach, describe, expect, inject, it } from "vitest";
import type { OAuthUpstreamConfig, OAuthUpstreamStats } from "../scripts/fixtures/control-shapes.ts";
import { OAUTH_UPSTREAM_STATIC_CLIENT } from "../scripts/fixtures/fixture-names.ts";
import {
	authorizationUrl,
	completeAuthorization,
	type NewConnection,
	type PendingAuthorization,
} from "../src/credentials/authorization-flow.ts";
import { type RefusalReason, UpstreamAuthorizationRefused } from "../src/credentials/authorization-refused.ts";
import {
	type ClientStore,
	clientFor,
	clientMetadataDocument,
	connectCallbackUrl,
	type OAuthServerAuth,
} from "../src/credentials/client-registration.ts";
import { MAX_OAUTH_REPLY_BYTES, type OAuthClientSettings } from "../src/credentials/guarded-fetch.ts";
import { oauthTokenClient, tokenClientWith } from "../src/credentials/oauth-tokens.ts";
import { type OAuthClient, RefreshRefused, type StoredConnection } from "../src/credentials/stored-connection.ts";
import { tokenSetOf } from "../src/credentials/token-set.ts";
import { discoverUpstreamAuthorization, type UpstreamAuthorization } from "../src/credentials/upstream-discovery.ts";
import { serveOrigin } from "../src/upstream/served-origins.ts";
import { eventually } from "./support/eventually.ts";

const origin = `http://127.0.0.1:${inject("oauthUpstreamPort")}`;
const serverUrl = `${origin}/mcp`;
const GATEWAY = "https://gateway.test";
const redirectUri = connectCallbackUrl(GATEWAY);
const settings: OAuthClientSettings = { allowHttpUpstreams: true };
const vars = { ALLOW_HTTP_UPSTREAMS: "true" };

async function control(path: string, body?: OAuthUpstreamConfig): Promise<void> {
	const response = await fetch(`${origin}/_control/${path}`, {
		method: "POST",
		headers: { "content-type": "application/json" },
		body: JSON.stringify(body ?? {}),
	});
	expect(response.status).toBe(200);
	await response.body?.cancel();
}

async function stats(): Promise<OAuthUpstreamStats> {
	return (await (await fetch(`${origin}/_stats`)).json()) as OAuthUpstreamStats;
}

/** A ClientStore in memory, as the registry keeps one per server. */
function memoryStore(): ClientStore & { kept: OAuthClient | null } {
	const store = {
		kept: null as OAuthClient | null,
		get: async () => store.kept,
		put: async (client: OAuthClient) => {
			store.kept = client;
		},
		drop: async () => {
			store.kept = null;
		},
	};
	return store;
}

/** A fetch that counts what it sends, by method and path. */
function countingFetch(): { fetch: typeof fetch; sent: string[] } {
	const sent: string[] = [];
	return {
		sent,
		fetch: async (input, init) => {
			const url = new URL(input instanceof Request ? input.url : input);
			sent.push(`${init?.method ?? "GET"} ${url.pathname}`);
			return fetch(input, init);
		},
	};
}

/** The person at the AS's sign-in page: picks `user` and submits; returns where the AS sends the browser. */
async function signIn(authorizeUrl: string, user: string): Promise<string> {
	const page = await fetch(authorizeUrl, { redirect: "manual" });
	const html = await page.text();
	expect(page.status, html).toBe(200);
	const flow = /name="flow" value="([^"]+)"/.exec(html)?.[1] ?? "";
	const login = await fetch(`${origin}/authorize/login`, {
		method: "POST",
		redirect: "manual",
		body: new URLSearchParams({ flow, user }),
	});
	await login.body?.cancel();
	expect(login.status).toBe(302);
	return login.headers.get("location") ?? "";
}

interface Connected {
	authorization: UpstreamAuthorization;
	connection: StoredConnection;
}

/** The whole connect path for `user`: discovery, client, authorization URL, sign-in, completion. */
async function connect(
	user: string,
	options: { auth?: OAuthServerAuth; store?: ClientStore; vars?: Record<string, unknown> } = {},
): Promise<Connected> {
	const { authorization, pending, callbackUrl } = await startAndSignIn(user, options);
	const connection = await completeAuthorization({
		callbackUrl,
		pending,
		authorization,
		vars: options.vars ?? vars,
		settings,
		store: options.store,
	});
	return { authorization, connection: stored(connection) };
}

async function startAndSignIn(
	user: string,
	options: { auth?: OAuthServerAuth; store?: ClientStore } = {},
): Promise<{ authorization: UpstreamAuthorization; pending: PendingAuthorization; callbackUrl: string; url: string }> {
	const authorization = await discoverUpstreamAuthorization({ serverUrl, settings });
	const client = await clientFor({
		auth: options.auth ?? {},
		authorization,
		origin: GATEWAY,
		store: options.store ?? memoryStore(),
		settings,
	});
	const { url, pending } = await authorizationUrl({ authorization, client, redirectUri, scopes: ["mcp"] });
	return { authorization, pending, url, callbackUrl: await signIn(url, user) };
}

function stored(connection: NewConnection): StoredConnection {
	return { ...connection, server: "oauth-demo", generation: "g1", connectedAt: Date.now() };
}

/** Calls `whoami` at the upstream with `token` over a fresh MCP session; the HTTP status when it refuses. */
async function whoami(token: string): Promise<{ status: number; subject?: string; clientId?: string }> {
	const headers = {
		authorization: `Bearer ${token}`,
		"content-type": "application/json",
		accept: "application/json, text/event-stream",
	};
	const rpc = (sessionId: string | null, body: unknown) =>
		fetch(serverUrl, {
			method: "POST",
			headers: {
				...headers,
				...(sessionId ? { "mcp-session-id": sessionId, "mcp-protocol-version": "2025-11-25" } : {}),
			},
			body: JSON.stringify(body),
		});
	const init = await rpc(null, {
		jsonrpc: "2.0",
		id: 1,
		method: "initialize",
		params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "test", version: "1" } },
	});
	await init.text();
	if (init.status !== 200) return { status: init.status };
	const sessionId = init.headers.get("mcp-session-id");
	await (await rpc(sessionId, { jsonrpc: "2.0", method: "notifications/initialized" })).text();
	const call = await rpc(sessionId, {
		jsonrpc: "2.0",
		id: 2,
		method: "tools/call",
		params: { name: "whoami", arguments: {} },
	});
	const text = await call.text();
	const data = text.split("\n").find((line) => line.startsWith("data: "));
	const reply = JSON.parse(data ? data.slice(6) : text) as {
		result: { structuredContent: { subject: string; clientId: string } };
	};
	return { status: call.status, ...reply.result.structuredContent };
}

async function sha256(text: string): Promise<string> {
	const bytes = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
	return [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** Expects `promise` to be refused for `reason`, with a sentence a person can read. */
async function expectRefused(promise: Promise<unknown>, reason: RefusalReason, sentence: RegExp): Promise<void> {
	const error = await promise.then(
		() => null,
		(caught: unknown) => caught,
	);
	expect(error).toBeInstanceOf(UpstreamAuthorizationRefused);
	const refused = error as UpstreamAuthorizationRefused;
	expect({ reason: refused.reason, message: refused.message }).toEqual({
		reason,
		message: expect.stringMatching(sentence),
	});
	expect(refused.message).toMatch(/^[A-Z].*\.$/);
}

beforeEach(async () => {
	await control("reset");
});

describe("discovery of an upstream's authorization server", () => {
	it("follows the upstream's 401 challenge to RFC 9728 and RFC 8414 metadata", async () => {
		const counting = countingFetch();
		const found = await discoverUpstreamAuthorization({ serverUrl, settings: { ...settings, fetch: counting.fetch } });
		expect(found).toMatchObject({
			resource: serverUrl,
			issuer: `${origin}/`,
			authorizationEndpoint: `${origin}/authorize`,
			tokenEndpoint: `${origin}/token`,
			registrationEndpoint: `${origin}/register`,
			revocationEndpoint: `${origin}/revoke`,
			cimdSupported: false,
			issParameterSupported: true,
			scopesSupported: ["mcp"],
		});
		expect(counting.sent).toEqual([
			"POST /mcp",
			"GET /.well-known/oauth-protected-resource/mcp",
			"GET /.well-known/oauth-authorization-server",
		]);
	});

	it("takes a challenge already received without asking the upstream again", async () => {
		const counting = countingFetch();
		const challenge = `Bearer error="invalid_token", resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp"`;
		await discoverUpstreamAuthorization({ serverUrl, challenge, settings: { ...settings, fetch: counting.fetch } });
		expect(counting.sent).not.toContain("POST /mcp");
		expect(counting.sent).toHaveLength(2);
	});

	it("falls back to the well-known URL for the server's path when the challenge names no metadata", async () => {
		const found = await discoverUpstreamAuthorization({ serverUrl, challenge: 'Bearer realm="demo"', settings });
		expect(found.issuer).toBe(`${origin}/`);
	});
});

/** A served origin of this file's own: what a connector or a document stands in for, answered in-process. */
const SERVED = "https://served-test.invalid";
const servedUrl = `${SERVED}/private/mcp`;
const servedMetadataUrl = `${SERVED}/.well-known/oauth-protected-resource/private/mcp`;

/**
 * Serves SERVED as a connector does for the fixture: a POST to the MCP address is the upstream's 401 with
 * `resource_metadata` naming `named`, and the server's well-known address answers the upstream's metadata
 * (which names the upstream's own address as the resource). Returns what it was asked, by method and URL.
 */
function serveFixture(named: string): string[] {
	const asked: string[] = [];
	serveOrigin(SERVED, async (input, init) => {
		asked.push(`${init.method ?? "GET"} ${input}`);
		if (input === servedUrl) {
			return new Response(null, {
				status: 401,
				headers: { "www-authenticate": `Bearer resource_metadata="${named}"` },
			});
		}
		if (input === servedMetadataUrl) return fetch(`${origin}/.well-known/oauth-protected-resource/mcp`);
		return new Response("not here", { status: 404 });
	});
	return asked;
}

describe("discovery of a served server (an address the gateway serves itself, as a connector's)", () => {
	it("reads the metadata through the served fetcher and accepts the resource it names, which tokens are then asked for", async () => {
		const asked = serveFixture(servedMetadataUrl);
		const found = await discoverUpstreamAuthorization({ serverUrl: servedUrl, settings });
		expect(found).toMatchObject({ resource: serverUrl, issuer: `${origin}/`, tokenEndpoint: `${origin}/token` });
		// The upstream's side through the served fetcher; the authorization server over the network.
		expect(asked).toEqual([`POST ${servedUrl}`, `GET ${servedMetadataUrl}`]);
		const client = await clientFor({ auth: {}, authorization: found, origin: GATEWAY, store: memoryStore(), settings });
		const { url } = await authorizationUrl({ authorization: found, client, redirectUri, scopes: ["mcp"] });
		expect(new URL(url).searchParams.get("resource")).toBe(serverUrl);
	});

	it("refuses metadata a served server's challenge names anywhere but its own well-known address, another served server's included", async () => {
		const asked = serveFixture(`${SERVED}/.well-known/oauth-protected-resource/another/mcp`);
		await expectRefused(
			discoverUpstreamAuthorization({ serverUrl: servedUrl, settings }),
			"resource_mismatch",
			/names its protected resource metadata at another address/,
		);
		expect(asked).toEqual([`POST ${servedUrl}`]);
	});
});

describe("connecting a person", () => {
	it("registers dynamically, then alice's code flow with PKCE and resource gives a token whoami answers as alice", async () => {
		const store = memoryStore();
		const { authorization, pending, url, callbackUrl } = await startAndSignIn("alice", { store });
		const sent = new URL(url);
		expect(Object.fromEntries(sent.searchParams)).toMatchObject({
			response_type: "code",
			code_challenge_method: "S256",
			resource: serverUrl,
			redirect_uri: redirectUri,
			scope: "mcp",
			state: pending.state,
		});
		expect(new URL(callbackUrl).searchParams.get("iss")).toBe(`${origin}/`);
		const connection = await completeAuthorization({ callbackUrl, pending, authorization, vars, settings, store });
		expect(connection).toMatchObject({
			issuer: `${origin}/`,
			tokenEndpoint: `${origin}/token`,
			revocationEndpoint: `${origin}/revoke`,
			resource: serverUrl,
			client: { clientId: store.kept?.clientId, authMethod: "none", clientSecret: null, secretReference: null },
			tokens: { scopes: ["mcp"], refreshToken: expect.any(String) },
			refreshedAt: null,
		});
		expect(connection.tokens.expiresAt).toBeGreaterThan(Date.now() + 3_000_000);
		expect(await whoami(connection.tokens.accessToken)).toEqual({
			status: 200,
			subject: "alice",
			clientId: store.kept?.clientId,
		});
		expect(await stats()).toMatchObject({
			registrations: 1,
			authorizations: 1,
			codeExchanges: 1,
			mcpRequests: { alice: 3 },
		});
	});

	it("keeps one registration for every person, and registers again when the authorization server forgets it", async () => {
		const store = memoryStore();
		const alice = await connect("alice", { store });
		const bob = await connect("bob", { store });
		expect(bob.connection.client.clientId).toBe(alice.connection.client.clientId);
		expect((await stats()).registrations).toBe(1);

		await control("forget-clients");
		const carol = await connect("carol", { store });
		expect(carol.connection.client.clientId).not.toBe(alice.connection.client.clientId);
		expect(store.kept?.clientId).toBe(carol.connection.client.clientId);
		expect((await stats()).registrations).toBe(2);
		expect((await whoami(carol.connection.tokens.accessToken)).subject).toBe("carol");
	});

	it("drops a kept client the token endpoint refuses, so the next connect registers again", async () => {
		const store = memoryStore();
		const { authorization, pending, callbackUrl } = await startAndSignIn("alice", { store });
		await control("forget-clients");
		await expectRefused(
			completeAuthorization({ callbackUrl, pending, authorization, vars, settings, store }),
			"client_refused",
			/no longer accepts the gateway's client/,
		);
		expect(store.kept).toBeNull();
	});

	it("uses the operator's configured client, its secret a reference resolved at use, with no registration", async () => {
		const auth = { clientId: OAUTH_UPSTREAM_STATIC_CLIENT.client_id, clientSecret: "${UPSTREAM_OAUTH_DEMO_SECRET}" };
		const withSecret = { ...vars, UPSTREAM_OAUTH_DEMO_SECRET: OAUTH_UPSTREAM_STATIC_CLIENT.client_secret };
		const { connection } = await connect("bob", { auth, vars: withSecret });
		expect(connection.client).toEqual({
			clientId: OAUTH_UPSTREAM_STATIC_CLIENT.client_id,
			clientSecret: null,
			secretReference: "${UPSTREAM_OAUTH_DEMO_SECRET}",
			authMethod: "client_secret_post",
		});
		expect(await whoami(connection.tokens.accessToken)).toMatchObject({
			subject: "bob",
			clientId: OAUTH_UPSTREAM_STATIC_CLIENT.client_id,
		});
		expect((await stats()).registrations).toBe(0);
		// The refresh resolves the reference again, from the vars of its own call.
		const refreshed = await oauthTokenClient.refresh(connection, withSecret);
		expect((await whoami(refreshed.accessToken)).subject).toBe("bob");
	});

	it("refuses, naming no secret, when the configured client's secret reference is not set", async () => {
		const auth = { clientId: OAUTH_UPSTREAM_STATIC_CLIENT.client_id, clientSecret: "${UPSTREAM_OAUTH_DEMO_SECRET}" };
		const { authorization, pending, callbackUrl } = await startAndSignIn("bob", { auth });
		await expectRefused(
			completeAuthorization({ callbackUrl, pending, authorization, vars, settings }),
			"misconfigured",
			/client secret for this server is not set up/,
		);
	});

	it("uses its Client ID Metadata Document where the authorization server accepts one", async () => {
		const authorization = await discoverUpstreamAuthorization({ serverUrl, settings });
		const store = memoryStore();
		const client = await clientFor({
			auth: {},
			authorization: { ...authorization, cimdSupported: true },
			origin: GATEWAY,
			store,
			settings,
		});
		expect(client).toEqual({
			clientId: "https://gateway.test/oauth/upstream-client.json",
			clientSecret: null,
			secretReference: null,
			authMethod: "none",
		});
		expect(clientMetadataDocument(GATEWAY)).toMatchObject({
			client_id: "https://gateway.test/oauth/upstream-client.json",
			client_name: "MCP Edge Gateway",
			redirect_uris: ["https://gateway.test/connect/callback"],
			token_endpoint_auth_method: "none",
		});
		expect(store.kept).toBeNull();
		expect((await stats()).registrations).toBe(0);
	});
});

describe("refresh and revocation", () => {
	it("a refresh returns a rotated refresh token, and the old one is then refused with RefreshRefused", async () => {
		const { connection } = await connect("carol");
		const refreshed = await oauthTokenClient.refresh(connection, vars);
		expect(refreshed.refreshToken).not.toBe(connection.tokens.refreshToken);
		expect(refreshed.accessToken).not.toBe(connection.tokens.accessToken);
		expect(refreshed.scopes).toEqual(["mcp"]);
		expect((await whoami(refreshed.accessToken)).subject).toBe("carol");

		await expect(oauthTokenClient.refresh(connection, vars)).rejects.toBeInstanceOf(RefreshRefused);
		const next = await oauthTokenClient.refresh({ ...connection, tokens: refreshed }, vars);
		expect((await whoami(next.accessToken)).subject).toBe("carol");
		expect(await stats()).toMatchObject({ refreshes: 2, refreshRefused: 1 });
	});

	it("a refresh token the authorization server does not know is RefreshRefused (invalid_grant)", async () => {
		const { connection } = await connect("alice");
		const forged = { ...connection, tokens: { ...connection.tokens, refreshToken: "not-issued-by-this-server" } };
		await expect(oauthTokenClient.refresh(forged, vars)).rejects.toBeInstanceOf(RefreshRefused);
		const held = { ...connection, tokens: { ...connection.tokens, refreshToken: null } };
		await expect(oauthTokenClient.refresh(held, vars)).rejects.toBeInstanceOf(RefreshRefused);
		expect((await stats()).refreshRefused).toBe(1);
	});

	it("computes expiry from the server's lifetime, on the clock it is given", async () => {
		await control("configure", { accessTokenTtlSeconds: 5 });
		const { connection } = await connect("alice");
		const tokens = tokenClientWith({ settings, now: () => 1_000_000 });
		expect((await tokens.refresh(connection, {})).expiresAt).toBe(1_005_000);
	});

	it("revocation reaches the authorization server for the refresh token, then the access token", async () => {
		const { connection } = await connect("bob");
		await oauthTokenClient.revoke(connection, vars);
		const after = await stats();
		expect(after.revocations).toBe(2);
		expect(after.revoked).toEqual([await sha256(connection.tokens.refreshToken ?? "")]);
		// Revoking the refresh token ended the grant, its access token with it.
		expect((await whoami(connection.tokens.accessToken)).status).toBe(401);
		await expect(oauthTokenClient.refresh(connection, vars)).rejects.toBeInstanceOf(RefreshRefused);
	});

	it("revocation is skipped where the authorization server offers none", async () => {
		const { connection } = await connect("bob");
		await oauthTokenClient.revoke({ ...connection, revocationEndpoint: null }, vars);
		expect((await stats()).revocations).toBe(0);
		expect((await whoami(connection.tokens.accessToken)).subject).toBe("bob");
	});

	it("an access token stops working at the upstream once the lifetime the test set ends", async () => {
		await control("configure", { accessTokenTtlSeconds: 1 });
		const { connection } = await connect("bob");
		expect(connection.tokens.expiresAt).toBeLessThanOrEqual(Date.now() + 1_000);
		expect((await whoami(connection.tokens.accessToken)).subject).toBe("bob");
		await eventually(async () => (await whoami(connection.tokens.accessToken)).status === 401, "token expiry", 4_000);
		const refreshed = await oauthTokenClient.refresh(connection, vars);
		expect((await whoami(refreshed.accessToken)).subject).toBe("bob");
	});

	it("the refresh gate holds refreshes until released, and rotation lets only the first of two through", async () => {
		const { connection } = await connect("alice");
		await control("configure", { refreshDelayGate: true });
		const both = [oauthTokenClient.refresh(connection, vars), oauthTokenClient.refresh(connection, vars)].map(
			(refresh) =>
				refresh.then(
					(tokens) => tokens,
					(error: unknown) => error,
				),
		);
		await eventually(async () => (await stats()).refreshesWaiting === 2, "two refreshes at the gate");
		await control("release");
		const outcomes = await Promise.all(both);
		expect(outcomes.filter((outcome) => outcome instanceof RefreshRefused)).toHaveLength(1);
		expect(await stats()).toMatchObject({ refreshes: 2, refreshRefused: 1, refreshesWaiting: 0 });
	});

	it("a token reply without a refresh token keeps the one the connection holds", () => {
		const tokens = tokenSetOf({ access_token: "a2", token_type: "Bearer", expires_in: 60 } as never, {
			resource: serverUrl,
			scopes: ["mcp"],
			previousRefreshToken: "r1",
			now: 0,
		});
		expect(tokens).toEqual({ accessToken: "a2", refreshToken: "r1", expiresAt: 60_000, scopes: ["mcp"] });
	});
});

describe("a hostile authorization server is refused with a sentence", () => {
	it("an authorization response naming another issuer (RFC 9207)", async () => {
		await control("configure", { issInResponse: "wrong" });
		await expectRefused(connect("alice"), "iss_mismatch", /another authorization server/);
		expect((await stats()).codeExchanges).toBe(0);
	});

	it("an authorization response without iss from a server that promises it", async () => {
		await control("configure", { issInResponse: "omit" });
		await expectRefused(connect("alice"), "iss_missing", /without naming its authorization server/);
		expect((await stats()).codeExchanges).toBe(0);
	});

	it("a callback with a forged state", async () => {
		const { authorization, pending, callbackUrl } = await startAndSignIn("alice");
		await expectRefused(
			completeAuthorization({ callbackUrl, pending: { ...pending, state: "forged" }, authorization, vars, settings }),
			"state_mismatch",
			/does not belong to the connection/,
		);
	});

	it("a callback carrying the authorization server's error, nothing exchanged", async () => {
		const { authorization, pending } = await startAndSignIn("alice");
		const declined = new URL(redirectUri);
		declined.search = new URLSearchParams({
			error: "access_denied",
			state: pending.state,
			iss: `${origin}/`,
		}).toString();
		await expectRefused(
			completeAuthorization({ callbackUrl: declined.href, pending, authorization, vars, settings }),
			"authorization_denied",
			/was declined/,
		);
		expect((await stats()).codeExchanges).toBe(0);
	});

	it("a sign-in redirected to another address than the gateway's", async () => {
		await control("configure", { redirectElsewhere: true });
		await expectRefused(connect("alice"), "callback_elsewhere", /another address than the gateway's/);
	});

	it("metadata that answers with a redirect", async () => {
		await control("configure", { redirectDiscovery: true });
		await expectRefused(
			discoverUpstreamAuthorization({ serverUrl, settings }),
			"redirected",
			/answered with a redirect/,
		);
	});

	it("oversized metadata", async () => {
		await control("configure", { oversizedMetadata: true });
		await expectRefused(
			discoverUpstreamAuthorization({ serverUrl, settings }),
			"oversized",
			new RegExp(`more than ${MAX_OAUTH_REPLY_BYTES / 1024} KiB`),
		);
	});

	it("metadata whose issuer is another than the one the resource names", async () => {
		await control("configure", { claimedIssuer: "https://impostor.example/" });
		await expectRefused(discoverUpstreamAuthorization({ serverUrl, settings }), "issuer_mismatch", /another issuer/);
	});

	it("resource metadata for another resource than the server", async () => {
		const challenge = `Bearer resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp"`;
		await expectRefused(
			discoverUpstreamAuthorization({ serverUrl: `${origin}/other`, challenge, settings }),
			"resource_mismatch",
			/describes another resource/,
		);
	});

	it("plain-http metadata: any host without ALLOW_HTTP_UPSTREAMS, a non-loopback host even with it", async () => {
		const counting = countingFetch();
		await expectRefused(
			discoverUpstreamAuthorization({ serverUrl, settings: { allowHttpUpstreams: false, fetch: counting.fetch } }),
			"insecure_url",
			/does not use https/,
		);
		await expectRefused(
			discoverUpstreamAuthorization({
				serverUrl: "http://mcp.example.test/mcp",
				settings: { allowHttpUpstreams: true, fetch: counting.fetch },
			}),
			"insecure_url",
			/does not use https/,
		);
		const challenge = 'Bearer resource_metadata="http://metadata.example.test/.well-known/oauth-protected-resource"';
		await expectRefused(
			discoverUpstreamAuthorization({ serverUrl, challenge, settings: { ...settings, fetch: counting.fetch } }),
			"insecure_url",
			/does not use https/,
		);
		expect(counting.sent).toEqual([]);
	});

	it("a token issued for another resource (a JWT whose aud leaves this server out)", async () => {
		await control("configure", { tokenForOtherResource: true });
		await expectRefused(connect("alice"), "token_for_other_resource", /token for another resource/);
		expect((await stats()).codeExchanges).toBe(1);
	});

	it("a token response naming another resource", () => {
		expect(() =>
			tokenSetOf({ access_token: "a", token_type: "bearer", resource: `${origin}/elsewhere` } as never, {
				resource: serverUrl,
				scopes: [],
				previousRefreshToken: null,
				now: 0,
			}),
		).toThrow(UpstreamAuthorizationRefused);
	});
});
