import { decodeJwt } from "jose";
import * as oauth from "oauth4webapi";
import { describe, expect, inject, it } from "vitest";
import { Browser, type Page } from "../scripts/fixtures/browser.ts";
import { IDP_RESOURCE, IDP_TEST_CLIENT } from "../scripts/fixtures/fixture-names.ts";

/** The IdP is plain http on loopback, which oauth4webapi refuses unless told per call. */
const insecure = { [oauth.allowInsecureRequests]: true } as const;
const REDIRECT_URI = IDP_TEST_CLIENT.redirect_uris[0] ?? "";
const testClient: oauth.Client = { client_id: IDP_TEST_CLIENT.client_id };
const testClientAuth = oauth.ClientSecretBasic(IDP_TEST_CLIENT.client_secret);

/** The IdP's metadata, from `/.well-known/openid-configuration` or (oauth2) `/.well-known/oauth-authorization-server`. */
async function discover(algorithm: "oidc" | "oauth2" = "oidc"): Promise<oauth.AuthorizationServer> {
	const issuer = new URL(inject("idpIssuer"));
	return oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { ...insecure, algorithm }));
}

/** An authorization-code request with PKCE (S256); the verifier redeems its code. */
async function authorizationRequest(
	as: oauth.AuthorizationServer,
	client: oauth.Client,
	redirectUri: string,
	parameters: Record<string, string>,
): Promise<{ url: URL; verifier: string }> {
	const verifier = oauth.generateRandomCodeVerifier();
	const url = new URL(as.authorization_endpoint ?? "");
	url.search = new URLSearchParams({
		client_id: client.client_id,
		redirect_uri: redirectUri,
		response_type: "code",
		code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
		code_challenge_method: "S256",
		...parameters,
	}).toString();
	return { url, verifier };
}

/** Opens the login form and signs in; stops at the redirect back to the client. */
async function signIn(browser: Browser, url: URL, login: string, password: string, redirectUri: string): Promise<Page> {
	const form = await browser.get(url);
	expect(form.status).toBe(200);
	return browser.submit(
		form,
		{ formAction: "/login", fields: { login, password } },
		{ stopAt: (target) => target.href.startsWith(redirectUri) },
	);
}

describe("the local identity provider (scripts/fixtures/oidc-idp.ts)", () => {
	it("signs alice in with one form post, and her ID token carries her email and groups", async () => {
		const as = await discover();
		const { url, verifier } = await authorizationRequest(as, testClient, REDIRECT_URI, {
			scope: "openid email profile groups",
		});
		const callback = await signIn(new Browser(), url, "alice", "demo", REDIRECT_URI);
		expect(callback.url.pathname).toBe("/test-callback");

		const parameters = oauth.validateAuthResponse(as, testClient, callback.url, oauth.expectNoState);
		const response = await oauth.authorizationCodeGrantRequest(
			as,
			testClient,
			testClientAuth,
			parameters,
			REDIRECT_URI,
			verifier,
			insecure,
		);
		const tokens = await oauth.processAuthorizationCodeResponse(as, testClient, response, { requireIdToken: true });
		expect(oauth.getValidatedIdTokenClaims(tokens)).toMatchObject({
			iss: inject("idpIssuer"),
			aud: IDP_TEST_CLIENT.client_id,
			sub: "alice",
			email: "alice@example.com",
			email_verified: true,
			groups: ["engineering"],
		});
	});

	it("answers a wrong password with the form again and no code; the form then still signs in", async () => {
		const as = await discover();
		const { url } = await authorizationRequest(as, testClient, REDIRECT_URI, { scope: "openid email" });
		const browser = new Browser();
		const refused = await signIn(browser, url, "alice", "not-the-password", REDIRECT_URI);
		expect(refused.status).toBe(200);
		expect(refused.url.pathname).toMatch(/^\/interaction\/[^/]+\/login$/);
		expect(refused.html).toContain("wrong password");
		expect(refused.html).toMatch(/<input name="password" type="password">/);
		expect(refused.url.searchParams.has("code")).toBe(false);

		const retried = await browser.submit(
			refused,
			{ fields: { login: "alice", password: "demo" } },
			{ stopAt: (target) => target.href.startsWith(REDIRECT_URI) },
		);
		expect(retried.url.pathname).toBe("/test-callback");
		expect(retried.url.searchParams.get("code")).toBeTruthy();
	});

	it("as an authorization server for a resource: RFC 8414 metadata, dynamic registration, a JWT access token", async () => {
		const as = await discover("oauth2");
		expect(as.code_challenge_methods_supported).toEqual(["S256"]);
		// A public client registers itself, as an MCP client does.
		const redirectUri = "http://localhost:6274/oauth/callback";
		const registration = await oauth.dynamicClientRegistrationRequest(
			as,
			{ redirect_uris: [redirectUri], token_endpoint_auth_method: "none", client_name: "idp test" },
			insecure,
		);
		const client = await oauth.processDynamicClientRegistrationResponse(registration);
		const { url, verifier } = await authorizationRequest(as, client, redirectUri, {
			scope: "mcp",
			resource: IDP_RESOURCE,
		});
		const callback = await signIn(new Browser(), url, "alice", "demo", redirectUri);

		const parameters = oauth.validateAuthResponse(as, client, callback.url, oauth.expectNoState);
		const response = await oauth.authorizationCodeGrantRequest(
			as,
			client,
			oauth.None(),
			parameters,
			redirectUri,
			verifier,
			{ ...insecure, additionalParameters: { resource: IDP_RESOURCE } },
		);
		const tokens = await oauth.processAuthorizationCodeResponse(as, client, response);
		expect(tokens.scope).toBe("mcp");
		expect(decodeJwt(tokens.access_token)).toMatchObject({
			iss: inject("idpIssuer"),
			aud: IDP_RESOURCE,
			sub: "alice",
			client_id: client.client_id,
			scope: "mcp",
			email: "alice@example.com",
			email_verified: true,
			groups: ["engineering"],
		});
	});
});
