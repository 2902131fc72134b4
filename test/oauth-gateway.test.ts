import { createExecutionContext, env, listDurableObjectIds, runInDurableObject } from "cloudflare:test";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { describe, expect, inject, it, vi } from "vitest";
import { Browser, type Page } from "../scripts/fixtures/browser.ts";
import { keptAuthorizationServers } from "../src/auth/authorization-server.ts";
import { createApp } from "../src/edge/app.ts";
import type { Env } from "../src/env.ts";
import type { SessionDO } from "../src/session/session-do.ts";
import { admin, createKey, initializeBody, readReply, TEST_ADMIN_BEARER, testAddress } from "./support/gateway.ts";
import { parsedMessage } from "./support/messages.ts";
import { ENVELOPE, modernRequest } from "./support/modern.ts";
import {
	CLIENT_REDIRECT,
	gatewayWith,
	MemoryOAuthProvider,
	ORIGIN,
	oauthClient,
	testAccessRules,
} from "./support/oauth-client.ts";
import { instrumentSession } from "./support/session-object.ts";
import { registerServer, upstreamLog } from "./support/upstreams.ts";

const IDP = inject("idpIssuer");
/** The gateway as its own authorization server, signing people in at the test identity provider. */
const SIGN_IN = {
	OIDC_ISSUER: IDP,
	OIDC_CLIENT_ID: "mcp-edge-gateway",
	OIDC_CLIENT_SECRET: "test-oidc-client-secret-0123456789",
	OIDC_SCOPES: "openid email profile groups",
};
const gateway = gatewayWith(SIGN_IN);

const atClient = (url: URL) => url.href.startsWith(CLIENT_REDIRECT);

/** A person at a browser: signs in at the identity provider, consents at the gateway, lands at the client's redirect. */
async function signIn(authorizationUrl: URL, login: string, browser = newBrowser()): Promise<URL> {
	const consent = await signInToConsent(browser, authorizationUrl, login);
	expect(consent.html).toContain("MCP gateway at localhost");
	const done = await approve(browser, consent);
	return done.url;
}

/** From the client's authorization URL through the provider's login as `login`, to the page the gateway answers. */
async function signInToConsent(browser: Browser, authorizationUrl: URL, login: string): Promise<Page> {
	const loginPage = await browser.get(authorizationUrl, { stopAt: atClient });
	expect(loginPage.url.origin).toBe(new URL(IDP).origin);
	return browser.submit(loginPage, { fields: { login, password: "demo" } }, { stopAt: atClient });
}

function newBrowser(): Browser {
	return new Browser((url) => (url.origin === ORIGIN ? gateway : undefined));
}

function approve(browser: Browser, consent: Page): Promise<Page> {
	return browser.submit(consent, { fields: {}, button: { name: "decision", value: "approve" } }, { stopAt: atClient });
}

function deny(browser: Browser, consent: Page): Promise<Page> {
	return browser.submit(consent, { fields: {}, button: { name: "decision", value: "deny" } }, { stopAt: atClient });
}

/** The SDK's whole flow: 401, discovery, registration, sign-in as `login`, code exchange; then a connected client. */
async function connectAs(path: string, login: string, provider = new MemoryOAuthProvider()) {
	const first = oauthClient(path, provider, gateway);
	await expect(first.client.connect(first.transport)).rejects.toBeInstanceOf(UnauthorizedError);
	if (!provider.authorizationUrl) throw new Error("the client was not sent to sign in");
	const landed = await signIn(provider.authorizationUrl, login);
	const code = landed.searchParams.get("code");
	if (!code) throw new Error(`no code: ${landed.href}`);
	await first.transport.finishAuth(code);
	const second = oauthClient(path, provider, gateway);
	await second.client.connect(second.transport);
	return { client: second.client, transport: second.transport, provider, landed };
}

const accessRule = testAccessRules();

