import { env, listDurableObjectIds } from "cloudflare:test";
import { afterEach, describe, expect, inject, it, vi } from "vitest";
import { admin, initializeBody, readReply, uniqueName } from "./support/gateway.ts";
import {
	CLIENT_REDIRECT,
	gatewayWith,
	ORIGIN,
	oauthClient,
	signInAs,
	testAccessRules,
} from "./support/oauth-client.ts";
import { registerServer, upstreamLog } from "./support/upstreams.ts";

const IDP = inject("idpIssuer");
/** The gateway as a pure resource server: the test identity provider is the organisation's authorization server. */
const gateway = gatewayWith({ OAUTH_ISSUER: IDP, OAUTH_SCOPES: "mcp" });
const _atClient = (url: URL) => url.href.startsWith(CLIENT_REDIRECT);
const JSON_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };

const accessRule = testAccessRules();

/** The SDK's flow against the external authorization server: discovery through the gateway, registration and sign-in there. */
async function connectAs(path: string, login: string) {
	const signedIn = await signInAs(gateway, path, login);
	expect(signedIn.authorizationUrl.origin).toBe(new URL(IDP).origin);
	return signedIn;
}

function initializeWith(token: string, gatewayFetch = gateway, path = "/mcp"): Promise<Response> {
	return gatewayFetch(`${ORIGIN}${path}`, {
		method: "POST",
		headers: { ...JSON_HEADERS, authorization: `Bearer ${token}` },
		body: JSON.stringify(initializeBody()),
	});
}

afterEach(() => {
	vi.restoreAllMocks();
});

/** The refusal lines the gateway logged for the operator. */
function refusalsLogged(logged: { mock: { calls: unknown[][] } }): Array<Record<string, unknown>> {
	return logged.mock.calls
		.map(([line]) => (typeof line === "string" && line.startsWith("{") ? JSON.parse(line) : null))
		.filter((entry): entry is Record<string, unknown> => entry !== null && String(entry.event).endsWith("_refused"));
}

describe("OAuth: an external authorization server", () => {
	it("metadata names the external issuer, and the 401 asks for its scope", async () => {
		const metadata = await (await gateway(`${ORIGIN}/.well-known/oauth-protected-resource/mcp`)).json();
		expect(metadata).toMatchObject({
			resource: `${ORIGIN}/mcp`,
			authorization_servers: [IDP],
			scopes_supported: ["mcp"],
		});
		const refused = await gateway(`${ORIGIN}/mcp`, {
			method: "POST",
			headers: JSON_HEADERS,
			body: JSON.stringify(initializeBody()),
		});
		expect(refused.status).toBe(401);
		expect(refused.headers.get("www-authenticate")).toContain('scope="mcp"');
		// The gateway is not an authorization server in this mode.
		expect((await gateway(`${ORIGIN}/.well-known/oauth-authorization-server`)).status).toBe(404);
		expect((await gateway(`${ORIGIN}/authorize`)).status).toBe(404);
	});

	it("an SDK client signs in at the external issuer and uses exactly the servers its access rule grants", async () => {
		const granted = await registerServer("beta");
		await registerServer("gamma");
		await accessRule({ match: { group: "engineering" }, servers: [granted] });
		const { provider, token } = await connectAs("/mcp", "alice");
		expect(token.split(".")).toHaveLength(3);
		const second = oauthClient("/mcp", provider, gateway);
		await second.client.connect(second.transport);
		const names = (await second.client.listTools()).tools.map((tool) => tool.name);
		expect(names.length).toBeGreaterThan(0);
		expect(names.every((name) => name.startsWith(`${granted}__`))).toBe(true);
		const result = await second.client.callTool({ name: `${granted}__echo`, arguments: { text: "external" } });
		expect(result.content).toEqual([{ type: "text", text: "external" }]);
		await second.client.close();
		expect((await upstreamLog("beta")).some((entry) => entry.authorization?.includes(token))).toBe(false);
	});

	it("a valid token whose identity no rule grants gets 403 saying why but not who (the log says who), and opens nothing", async () => {
		await accessRule({ match: { group: "engineering" } });
		const { token } = await connectAs("/mcp", "bob");
		const logged = vi.spyOn(console, "log");
		const sessionsBefore = (await listDurableObjectIds(env.SESSIONS)).length;
		const ledgersBefore = (await listDurableObjectIds(env.KEY_SESSIONS)).length;
		const response = await initializeWith(token);
		expect(response.status).toBe(403);
		expect(response.headers.get("mcp-session-id")).toBeNull();
		// Refused before admission: no session object, no ledger of the person's sessions.
		expect((await listDurableObjectIds(env.SESSIONS)).length).toBe(sessionsBefore);
		expect((await listDurableObjectIds(env.KEY_SESSIONS)).length).toBe(ledgersBefore);
		const body = await response.text();
		expect(JSON.parse(body).error?.message).toBe(
			"Forbidden: this account may not use this gateway (no access rule of this gateway matches it); ask its operator for access.",
		);
		expect(body).not.toMatch(/bob|contractor/);
		expect(refusalsLogged(logged)).toContainEqual(
			expect.objectContaining({
				event: "oauth_token_refused",
				reason: "no_rule",
				subject: "bob",
				email: "bob@contractor.example",
			}),
		);
	});

	it("a token whose email the issuer does not say is verified matches no email rule: 403, saying the address is not verified", async () => {
		await accessRule({ match: { emailDomain: "example.com" } });
		// Carol's address at the identity provider is example.com's, but email_verified is false.
		const { token } = await connectAs("/mcp", "carol");
		const response = await initializeWith(token);
		expect(response.status).toBe(403);
		expect((await readReply(response)).error?.message).toBe(
			"Forbidden: this account may not use this gateway (its email address is not verified by its identity provider, and this gateway counts only verified addresses); ask its operator for access.",
		);
	});

	it("the gateway's own tokens, and tokens of the right issuer for another audience, are refused as invalid_token", async () => {
		await accessRule({ match: { subject: "alice" } });
		const { token } = await connectAs("/mcp", "alice");
		// The same token at a gateway that expects another audience.
		const elsewhere = gatewayWith({ OAUTH_ISSUER: IDP, OAUTH_AUDIENCE: "https://other.example/mcp" });
		const refused = await initializeWith(token, elsewhere);
		expect(refused.status).toBe(401);
		expect(refused.headers.get("www-authenticate")).toContain('error="invalid_token"');
		expect((await readReply(refused)).error?.message).toBe(
			"The access token was refused: the token is not for this gateway (audience).",
		);
		// An opaque token is not a JWT of this issuer.
		const opaque = await initializeWith("u_x:g_y:not-a-jwt");
		expect(opaque.status).toBe(401);
		expect((await readReply(opaque)).error?.message).toBe("The access token was refused: the token is not a JWT.");
	});

	it("a token from another issuer is refused, and an API key still works next to OAuth", async () => {
		const other = `http://127.0.0.1:${inject("jwtIssuerPort")}/t/${uniqueName("stranger")}`;
		const now = Math.floor(Date.now() / 1000);
		const signed = await fetch(`${other}/sign`, {
			method: "POST",
			headers: { "content-type": "application/json" },
			body: JSON.stringify({ claims: { iss: other, aud: `${ORIGIN}/mcp`, sub: "alice", iat: now, exp: now + 300 } }),
		});
		const { token } = (await signed.json()) as { token: string };
		const refused = await initializeWith(token);
		expect(refused.status).toBe(401);
		expect((await readReply(refused)).error?.message).toMatch(/^The access token was refused: /);

		const server = await registerServer("beta");
		const created = await admin("POST", "/keys", { servers: [server] });
		const { key } = (await created.json()) as { key: string };
		expect((await initializeWith(key, gateway, `/mcp/${server}`)).status).toBe(200);
	});
});

