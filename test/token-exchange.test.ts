import { decodeJwt, generateKeyPair, SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { type Caller, callerOf } from "../src/credentials/caller.ts";
import {
	ACCESS_TOKEN_TYPE,
	exchangedToken,
	TOKEN_EXCHANGE_GRANT,
	type TokenExchangeAuth,
	TokenExchangeFailed,
	TokenExchanger,
	type TokenExchangeServer,
} from "../src/credentials/token-exchange.ts";
import { GatewayError } from "../src/mcp/gateway-error.ts";
import { configureIdentity, identityTenant, whoamiWith } from "./support/identity-upstream.ts";
import { issuerCall, newIssuer } from "./support/jwt-issuer.ts";

/** One request asking: its concurrent calls share one exchange. */
const FLIGHT = {};

/**
 * RFC 8693 token exchange against a real token endpoint (the jwt issuer,
 * scripts/fixtures/jwt-issuer.ts, a tenant per test): the person's access
 * token from that issuer is exchanged for one for the upstream's audience,
 * and the identity upstream verifies what came back against the issuer's keys.
 */

const AUDIENCE = "https://tools.internal/";
const SETTINGS = { allowHttpUpstreams: true, upstreamTimeoutMs: 5_000 };
const NOW = Date.UTC(2026, 11, 1, 12, 0, 0);

const alice: Caller = callerOf("oauth~staff~g1~u-alice", {
	issuer: "issuer",
	subject: "alice",
	email: null,
	groups: [],
});
const bob: Caller = callerOf("oauth~staff~g1~u-bob", { issuer: "issuer", subject: "bob", email: null, groups: [] });

interface ExchangeStats {
	exchanges: number;
	lastExchange: { params: Record<string, string>; clientAuthentication: string | null } | null;
}

const stats = (issuer: string) => issuerCall<ExchangeStats>(issuer, "/stats");

/** A person's access token from `issuer`, as OAUTH_ISSUER would have issued it. */
async function subjectToken(issuer: string, sub: string, lifetimeSeconds = 600): Promise<string> {
	const now = Math.floor(Date.now() / 1000);
	const claims = { iss: issuer, sub, aud: "https://gateway.test/mcp", iat: now, exp: now + lifetimeSeconds };
	return (await issuerCall<{ token: string }>(issuer, "/sign", { claims })).token;
}

function server(issuer: string, auth: Partial<TokenExchangeAuth> = {}, generation = "gen-1"): TokenExchangeServer {
	return {
		name: "tools",
		generation,
		auth: {
			type: "token-exchange",
			tokenEndpoint: `${issuer}/token`,
			audience: AUDIENCE,
			scopes: ["read", "write"],
			...auth,
		},
	};
}

function manualClock(start = NOW): { now: () => number; advance: (ms: number) => void } {
	let time = start;
	return { now: () => time, advance: (ms) => (time += ms) };
}

async function failure(promise: Promise<unknown>): Promise<TokenExchangeFailed> {
	const error = await promise.then(
		() => {
			throw new Error("expected the exchange to fail");
		},
		(caught: unknown) => caught,
	);
	expect(error).toBeInstanceOf(TokenExchangeFailed);
	return error as TokenExchangeFailed;
}

describe("the exchange asks for what the server's auth says", () => {
	it("RFC 8693's parameters go to the token endpoint, and its token names the person for the audience and scopes asked", async () => {
		const issuer = newIssuer("claims");
		const token = await new TokenExchanger().token(
			alice,
			await subjectToken(issuer, "alice"),
			server(issuer),
			{},
			SETTINGS,
			FLIGHT,
		);
		expect(decodeJwt(token)).toMatchObject({ iss: issuer, sub: "alice", aud: AUDIENCE, scope: "read write" });
		const { exchanges, lastExchange } = await stats(issuer);
		expect(exchanges).toBe(1);
		expect(lastExchange).toEqual({
			params: {
				grant_type: TOKEN_EXCHANGE_GRANT,
				subject_token_type: ACCESS_TOKEN_TYPE,
				requested_token_type: ACCESS_TOKEN_TYPE,
				audience: AUDIENCE,
				scope: "read write",
			},
			// No client configured: the exchange names none.
			clientAuthentication: null,
		});
	});

	it("a configured client authenticates with its secret, resolved from an UPSTREAM_ reference", async () => {
		const issuer = newIssuer("client");
		const auth = { clientId: "gateway-at-idp", clientSecret: "${UPSTREAM_TOOLS_SECRET}", scopes: [] };
		await new TokenExchanger().token(
			alice,
			await subjectToken(issuer, "alice"),
			server(issuer, auth),
			{ UPSTREAM_TOOLS_SECRET: "s3cret" },
			SETTINGS,
			FLIGHT,
		);
		const { lastExchange } = await stats(issuer);
		expect(lastExchange?.clientAuthentication).toBe("basic:gateway-at-idp");
		// No scopes asked: no scope parameter.
		expect(lastExchange?.params).not.toHaveProperty("scope");
	});

	it("a client without a secret names itself as a public client", async () => {
		const issuer = newIssuer("public");
		await new TokenExchanger().token(
			alice,
			await subjectToken(issuer, "alice"),
			server(issuer, { clientId: "gw" }),
			{},
			SETTINGS,
			FLIGHT,
		);
		const { lastExchange } = await stats(issuer);
		expect(lastExchange?.params.client_id).toBe("gw");
		expect(lastExchange?.clientAuthentication).toBeNull();
	});

	it("a client secret that is not a reference, or names an unset or non-UPSTREAM variable, is misconfigured, and nothing is sent", async () => {
		const issuer = newIssuer("secret");
		const subject = await subjectToken(issuer, "alice");
		for (const clientSecret of ["s3cret", "${UPSTREAM_MISSING}", "${KEY_SECRET}"]) {
			const error = await failure(
				new TokenExchanger().token(
					alice,
					subject,
					server(issuer, { clientId: "gw", clientSecret }),
					{ KEY_SECRET: "x" },
					SETTINGS,
					FLIGHT,
				),
			);
			expect(error.code).toBe("misconfigured");
			expect(error.message).not.toContain("s3cret");
			const client = error.toGatewayError();
			expect(client.kind).toBe("misconfigured");
			expect(client.message).not.toMatch(/clientSecret|UPSTREAM/);
		}
		expect((await stats(issuer)).exchanges).toBe(0);
	});

	it("a token endpoint in plain http is refused unless ALLOW_HTTP_UPSTREAMS, and off loopback always; nothing is sent", async () => {
		const issuer = newIssuer("http");
		const subject = await subjectToken(issuer, "alice");
		const strict = { ...SETTINGS, allowHttpUpstreams: false };
		expect(
			(await failure(new TokenExchanger().token(alice, subject, server(issuer), {}, strict, FLIGHT))).message,
		).toMatch(/ALLOW_HTTP_UPSTREAMS/);
		const remote = server(issuer, { tokenEndpoint: "http://idp.example/token" });
		expect((await failure(new TokenExchanger().token(alice, subject, remote, {}, SETTINGS, FLIGHT))).code).toBe(
			"misconfigured",
		);
		expect((await stats(issuer)).exchanges).toBe(0);
	});
});

describe("exchanged tokens are cached per principal and server", () => {
	it("8 concurrent calls share one exchange", async () => {
		const issuer = newIssuer("burst");
		const exchanger = new TokenExchanger();
		const subject = await subjectToken(issuer, "alice");
		const tokens = await Promise.all(
			Array.from({ length: 8 }, () => exchanger.token(alice, subject, server(issuer), {}, SETTINGS, FLIGHT)),
		);
		expect(new Set(tokens).size).toBe(1);
		expect((await stats(issuer)).exchanges).toBe(1);
	});

	it("a token is used until 30 s before it expires, then exchanged again (injected clock)", async () => {
		const issuer = newIssuer("expiry");
		await issuerCall(issuer, "/configure", { exchangeTtlSeconds: 120 });
		const clock = manualClock();
		const exchanger = new TokenExchanger({ now: clock.now });
		const subject = await subjectToken(issuer, "alice");
		const first = await exchanger.token(alice, subject, server(issuer), {}, SETTINGS, FLIGHT);
		clock.advance(89_000);
		expect(await exchanger.token(alice, subject, server(issuer), {}, SETTINGS, FLIGHT)).toBe(first);
		expect((await stats(issuer)).exchanges).toBe(1);
		clock.advance(2_000);
		await exchanger.token(alice, subject, server(issuer), {}, SETTINGS, FLIGHT);
		expect((await stats(issuer)).exchanges).toBe(2);
	});

	it("another subject token of the same person exchanges again; another person or server generation never shares a token", async () => {
		const issuer = newIssuer("keys");
		const exchanger = new TokenExchanger();
		const first = await subjectToken(issuer, "alice");
		const aliceToken = await exchanger.token(alice, first, server(issuer), {}, SETTINGS, FLIGHT);
		// Alice signed in again: a new access token of hers.
		const renewed = await subjectToken(issuer, "alice", 900);
		expect(await exchanger.token(alice, renewed, server(issuer), {}, SETTINGS, FLIGHT)).not.toBe(aliceToken);
		expect((await stats(issuer)).exchanges).toBe(2);
		const bobToken = await exchanger.token(
			bob,
			await subjectToken(issuer, "bob"),
			server(issuer),
			{},
			SETTINGS,
			FLIGHT,
		);
		expect(decodeJwt(bobToken).sub).toBe("bob");
		// The server deleted and created again: its tokens are not the old incarnation's.
		await exchanger.token(alice, renewed, server(issuer, {}, "gen-2"), {}, SETTINGS, FLIGHT);
		expect((await stats(issuer)).exchanges).toBe(4);
	});

	it("two tokens of one person exchanged at once each get the token exchanged for them", async () => {
		const issuer = newIssuer("race");
		const exchanger = new TokenExchanger();
		const [one, two] = await Promise.all([subjectToken(issuer, "alice"), subjectToken(issuer, "alice", 700)]);
		const [forOne, forTwo] = await Promise.all([
			exchanger.token(alice, one, server(issuer), {}, SETTINGS, FLIGHT),
			exchanger.token(alice, two, server(issuer), {}, SETTINGS, FLIGHT),
		]);
		expect(forOne).not.toBe(forTwo);
		expect((await stats(issuer)).exchanges).toBe(2);
	});
});

describe("a failed exchange says why", () => {
	it("a subject token the issuer did not sign is refused: TokenExchangeFailed with a sentence, nothing kept", async () => {
		const issuer = newIssuer("refused");
		const { privateKey } = await generateKeyPair("RS256");
		const now = Math.floor(Date.now() / 1000);
		const foreign = await new SignJWT({ sub: "alice" })
			.setProtectedHeader({ alg: "RS256" })
			.setIssuer(issuer)
			.setExpirationTime(now + 600)
			.sign(privateKey);
		const exchanger = new TokenExchanger();
		const error = await failure(exchanger.token(alice, foreign, server(issuer), {}, SETTINGS, FLIGHT));
		expect(error.code).toBe("refused");
		expect(error.message).toMatch(
			/^The token endpoint of server 'tools' refused to exchange your access token \(invalid_grant/,
		);
		const client = error.toGatewayError();
		expect(client).toBeInstanceOf(GatewayError);
		expect(client.kind).toBe("upstream_auth_required");
		expect(client.server).toBe("tools");
		// A refusal is not remembered: the next call asks again.
		await failure(exchanger.token(alice, foreign, server(issuer), {}, SETTINGS, FLIGHT));
		expect((await stats(issuer)).exchanges).toBe(2);
	});

	it("an expired subject token is refused too", async () => {
		const issuer = newIssuer("expired");
		const expired = await subjectToken(issuer, "alice", -60);
		expect((await failure(new TokenExchanger().token(alice, expired, server(issuer), {}, SETTINGS, FLIGHT))).code).toBe(
			"refused",
		);
	});

	it("a redirect is not followed and an oversized reply is not read", async () => {
		const issuer = newIssuer("hostile");
		const subject = await subjectToken(issuer, "alice");
		await issuerCall(issuer, "/configure", { exchangeMisbehaviour: "redirect" });
		const redirected = await failure(new TokenExchanger().token(alice, subject, server(issuer), {}, SETTINGS, FLIGHT));
		expect(redirected.code).toBe("invalid_reply");
		expect(redirected.message).toMatch(/redirect \(HTTP 302\)/);
		await issuerCall(issuer, "/configure", { exchangeMisbehaviour: "oversized" });
		const oversized = await failure(new TokenExchanger().token(alice, subject, server(issuer), {}, SETTINGS, FLIGHT));
		expect(oversized.code).toBe("invalid_reply");
		expect(oversized.message).toMatch(/more than 64 KiB/);
	});

	it("a token endpoint that cannot be reached is unreachable", async () => {
		const unreachable = server("http://127.0.0.1:1");
		const error = await failure(new TokenExchanger().token(alice, "any", unreachable, {}, SETTINGS, FLIGHT));
		expect(error.code).toBe("unreachable");
		expect(error.toGatewayError().kind).toBe("upstream_unavailable");
	});
});

describe("the upstream accepts the exchanged token", () => {
	it("the identity upstream verifies the exchanged token against the issuer's JWKS and whoami names the person", async () => {
		const issuer = newIssuer("upstream");
		const tenant = identityTenant("exchanged");
		await configureIdentity(tenant.base, { jwksUrl: `${issuer}/jwks`, issuer, audience: AUDIENCE });
		const token = await exchangedToken(
			alice,
			await subjectToken(issuer, "alice"),
			server(issuer),
			{},
			SETTINGS,
			FLIGHT,
		);
		const whoami = await whoamiWith(tenant.mcpUrl, token);
		expect(whoami.text).toBe("alice");
		expect(whoami.claims).toMatchObject({ sub: "alice", iss: issuer });
	});
});