describe("OAuth: the gateway as authorization server, sign-in at an OpenID Connect provider", () => {
	it("an SDK client discovers the gateway, registers, signs alice in and uses exactly the servers her rule grants", async () => {
		const granted = await registerServer("beta");
		const other = await registerServer("gamma");
		await accessRule({ match: { emailDomain: "example.com", group: "engineering" }, servers: [granted] });
		const { client, provider, landed } = await connectAs("/mcp", "alice");
		expect(landed.searchParams.get("iss")).toBe(ORIGIN);
		expect(provider.client?.client_id).toBeTruthy();

		const names = (await client.listTools()).tools.map((tool) => tool.name);
		expect(names.length).toBeGreaterThan(0);
		expect(names.every((name) => name.startsWith(`${granted}__`))).toBe(true);
		const result = await client.callTool({ name: `${granted}__echo`, arguments: { text: "signed in" } });
		expect(result.content).toEqual([{ type: "text", text: "signed in" }]);
		await client.close();

		// The other server is not hers: its endpoint does not exist for her.
		const token = provider.saved?.access_token ?? "";
		const refused = await gateway(`${ORIGIN}/mcp/${other}`, {
			method: "POST",
			headers: {
				authorization: `Bearer ${token}`,
				"content-type": "application/json",
				accept: "application/json, text/event-stream",
			},
			body: JSON.stringify({
				jsonrpc: "2.0",
				id: 1,
				method: "initialize",
				params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } },
			}),
		});
		expect(refused.status).toBe(404);
		// Her token never went upstream.
		expect((await upstreamLog("beta")).some((entry) => entry.authorization?.includes(token))).toBe(false);
	});

	/** Signs `login` in from an SDK client's first attempt, up to the page the gateway answers the callback with. */
	async function signInToRefusal(login: string): Promise<Page & { browser: Browser }> {
		const provider = new MemoryOAuthProvider();
		const first = oauthClient("/mcp", provider, gateway);
		await expect(first.client.connect(first.transport)).rejects.toBeInstanceOf(UnauthorizedError);
		const browser = newBrowser();
		const page = await signInToConsent(browser, provider.authorizationUrl as URL, login);
		return { ...page, browser };
	}

	it("a person no rule grants anything sees the gateway's own refusal page (no rule matched, ask the operator); the client gets access_denied naming no one, and no code", async () => {
		const logged = vi.spyOn(console, "log");
		try {
			const page = await signInToRefusal("bob");
			expect(page.status).toBe(403);
			expect(page.url.pathname).toBe("/oauth/callback");
			expect(page.headers.get("content-type")).toContain("text/html");
			expect(page.html).toContain("Your account may not use this gateway");
			expect(page.html).toContain(
				"your account may not use the MCP gateway at localhost: no access rule of this gateway matches it.",
			);
			expect(page.html).toContain("Ask the operator of this gateway for access.");
			// No consent is asked of someone the gateway refuses: no form, no handle.
			expect(page.html).not.toMatch(/<form\b|name="handle"/);

			const back = page.browser.link(page, "Return to the app");
			expect(atClient(back)).toBe(true);
			expect(back.searchParams.get("error")).toBe("access_denied");
			expect(back.searchParams.get("error_description")).toBe("The gateway's access rules do not admit this account.");
			expect(back.searchParams.get("iss")).toBe(ORIGIN);
			expect(back.searchParams.has("code")).toBe(false);
			expect(back.href).not.toMatch(/bob|contractor/);
			// The operator's log keeps who it was.
			const lines = logged.mock.calls.map(([line]) => String(line));
			const refusal = lines.find((line) => line.includes('"event":"oauth_sign_in_refused"'));
			expect(JSON.parse(refusal ?? "{}")).toMatchObject({
				reason: "no_rule",
				issuer: IDP,
				subject: "bob",
				email: "bob@contractor.example",
				emailVerified: true,
			});
		} finally {
			logged.mockRestore();
		}
	});

	it("a person whose address the identity provider has not verified is refused by an email rule, and the page says the address is not verified", async () => {
		await accessRule({ match: { emailDomain: "example.com" } });
		// Carol's address is example.com's, but the provider sends email_verified: false.
		const page = await signInToRefusal("carol");
		expect(page.status).toBe(403);
		expect(page.html).toContain(
			"its email address is not verified by its identity provider, and this gateway counts only verified addresses.",
		);
		const back = page.browser.link(page, "Return to the app");
		expect(back.searchParams.get("error")).toBe("access_denied");
		expect(back.href).not.toMatch(/carol/);
	});
});

describe("OAuth: sign-in before consent, then a consent page that names the person and the servers", () => {
	/** The handle of a consent page's form. */
	const handleOf = (consent: Page) => /name="handle" value="([^"]+)"/.exec(consent.html)?.[1] ?? "";

	it("/authorize sends the browser to the identity provider first; the consent page after it names alice and exactly the servers her rule grants", async () => {
		const granted = await registerServer("beta");
		const other = await registerServer("gamma");
		await accessRule({ match: { subject: "alice" }, servers: [granted] });
		const clientId = await registerClient();
		const first = await gateway(await authorizeUrl(clientId));
		expect(first.status).toBe(302);
		expect(new URL(first.headers.get("location") ?? "").origin).toBe(new URL(IDP).origin);
		expect(await first.text()).toBe("");

		const consent = await signInToConsent(newBrowser(), await authorizeUrl(clientId), "alice");
		expect(consent.status).toBe(200);
		expect(consent.url.pathname).toBe("/oauth/callback");
		expect(consent.html).toContain("Signed in as <strong>Alice</strong> (alice@example.com).");
		expect(consent.html).toContain(`It will reach this server as you:</p><ul><li><code>${granted}</code></li></ul>`);
		expect(consent.html).not.toContain(other);
		expect(consent.html).toContain("This app registered itself; its name is not verified.");
		expect(consent.html).toContain("<strong>This sends access to an app on your computer.</strong>");
		expect(consent.headers.get("x-frame-options")).toBe("DENY");
		expect(consent.headers.get("cache-control")).toBe("no-store");
		// One primary button.
		expect(consent.html.match(/class="primary"/g)).toHaveLength(1);
		expect(handleOf(consent)).not.toBe("");
	});

	it("a rule that names no servers is shown as every server of the gateway, listed by name", async () => {
		const server = await registerServer("beta");
		await accessRule({ match: { subject: "alice" } });
		const consent = await signInToConsent(newBrowser(), await authorizeUrl(await registerClient()), "alice");
		expect(consent.html).toContain("It will reach every server of this gateway as you, today these");
		expect(consent.html).toContain(`<li><code>${server}</code></li>`);
	});

	it("Deny sends access_denied back to the client with its state and iss, no code; the page cannot be used again", async () => {
		await accessRule({ match: { subject: "alice" } });
		const browser = newBrowser();
		const consent = await signInToConsent(browser, await authorizeUrl(await registerClient()), "alice");
		const denied = await deny(browser, consent);
		expect(atClient(denied.url)).toBe(true);
		expect(denied.url.searchParams.get("error")).toBe("access_denied");
		expect(denied.url.searchParams.get("state")).toBe("client-state-1");
		expect(denied.url.searchParams.get("iss")).toBe(ORIGIN);
		expect(denied.url.searchParams.has("code")).toBe(false);
		const again = await approve(browser, consent);
		expect(again.status).toBe(400);
		expect(atClient(again.url)).toBe(false);
	});

	it("a consent form posted from another origin, or from another browser, is refused and uses up nothing: Allow from the page still issues the code", async () => {
		await accessRule({ match: { subject: "alice" } });
		const browser = newBrowser();
		const consent = await signInToConsent(browser, await authorizeUrl(await registerClient()), "alice");
		const form = new URLSearchParams({ handle: handleOf(consent), decision: "approve" }).toString();
		const post = (origin: string | null) =>
			gateway(`${ORIGIN}/authorize`, {
				method: "POST",
				headers: {
					"content-type": "application/x-www-form-urlencoded",
					...(origin === null ? {} : { origin }),
				},
				body: form,
				redirect: "manual",
			});
		for (const origin of ["https://evil.example", null]) {
			const refused = await post(origin);
			expect(refused.status).toBe(403);
			expect(refused.headers.get("location")).toBeNull();
			expect(await refused.text()).toContain("This form may only be sent from the gateway&#39;s own consent page.");
		}
		// The right origin but not this browser (no binding cookie): the library refuses the handle.
		const elsewhere = await post(ORIGIN);
		expect(elsewhere.status).toBe(400);
		expect(elsewhere.headers.get("location")).toBeNull();
		const allowed = await approve(browser, consent);
		expect(atClient(allowed.url)).toBe(true);
		expect(allowed.url.searchParams.get("code")).toBeTruthy();
	});

	it("a consent form that is not Allow or Deny is refused with a sentence", async () => {
		const refused = await gateway(`${ORIGIN}/authorize`, {
			method: "POST",
			headers: { "content-type": "application/x-www-form-urlencoded", origin: ORIGIN },
			body: new URLSearchParams({ handle: "h", decision: "maybe" }).toString(),
		});
		expect(refused.status).toBe(400);
		expect(await refused.text()).toContain("The consent form did not say Allow or Deny");
	});

	it("when the rule that admitted her is removed while the consent page is open, Allow shows the refusal page and issues no code", async () => {
		const rule = await accessRule({ match: { subject: "alice" } });
		const browser = newBrowser();
		const consent = await signInToConsent(browser, await authorizeUrl(await registerClient()), "alice");
		expect(consent.status).toBe(200);
		expect((await admin("DELETE", `/access-rules/${rule}`)).status).toBe(204);
		const refused = await approve(browser, consent);
		expect(refused.status).toBe(403);
		expect(refused.html).toContain("Your account may not use this gateway");
		const back = browser.link(refused, "Return to the app");
		expect(back.searchParams.get("error")).toBe("access_denied");
		expect(back.searchParams.has("code")).toBe(false);
	});
});