/** A tenant of the JWT issuer process (scripts/fixtures/jwt-issuer.ts) of its own, and a way to have it sign claims. */
function jwtTenant(label: string) {
	const issuer = `http://127.0.0.1:${inject("jwtIssuerPort")}/t/${uniqueName(label)}`;
	const sign = async (claims: Record<string, unknown>, typ?: string): Promise<string> => {
		const now = Math.floor(Date.now() / 1000);
		const response = await fetch(`${issuer}/sign`, {
			method: "POST",
			headers: { "content-type": "application/json" },
			body: JSON.stringify({ claims: { iss: issuer, iat: now, exp: now + 300, ...claims }, ...(typ ? { typ } : {}) }),
		});
		return ((await response.json()) as { token: string }).token;
	};
	return { issuer, sign };
}

describe("OAuth: an external issuer's ID tokens are not access tokens", () => {
	it("an ID token of the issuer whose aud is the gateway's audience (a client id) gets 401 invalid_token; its access token is served", async () => {
		const clientId = "3f1c9a2e-gateway-client";
		const { issuer, sign } = jwtTenant("id-token");
		const atClientId = gatewayWith({ OAUTH_ISSUER: issuer, OAUTH_AUDIENCE: clientId });
		const subject = uniqueName("ada");
		await accessRule({ match: { subject } });
		const idToken = await sign(
			{ aud: clientId, azp: clientId, sub: subject, nonce: "n-1", auth_time: Math.floor(Date.now() / 1000) },
			"JWT",
		);
		const refused = await initializeWith(idToken, atClientId);
		expect(refused.status).toBe(401);
		expect(refused.headers.get("www-authenticate")).toContain('error="invalid_token"');
		expect((await readReply(refused)).error?.message).toBe(
			"The access token was refused: the token is not an access token (neither typed at+jwt nor carrying a scope).",
		);
		// The same person's access token for the same audience (Okta's scp list) is one.
		const accessToken = await sign({ aud: clientId, sub: subject, scp: ["mcp"] }, "JWT");
		expect((await initializeWith(accessToken, atClientId)).status).toBe(200);
		// Requiring RFC 9068's type refuses even that one.
		const typed = gatewayWith({ OAUTH_ISSUER: issuer, OAUTH_AUDIENCE: clientId, OAUTH_REQUIRED_TYP: "at+jwt" });
		expect((await readReply(await initializeWith(accessToken, typed))).error?.message).toBe(
			"The access token was refused: the token is not an access token (its typ is not at+jwt).",
		);
	});

	it("an issuer named in EMAIL_VERIFIED_ISSUERS has its addresses count without email_verified; otherwise they do not", async () => {
		const { issuer, sign } = jwtTenant("trusted-emails");
		const domain = `${uniqueName("corp")}.example`;
		await accessRule({ match: { emailDomain: domain } });
		const token = await sign({ aud: `${ORIGIN}/mcp`, sub: uniqueName("eve"), email: `eve@${domain}`, scope: "mcp" });
		const untrusted = await initializeWith(token, gatewayWith({ OAUTH_ISSUER: issuer }));
		expect(untrusted.status).toBe(403);
		expect((await readReply(untrusted)).error?.message).toContain("its email address is not verified");
		const trusted = gatewayWith({ OAUTH_ISSUER: issuer, EMAIL_VERIFIED_ISSUERS: issuer });
		expect((await initializeWith(token, trusted)).status).toBe(200);
	});
});