const RECHECK = 30_000;
const JSON_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };

/** A raw 2025 initialize with a bearer (from `address`, when given); returns the response. */
function initializeWith(token: string, path = "/mcp", through = gateway, address?: string): Promise<Response> {
	return through(`${ORIGIN}${path}`, {
		method: "POST",
		headers: {
			...JSON_HEADERS,
			authorization: `Bearer ${token}`,
			...(address === undefined ? {} : { "cf-connecting-ip": address }),
		},
		body: JSON.stringify(initializeBody()),
	});
}

/** A form POST to the gateway's token endpoint (token exchange, refresh, revocation). */
function tokenEndpoint(form: Record<string, string>, through = gateway): Promise<Response> {
	return through(`${ORIGIN}/oauth/token`, {
		method: "POST",
		headers: { "content-type": "application/x-www-form-urlencoded" },
		body: new URLSearchParams(form).toString(),
	});
}

/** Registers a public client by DCR, as MCP clients do. */
async function registerClient(redirect = CLIENT_REDIRECT): Promise<string> {
	const response = await gateway(`${ORIGIN}/oauth/register`, {
		method: "POST",
		headers: { "content-type": "application/json" },
		body: JSON.stringify({
			client_name: "Raw Client",
			redirect_uris: [redirect],
			token_endpoint_auth_method: "none",
			grant_types: ["authorization_code", "refresh_token"],
		}),
	});
	expect(response.status).toBe(201);
	return ((await response.json()) as { client_id: string }).client_id;
}

const VERIFIER = "a-code-verifier-of-the-test-client-that-is-long-enough-0123456789";
async function challengeOf(verifier: string): Promise<string> {
	const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
	return btoa(String.fromCharCode(...new Uint8Array(digest)))
		.replace(/\+/g, "-")
		.replace(/\//g, "_")
		.replace(/=+$/, "");
}

async function authorizeUrl(clientId: string, extra: Record<string, string> = {}): Promise<URL> {
	const url = new URL(`${ORIGIN}/authorize`);
	url.search = new URLSearchParams({
		response_type: "code",
		client_id: clientId,
		redirect_uri: CLIENT_REDIRECT,
		state: "client-state-1",
		code_challenge: await challengeOf(VERIFIER),
		code_challenge_method: "S256",
		resource: `${ORIGIN}/mcp`,
		...extra,
	}).toString();
	return url;
}

/** Signs a person (alice unless told) in for a raw client; returns the code. */
async function codeFor(clientId: string, login = "alice"): Promise<string> {
	const landed = await signIn(await authorizeUrl(clientId), login);
	const code = landed.searchParams.get("code");
	if (!code) throw new Error(`no code: ${landed.href}`);
	return code;
}

function exchangeCode(clientId: string, code: string, verifier = VERIFIER, through = gateway): Promise<Response> {
	return tokenEndpoint(
		{
			grant_type: "authorization_code",
			client_id: clientId,
			code,
			redirect_uri: CLIENT_REDIRECT,
			code_verifier: verifier,
			resource: `${ORIGIN}/mcp`,
		},
		through,
	);
}

interface TokenSet {
	access_token: string;
	refresh_token: string;
}

/** The gateway with a 10 s token cache, over an OAUTH_KV that counts the reads of access tokens. */
function withCountedTokenReads(): { cached: typeof fetch; tokenReads: () => number } {
	const kv = env.OAUTH_KV as KVNamespace;
	let reads = 0;
	const counting = new Proxy(kv, {
		get(target, property) {
			const value = Reflect.get(target, property, target);
			if (property !== "get") return typeof value === "function" ? value.bind(target) : value;
			return (name: string, ...rest: unknown[]) => {
				if (name.startsWith("token:")) reads++;
				return (kv.get as (...args: unknown[]) => unknown)(name, ...rest);
			};
		},
	});
	const cached = gatewayWith({ ...SIGN_IN, KEY_CACHE_TTL_SECONDS: "10", OAUTH_KV: counting });
	return { cached, tokenReads: () => reads };
}

describe("OAuth: metadata and challenges", () => {
	it("every /mcp endpoint publishes protected-resource metadata naming the gateway as authorization server", async () => {
		for (const path of ["", "/mcp", "/mcp/some-server"]) {
			const response = await gateway(`${ORIGIN}/.well-known/oauth-protected-resource${path}`);
			expect(response.status).toBe(200);
			expect(await response.json()).toMatchObject({
				resource: `${ORIGIN}/mcp`,
				authorization_servers: [ORIGIN],
				bearer_methods_supported: ["header"],
			});
		}
		expect((await gateway(`${ORIGIN}/.well-known/oauth-protected-resource/admin`)).status).toBe(404);
	});

	it("a request without credentials gets 401 with a challenge naming the resource metadata", async () => {
		const response = await gateway(`${ORIGIN}/mcp`, {
			method: "POST",
			headers: JSON_HEADERS,
			body: JSON.stringify(initializeBody()),
		});
		expect(response.status).toBe(401);
		expect(response.headers.get("www-authenticate")).toBe(
			`Bearer realm="mcp-edge-gateway", resource_metadata="${ORIGIN}/.well-known/oauth-protected-resource/mcp", scope="mcp"`,
		);
	});

	it("the authorization server's metadata offers code + PKCE S256, refresh, registration, client metadata documents and iss", async () => {
		const metadata = (await (await gateway(`${ORIGIN}/.well-known/oauth-authorization-server`)).json()) as Record<
			string,
			unknown
		>;
		expect(metadata).toMatchObject({
			issuer: ORIGIN,
			authorization_endpoint: `${ORIGIN}/authorize`,
			token_endpoint: `${ORIGIN}/oauth/token`,
			registration_endpoint: `${ORIGIN}/oauth/register`,
			code_challenge_methods_supported: ["S256"],
			authorization_response_iss_parameter_supported: true,
			client_id_metadata_document_supported: true,
		});
		expect(metadata.grant_types_supported).toEqual(expect.arrayContaining(["authorization_code", "refresh_token"]));
	});

	it("a tampered or made-up access token gets 401 invalid_token and opens nothing", async () => {
		const sessionsBefore = (await listDurableObjectIds(env.SESSIONS)).length;
		const ledgersBefore = (await listDurableObjectIds(env.KEY_SESSIONS)).length;
		for (const token of ["not-a-token", "u_x:g_y:forged-secret-value"]) {
			const response = await initializeWith(token);
			expect(response.status).toBe(401);
			const challenge = response.headers.get("www-authenticate") ?? "";
			expect(challenge).toContain('error="invalid_token"');
			expect(challenge).toContain("resource_metadata=");
			expect((await readReply(response)).error?.message).toBe(
				"The access token is unknown, expired, revoked or for another resource.",
			);
			expect(response.headers.get("mcp-session-id")).toBeNull();
		}
		// No session object and no per-person ledger was created for either token.
		expect((await listDurableObjectIds(env.SESSIONS)).length).toBe(sessionsBefore);
		expect((await listDurableObjectIds(env.KEY_SESSIONS)).length).toBe(ledgersBefore);
	});
});

describe("OAuth: bad input to the authorization server", () => {
	it("a public client without PKCE, or with the plain method, is sent back with invalid_request and no code", async () => {
		const clientId = await registerClient();
		const missing = await authorizeUrl(clientId);
		missing.searchParams.delete("code_challenge");
		missing.searchParams.delete("code_challenge_method");
		for (const url of [missing, await authorizeUrl(clientId, { code_challenge_method: "plain" })]) {
			const response = await gateway(url);
			expect(response.status).toBe(302);
			const back = new URL(response.headers.get("location") ?? "");
			expect(back.href.startsWith(CLIENT_REDIRECT)).toBe(true);
			expect(back.searchParams.get("error")).toBe("invalid_request");
			expect(back.searchParams.get("iss")).toBe(ORIGIN);
			expect(back.searchParams.has("code")).toBe(false);
		}
	});

	it("a redirect URI that is not registered exactly is refused on a page, never redirected to", async () => {
		const clientId = await registerClient();
		const stored = async () => (await (env.OAUTH_KV as KVNamespace).list()).keys.length;
		const before = await stored();
		for (const redirect of [`${CLIENT_REDIRECT}/extra`, "https://evil.example/callback"]) {
			const response = await gateway(await authorizeUrl(clientId, { redirect_uri: redirect }));
			expect(response.status).toBe(400);
			expect(response.headers.get("location")).toBeNull();
			expect(await response.text()).toContain("This sign-in cannot continue");
		}
		expect(await stored()).toBe(before);
	});

	it("a client metadata document URL that is not https is refused on a page", async () => {
		const response = await gateway(await authorizeUrl("http://client.example/metadata.json"));
		expect(response.status).toBe(400);
		expect(response.headers.get("location")).toBeNull();
	});

	it("client metadata documents that do not match their URL, or are too large, are refused; a good one is shown by its domain", async () => {
		const documentUrl = "https://client.example/mcp/metadata.json";
		const documents: Record<string, string> = {
			[documentUrl]: JSON.stringify({
				client_id: documentUrl,
				client_name: "Good Client",
				redirect_uris: [CLIENT_REDIRECT],
				token_endpoint_auth_method: "none",
			}),
			"https://client.example/mcp/mismatch.json": JSON.stringify({
				client_id: "https://other.example/x.json",
				client_name: "Liar",
				redirect_uris: [CLIENT_REDIRECT],
			}),
			"https://client.example/mcp/huge.json": JSON.stringify({
				client_id: "https://client.example/mcp/huge.json",
				client_name: "x".repeat(6_000),
				redirect_uris: [CLIENT_REDIRECT],
			}),
		};
		const real = globalThis.fetch;
		const spy = vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
			const url = new Request(input, init).url;
			const document = documents[url];
			return document === undefined
				? real(input, init)
				: new Response(document, { headers: { "content-type": "application/json" } });
		});
		try {
			for (const bad of ["https://client.example/mcp/mismatch.json", "https://client.example/mcp/huge.json"]) {
				const response = await gateway(await authorizeUrl(bad));
				expect(response.status).toBe(400);
				expect(response.headers.get("location")).toBeNull();
			}
			await accessRule({ match: { subject: "alice" } });
			const good = await signInToConsent(newBrowser(), await authorizeUrl(documentUrl), "alice");
			expect(good.status).toBe(200);
			expect(good.html).toContain("Good Client");
			expect(good.html).toContain("Published by <strong>client.example</strong>");
		} finally {
			spy.mockRestore();
		}
	});

	it("the wrong PKCE verifier gets invalid_grant; a code used twice is refused and revokes what its first use issued", async () => {
		await accessRule({ match: { subject: "alice" } });
		const clientId = await registerClient();
		const wrong = await exchangeCode(
			clientId,
			await codeFor(clientId),
			"another-verifier-that-is-long-enough-0123456789abcdef",
		);
		expect(wrong.status).toBe(400);
		expect(((await wrong.json()) as { error: string }).error).toBe("invalid_grant");

		const code = await codeFor(clientId);
		const first = await exchangeCode(clientId, code);
		expect(first.status).toBe(200);
		expect(first.headers.get("cache-control")).toContain("no-store");
		const tokens = (await first.json()) as TokenSet;
		expect((await initializeWith(tokens.access_token)).status).toBe(200);
		const replay = await exchangeCode(clientId, code);
		expect(replay.status).toBe(400);
		expect(((await replay.json()) as { error: string }).error).toBe("invalid_grant");
		expect((await initializeWith(tokens.access_token)).status).toBe(401);
	});

	it("a callback whose state is forged, or that comes without the browser's binding, is refused on a page", async () => {
		const forged = await gateway(`${ORIGIN}/oauth/callback?state=forged-state&code=anything`);
		expect(forged.status).toBe(400);
		expect(forged.headers.get("location")).toBeNull();
		// The real state, replayed from another browser (no binding cookie).
		const clientId = await registerClient();
		const atProvider = await newBrowser().get(await authorizeUrl(clientId), {
			stopAt: (url) => url.origin === new URL(IDP).origin,
		});
		const state = atProvider.url.searchParams.get("state") ?? "";
		const elsewhere = await newBrowser().get(
			`${ORIGIN}/oauth/callback?state=${encodeURIComponent(state)}&code=anything`,
		);
		expect(elsewhere.status).toBe(400);
	});

	it("an identity provider that cannot be reached is said on a page (502), not sent back to the client", async () => {
		const unreachable = gatewayWith({ ...SIGN_IN, OIDC_ISSUER: "http://127.0.0.1:1" });
		const browser = new Browser((url) => (url.origin === ORIGIN ? unreachable : undefined));
		const clientId = await registerClient();
		const failed = await browser.get(await authorizeUrl(clientId), { stopAt: atClient });
		expect(failed.status).toBe(502);
		expect(atClient(failed.url)).toBe(false);
		expect(failed.headers.get("content-type")).toContain("text/html");
		expect(failed.html).toContain("The identity provider could not be reached; try signing in again later.");
	});

	it("an identity provider response with another iss is refused with access_denied and issues nothing", async () => {
		await accessRule({ match: { subject: "alice" } });
		const clientId = await registerClient();
		const browser = newBrowser();
		const loginPage = await browser.get(await authorizeUrl(clientId));
		const atCallback = await browser.submit(
			loginPage,
			{ fields: { login: "alice", password: "demo" } },
			{
				stopAt: (url) => url.pathname === "/oauth/callback",
			},
		);
		const tampered = new URL(atCallback.url);
		tampered.searchParams.set("iss", "https://evil.example");
		const landed = await browser.get(tampered, { stopAt: atClient });
		expect(landed.url.searchParams.get("error")).toBe("access_denied");
		expect(landed.url.searchParams.has("code")).toBe(false);
	});
});

describe("OAuth: tokens and sessions over time", () => {
	it("a refresh token rotates: the new one works, and the old one stops once the new one is used", async () => {
		await accessRule({ match: { subject: "alice" } });
		const clientId = await registerClient();
		const tokens = (await (await exchangeCode(clientId, await codeFor(clientId))).json()) as TokenSet;
		const refresh = (token: string) =>
			tokenEndpoint({ grant_type: "refresh_token", client_id: clientId, refresh_token: token });
		const second = (await (await refresh(tokens.refresh_token)).json()) as TokenSet;
		expect(second.refresh_token).not.toBe(tokens.refresh_token);
		expect((await initializeWith(second.access_token)).status).toBe(200);
		const third = await refresh(second.refresh_token);
		expect(third.status).toBe(200);
		const stale = await refresh(tokens.refresh_token);
		expect(stale.status).toBe(400);
		expect(((await stale.json()) as { error: string }).error).toBe("invalid_grant");
	});

	/** Alice's session on a server, opened with a token of a fresh grant, with a manual clock in its object. */
	async function signedInSession() {
		const server = await registerServer("beta");
		const rule = await accessRule({ match: { subject: "alice" }, servers: [server] });
		const clientId = await registerClient();
		const tokens = (await (await exchangeCode(clientId, await codeFor(clientId))).json()) as TokenSet;
		const opened = await initializeWith(tokens.access_token, `/mcp/${server}`);
		expect(opened.status).toBe(200);
		const { stub, clock } = await instrumentSession(opened.headers.get("mcp-session-id") ?? "");
		const binding = await runInDurableObject(stub, (instance: SessionDO) => instance.store.readBinding());
		const scope = { keyId: binding?.keyId ?? "", userPath: "/", endpoint: `/mcp/${server}` };
		const ping = () => stub.post(scope, parsedMessage({ jsonrpc: "2.0", id: 1, method: "ping" }));
		expect((await readReply(await ping())).result).toEqual({});
		return { rule, clientId, tokens, clock, ping };
	}

	it("a valid token costs one token read per isolate cache period, however many requests; an invalid one is never kept", async () => {
		await accessRule({ match: { subject: "alice" } });
		const clientId = await registerClient();
		const tokens = (await (await exchangeCode(clientId, await codeFor(clientId))).json()) as TokenSet;
		const { cached, tokenReads } = withCountedTokenReads();
		for (let i = 0; i < 5; i++) expect((await initializeWith(tokens.access_token, "/mcp", cached)).status).toBe(200);
		expect(tokenReads()).toBe(1);
		for (let i = 0; i < 2; i++) {
			expect((await initializeWith(`${tokens.access_token.slice(0, -2)}xx`, "/mcp", cached)).status).toBe(401);
		}
		expect(tokenReads()).toBe(3);
	});

	it("a token validated at one host of the deployment is not taken from the cache at another, which refuses it as it would cold", async () => {
		await accessRule({ match: { subject: "alice" } });
		const clientId = await registerClient();
		const tokens = (await (await exchangeCode(clientId, await codeFor(clientId))).json()) as TokenSet;
		const OTHER = "http://127.0.0.1";
		// One deployment answering on two hosts, with a token cache that keeps a verdict for 10 s.
		const cached = gatewayWith({ ...SIGN_IN, KEY_CACHE_TTL_SECONDS: "10" }, [ORIGIN, OTHER]);
		const initializeAt = (origin: string) =>
			cached(`${origin}/mcp`, {
				method: "POST",
				headers: { ...JSON_HEADERS, authorization: `Bearer ${tokens.access_token}` },
				body: JSON.stringify(initializeBody()),
			});
		const cold = await initializeAt(OTHER);
		expect(cold.status).toBe(401);
		expect((await readReply(cold)).error?.message).toBe(
			"The access token is unknown, expired, revoked or for another resource.",
		);
		expect((await initializeAt(ORIGIN)).status).toBe(200);
		const warm = await initializeAt(OTHER);
		expect(warm.status).toBe(401);
		expect(warm.headers.get("www-authenticate")).toContain('error="invalid_token"');
		expect((await initializeAt(ORIGIN)).status).toBe(200);
	});

	it("access tokens and sign-ins last as long as OAUTH_ACCESS_TOKEN_TTL_SECONDS and OAUTH_REFRESH_TOKEN_TTL_SECONDS say", async () => {
		await accessRule({ match: { subject: "alice" } });
		const short = gatewayWith({
			...SIGN_IN,
			OAUTH_ACCESS_TOKEN_TTL_SECONDS: "120",
			OAUTH_REFRESH_TOKEN_TTL_SECONDS: "600",
		});
		const clientId = await registerClient();
		const issued = await exchangeCode(clientId, await codeFor(clientId), VERIFIER, short);
		const tokens = (await issued.json()) as TokenSet & { expires_in: number };
		expect(tokens.expires_in).toBe(120);
		const [userId, grantId] = tokens.access_token.split(":");
		const { keys } = await (env.OAUTH_KV as KVNamespace).list({ prefix: `grant:${userId}:${grantId}` });
		const expiration = keys[0]?.expiration ?? 0;
		const now = Math.floor(Date.now() / 1000);
		expect(expiration).toBeGreaterThan(now);
		expect(expiration).toBeLessThanOrEqual(now + 600);
	});

	it("a session opened with alice's token is not found for an API key or for another sign-in", async () => {
		const server = await registerServer("beta");
		await accessRule({ match: { subject: "alice" }, servers: [server] });
		const clientId = await registerClient();
		const tokens = (await (await exchangeCode(clientId, await codeFor(clientId))).json()) as TokenSet;
		const opened = await initializeWith(tokens.access_token, `/mcp/${server}`);
		const sessionId = opened.headers.get("mcp-session-id") ?? "";
		const ping = (bearer: string) =>
			gateway(`${ORIGIN}/mcp/${server}`, {
				method: "POST",
				headers: {
					...JSON_HEADERS,
					authorization: `Bearer ${bearer}`,
					"mcp-session-id": sessionId,
					"mcp-protocol-version": "2025-11-25",
				},
				body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "ping" }),
			});
		expect((await ping(tokens.access_token)).status).toBe(200);
		const { key } = (await (await admin("POST", "/keys", {})).json()) as { key: string };
		expect((await ping(key)).status).toBe(404);
		// Alice again, through another client: another grant, so another principal.
		const otherClient = await registerClient();
		const other = (await (await exchangeCode(otherClient, await codeFor(otherClient))).json()) as TokenSet;
		expect((await ping(other.access_token)).status).toBe(404);
		expect((await ping(tokens.access_token)).status).toBe(200);
	});

	it("a 2026-07-28 request with a token is served on what the rule grants, and refused elsewhere", async () => {
		const modern = await registerServer("modern");
		const other = await registerServer("modern");
		await accessRule({ match: { subject: "alice" }, servers: [modern] });
		const clientId = await registerClient();
		const tokens = (await (await exchangeCode(clientId, await codeFor(clientId))).json()) as TokenSet;
		const list = (path: string) => {
			const request = modernRequest(path, tokens.access_token, {
				id: 1,
				method: "tools/list",
				params: { _meta: ENVELOPE },
			});
			return gateway(`${ORIGIN}${new URL(request.url).pathname}`, {
				method: "POST",
				headers: request.headers,
				body: request.body,
				duplex: "half",
			} as RequestInit);
		};
		const granted = await list(`/mcp/${modern}`);
		expect(granted.status).toBe(200);
		expect(((await readReply(granted)).result as { tools: unknown[] }).tools.length).toBeGreaterThan(0);
		expect((await list(`/mcp/${other}`)).status).toBe(404);
	});

	it("a session ends within one recheck interval when its grant is revoked (RFC 7009 at the token endpoint)", async () => {
		const { clientId, tokens, clock, ping } = await signedInSession();
		// Revoking the refresh token revokes the grant, and with it every token of the grant.
		expect((await tokenEndpoint({ token: tokens.refresh_token, client_id: clientId })).status).toBe(200);
		expect((await initializeWith(tokens.access_token)).status).toBe(401);
		clock.advance(RECHECK);
		expect((await ping()).status).toBe(404);
	});

	it("an operator revokes a person's grants: their tokens stop at once and their session ends at its next recheck", async () => {
		const { tokens, clock, ping } = await signedInSession();
		const revoke = (query: string) =>
			gateway(`${ORIGIN}/admin/oauth-grants${query}`, {
				method: "DELETE",
				headers: { authorization: `Bearer ${TEST_ADMIN_BEARER}` },
			});
		expect((await revoke("")).status).toBe(400);
		const revoked = await revoke("?subject=alice");
		expect(revoked.status).toBe(200);
		expect(((await revoked.json()) as { revoked: number }).revoked).toBeGreaterThanOrEqual(1);
		expect((await initializeWith(tokens.access_token)).status).toBe(401);
		clock.advance(RECHECK);
		expect((await ping()).status).toBe(404);
	});

	it("a session ends within one recheck interval when its access rule is removed", async () => {
		const { rule, clock, ping } = await signedInSession();
		expect((await admin("DELETE", `/access-rules/${rule}`)).status).toBe(204);
		clock.advance(RECHECK);
		expect((await ping()).status).toBe(404);
	});
});

/** A person's token set through a client of their own: registration, sign-in at the identity provider, code exchange. */
async function tokensThroughNewClient(login = "alice"): Promise<TokenSet> {
	const clientId = await registerClient();
	const issued = await exchangeCode(clientId, await codeFor(clientId, login));
	expect(issued.status).toBe(200);
	return (await issued.json()) as TokenSet;
}

describe("OAuth: limits are per person, not per client or sign-in", () => {
	it("three clients of one person share the rule's maxSessions: under 1, the second session is refused whichever client opens it", async () => {
		const server = await registerServer("beta");
		await accessRule({ match: { subject: "alice" }, servers: [server], maxSessions: 1 });
		const clients = [await tokensThroughNewClient(), await tokensThroughNewClient(), await tokensThroughNewClient()];
		const [first, second, third] = clients.map((tokens) => tokens.access_token) as [string, string, string];
		const path = `/mcp/${server}`;
		const opened = await initializeWith(first, path);
		expect(opened.status).toBe(200);
		const sessionId = opened.headers.get("mcp-session-id") ?? "";
		for (const token of [second, third, first]) {
			const refused = await initializeWith(token, path);
			expect(refused.status).toBe(429);
			expect(refused.headers.get("mcp-session-id")).toBeNull();
			const { error } = await readReply(refused);
			expect(error?.data?.kind).toBe("session_limit");
			expect(error?.message).toContain("limit of 1 live sessions, counted over every client you signed in with");
		}
		// Ending the one session frees the person's place, for any of their clients.
		const ended = await gateway(`${ORIGIN}${path}`, {
			method: "DELETE",
			headers: { authorization: `Bearer ${first}`, "mcp-session-id": sessionId, "mcp-protocol-version": "2025-11-25" },
		});
		expect(ended.status).toBe(204);
		expect((await initializeWith(third, path)).status).toBe(200);
		for (const token of [first, second]) expect((await initializeWith(token, path)).status).toBe(429);
	});

	it("a person's requests count against one rate limit whichever client sends them; another person's, and a key's, count apart", async () => {
		await accessRule({ match: { subject: "alice" } });
		await accessRule({ match: { subject: "bob" } });
		const alices = [await tokensThroughNewClient(), await tokensThroughNewClient(), await tokensThroughNewClient()];
		const bob = await tokensThroughNewClient("bob");
		const { key } = await createKey();
		const limiter = env.KEY_RATE_LIMITER as RateLimit;
		const asked: string[] = [];
		const recording: RateLimit = {
			limit: (options) => {
				asked.push(options.key);
				return limiter.limit(options);
			},
		};
		const counted = gatewayWith({ ...SIGN_IN, KEY_RATE_LIMITER: recording });
		for (const tokens of [...alices, bob]) {
			expect((await initializeWith(tokens.access_token, "/mcp", counted)).status).toBe(200);
		}
		expect((await initializeWith(key, "/mcp", counted)).status).toBe(200);
		expect(asked).toHaveLength(5);
		const [a1, a2, a3, b, k] = asked;
		expect(new Set([a1, a2, a3]).size).toBe(1);
		expect(new Set([a1, b, k]).size).toBe(3);
	});
});

describe("OAuth: an access rule's rate class applies to the people it matches", () => {
	it("under a high rule a person's requests count against KEY_RATE_LIMITER_HIGH, under unlimited against none; a replaced rule moves them without a new sign-in", async () => {
		const match = { subject: "alice" };
		const rule = await accessRule({ match, rateClass: "high" });
		const tokens = await tokensThroughNewClient();
		const standard: string[] = [];
		const high: string[] = [];
		const recording = (asked: string[]): RateLimit => ({
			limit: async ({ key }) => {
				asked.push(key);
				return { success: true };
			},
		});
		const counted = gatewayWith({
			...SIGN_IN,
			KEY_RATE_LIMITER: recording(standard),
			KEY_RATE_LIMITER_HIGH: recording(high),
		});
		// A DELETE without a session is refused (400) right after authentication and the rate limit.
		const send = () =>
			counted(`${ORIGIN}/mcp`, { method: "DELETE", headers: { authorization: `Bearer ${tokens.access_token}` } });
		for (let i = 0; i < 2; i++) expect((await send()).status).toBe(400);
		expect(standard).toEqual([]);
		expect(high).toHaveLength(2);
		expect(new Set(high).size).toBe(1);
		expect(high[0]).toMatch(new RegExp(`^key:person~${rule}~`));

		expect((await admin("PUT", `/access-rules/${rule}`, { match, rateClass: "unlimited" })).status).toBe(200);
		for (let i = 0; i < 2; i++) expect((await send()).status).toBe(400);
		expect([standard.length, high.length]).toEqual([0, 2]);

		// A rule that names no class is standard.
		const replaced = await admin("PUT", `/access-rules/${rule}`, { match });
		expect(((await replaced.json()) as { rateClass: string }).rateClass).toBe("standard");
		expect((await send()).status).toBe(400);
		expect(standard).toEqual([high[0]]);
		expect(high).toHaveLength(2);
	});
});

describe("OAuth: the failed-lookup lockout refuses only tokens that need a read", () => {
	it("past the limit, made-up tokens from one address get 429 before any KV read; a token the isolate verified, an API key and garbage are answered as before", async () => {
		await accessRule({ match: { subject: "alice" } });
		const valid = (await tokensThroughNewClient()).access_token;
		const { key } = await createKey();
		const { cached, tokenReads } = withCountedTokenReads();
		const ip = testAddress();
		const from = (token: string, address = ip) => initializeWith(token, "/mcp", cached, address);
		expect((await from(valid)).status).toBe(200);
		// Tokens of the gateway's shape, with a secret nobody was given: each needs a read to be refused.
		const [user, grant] = valid.split(":");
		const madeUp = (i: number) => `${user}:${grant}:made-up-secret-${i}`;
		let refused = 0;
		let limited: Response | undefined;
		for (let i = 0; i < 121 && !limited; i++) {
			const response = await from(madeUp(i));
			if (response.status === 429) limited = response;
			else {
				expect(response.status).toBe(401);
				refused++;
			}
		}
		expect(limited).toBeDefined();
		expect(refused).toBeGreaterThanOrEqual(60);
		expect(limited?.headers.get("retry-after")).toBe("60");
		expect((await readReply(limited as Response)).error?.data?.kind).toBe("rate_limited");

		const readsBefore = tokenReads();
		expect((await from(madeUp(1_000))).status).toBe(429);
		expect(tokenReads()).toBe(readsBefore);
		// What verifies without a read is served from the locked-out address.
		expect((await from(valid)).status).toBe(200);
		expect((await from(key)).status).toBe(200);
		// Garbage is refused by its shape, without a read, and does not meet the lockout.
		expect((await from("not-a-token")).status).toBe(401);
		expect(tokenReads()).toBe(readsBefore);
		// Another address is not locked out.
		expect((await from(madeUp(1_001), testAddress())).status).toBe(401);
	});
});

describe("OAuth: the authorization server's unauthenticated endpoints are limited per address", () => {
	/** A registration that the library refuses without writing anything (no redirect URIs). */
	const emptyRegistration = (address: string) =>
		gateway(`${ORIGIN}/oauth/register`, {
			method: "POST",
			headers: { "content-type": "application/json", "cf-connecting-ip": address },
			body: JSON.stringify({ client_name: "Nothing" }),
		});

	it("past OAUTH_LIMITER, register, authorize and token get 429 with Retry-After and write nothing; another address is served", async () => {
		const ip = testAddress();
		let passed = 0;
		let limited: Response | undefined;
		// Each refused registration is an operator log line: hundreds of them here say nothing new.
		const warnings = vi.spyOn(console, "warn").mockImplementation(() => undefined);
		try {
			// The limit is 400 per 60 s window; a window that rolls over mid-test allows up to twice that.
			for (let i = 0; i < 801 && !limited; i++) {
				const response = await emptyRegistration(ip);
				if (response.status === 429) limited = response;
				else {
					expect(response.status).toBe(400);
					passed++;
				}
			}
		} finally {
			warnings.mockRestore();
		}
		expect(limited).toBeDefined();
		expect(passed).toBeGreaterThanOrEqual(400);
		expect(limited?.headers.get("retry-after")).toBe("60");
		expect(await limited?.json()).toEqual({
			error: "temporarily_unavailable",
			error_description:
				"Too Many Requests: too many sign-in, registration or token requests came from this address; retry after 60 s.",
		});

		const clientId = await registerClient();
		const stored = async () => (await (env.OAUTH_KV as KVNamespace).list()).keys.length;
		const before = await stored();
		const registration = await gateway(`${ORIGIN}/oauth/register`, {
			method: "POST",
			headers: { "content-type": "application/json", "cf-connecting-ip": ip },
			body: JSON.stringify({
				client_name: "Late",
				redirect_uris: [CLIENT_REDIRECT],
				token_endpoint_auth_method: "none",
			}),
		});
		expect(registration.status).toBe(429);
		const page = await gateway(await authorizeUrl(clientId), { headers: { "cf-connecting-ip": ip } });
		expect(page.status).toBe(429);
		expect(page.headers.get("retry-after")).toBe("60");
		expect(page.headers.get("content-type")).toContain("text/html");
		expect(await page.text()).toContain("too many sign-in, registration or token requests came from this address");
		const token = await gateway(`${ORIGIN}/oauth/token`, {
			method: "POST",
			headers: { "content-type": "application/x-www-form-urlencoded", "cf-connecting-ip": ip },
			body: new URLSearchParams({ grant_type: "refresh_token", client_id: clientId, refresh_token: "x" }).toString(),
		});
		expect(token.status).toBe(429);
		expect(token.headers.get("retry-after")).toBe("60");
		expect(await stored()).toBe(before);

		expect((await emptyRegistration(testAddress())).status).toBe(400);
	});
});

describe("OAuth: one authorization server per origin, bounded", () => {
	it("every Host spelling (ports, wildcard subdomains) gets its own issuer, and an isolate keeps at most 16 of them", async () => {
		const app = createApp();
		const wildcard = { ...env, ...SIGN_IN, ALLOWED_HOSTS: "localhost,*.gateway.test" } as Env;
		const issuerAt = async (origin: string) => {
			const request = new Request(`${origin}/.well-known/oauth-authorization-server`);
			const response = await app.fetch(request, wildcard, createExecutionContext());
			expect(response.status).toBe(200);
			return ((await response.json()) as { issuer: string }).issuer;
		};
		const origins = [
			...Array.from({ length: 100 }, (_, i) => `http://localhost:${10_000 + i}`),
			...Array.from({ length: 100 }, (_, i) => `https://tenant-${i}.gateway.test`),
		];
		for (const origin of origins) {
			expect(await issuerAt(origin)).toBe(origin);
			expect(keptAuthorizationServers()).toBeLessThanOrEqual(16);
		}
		// An origin evicted long ago is built again, the same as before.
		expect(await issuerAt(origins[0] as string)).toBe(origins[0]);
		expect(keptAuthorizationServers()).toBeLessThanOrEqual(16);
	});
});
