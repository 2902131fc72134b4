import { createExecutionContext, env } from "cloudflare:test";
import { decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair, SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { type Caller, callerOf } from "../src/credentials/caller.ts";
import {
	ASSERTION_LIFETIME_SECONDS,
	IdentityAsserter,
	identityAssertion,
	jwksDocument,
} from "../src/credentials/identity-assertion.ts";
import { SigningKeyMisconfigured, signingKeys } from "../src/credentials/signing-keys.ts";
import { createApp } from "../src/edge/app.ts";
import type { Env } from "../src/env.ts";
import { BASE, gatewayFetch } from "./support/gateway.ts";
import {
	configureIdentity,
	identityLog,
	identityTenant,
	initializeStatus,
	postJwks,
	whoamiWith,
} from "./support/identity-upstream.ts";

/** One request asking: its concurrent assertions share one signing. */
const FLIGHT = {};

/**
 * The `identity` mode's assertions: JWTs the gateway signs with
 * IDENTITY_SIGNING_KEY (test bindings in vitest.config.ts), verified by a real
 * upstream (scripts/fixtures/identity-upstream.ts) against the JWKS the
 * gateway itself serves at /.well-known/jwks.json.
 */

const CURRENT_KID = "test-identity-2026-12";
const PREVIOUS_KID = "test-identity-2026-11";
const NOW = Date.UTC(2026, 11, 1, 12, 0, 0);

const aliceIdentity = {
	issuer: "https://idp.example",
	subject: "alice-sub",
	email: "alice@example.com",
	groups: ["staff", "admins"],
};
const alice: Caller = callerOf("oauth~staff~g1~u-alice", aliceIdentity);
const bob: Caller = callerOf("oauth~staff~g1~u-bob", {
	issuer: "https://idp.example",
	subject: "bob-sub",
	email: null,
	groups: [],
});
const keyCaller: Caller = callerOf("k_ci-robot", null);

function manualClock(start = NOW): { now: () => number; advance: (ms: number) => void } {
	let time = start;
	return { now: () => time, advance: (ms) => (time += ms) };
}

/** The JWKS as an upstream fetches it: from the gateway, over HTTP. */
async function gatewayJwks(): Promise<unknown> {
	const response = await gatewayFetch("/.well-known/jwks.json");
	expect(response.status).toBe(200);
	return response.json();
}

/** The app under settings of a test's own (a signing key changed or missing). */
async function appFetch(path: string, overrides: Partial<Env>): Promise<Response> {
	return await createApp().fetch(
		new Request(`${BASE}${path}`),
		{ ...env, ...overrides } as Env,
		createExecutionContext(),
	);
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
	return promise.then(
		() => {
			throw new Error("expected a rejection");
		},
		(error: unknown) => error,
	);
}

describe("an identity assertion names the caller", () => {
	it("a person's assertion is an ES256 JWT of the current key: iss the gateway, aud the server, sub, verified email, groups, 60 s", async () => {
		const asserter = new IdentityAsserter({ now: () => NOW });
		const token = await asserter.assertion(alice, "https://tools.internal/mcp", BASE, env, FLIGHT);
		expect(decodeProtectedHeader(token)).toEqual({ alg: "ES256", kid: CURRENT_KID, typ: "JWT" });
		const claims = decodeJwt(token);
		const iat = Math.floor(NOW / 1000);
		expect(claims).toEqual({
			iss: BASE,
			aud: "https://tools.internal/mcp",
			sub: "alice-sub",
			email: "alice@example.com",
			groups: ["staff", "admins"],
			iat,
			exp: iat + ASSERTION_LIFETIME_SECONDS,
			jti: expect.stringMatching(/^[A-Za-z0-9_-]{16,}$/),
		});
		expect(ASSERTION_LIFETIME_SECONDS).toBe(60);
	});

	it("a person whose address is not verified gets no email claim at all", async () => {
		const claims = decodeJwt(
			await new IdentityAsserter().assertion(bob, "https://tools.internal/mcp", BASE, env, FLIGHT),
		);
		expect(claims.sub).toBe("bob-sub");
		expect(claims).not.toHaveProperty("email");
		expect(claims.groups).toEqual([]);
		expect(claims).not.toHaveProperty("key_id");
	});

	it("an API key's assertion names the key: sub key:<id>, key_id, no email, no groups", async () => {
		const claims = decodeJwt(
			await new IdentityAsserter().assertion(keyCaller, "https://tools.internal/mcp", BASE, env, FLIGHT),
		);
		expect(claims).toMatchObject({ sub: "key:k_ci-robot", key_id: "k_ci-robot", groups: [] });
		expect(claims).not.toHaveProperty("email");
	});
});

describe("the gateway's JWKS", () => {
	it("GET /.well-known/jwks.json publishes the current and the previous public key, for five minutes, with no private part", async () => {
		const response = await gatewayFetch("/.well-known/jwks.json");
		expect(response.status).toBe(200);
		expect(response.headers.get("cache-control")).toBe("public, max-age=300");
		const document = (await response.json()) as { keys: Array<Record<string, unknown>> };
		expect(document.keys.map((key) => key.kid)).toEqual([CURRENT_KID, PREVIOUS_KID]);
		for (const key of document.keys) {
			expect(Object.keys(key).sort()).toEqual(["alg", "crv", "kid", "kty", "use", "x", "y"]);
			expect(key).toMatchObject({ kty: "EC", crv: "P-256", alg: "ES256", use: "sig" });
		}
	});

	it("without a signing key the gateway publishes no JWKS: 404", async () => {
		const response = await appFetch("/.well-known/jwks.json", {
			IDENTITY_SIGNING_KEY: "",
			IDENTITY_SIGNING_KEY_PREVIOUS: "",
		});
		expect(response.status).toBe(404);
		expect(await jwksDocument({})).toBeNull();
	});

	it("a signing key that is not an ES256 JWK is misconfigured, naming the setting and never the value", async () => {
		const { privateKey } = await generateKeyPair("RS256", { extractable: true });
		const rsa = JSON.stringify({ ...(await exportJWK(privateKey)), kid: "rsa-1" });
		const response = await appFetch("/.well-known/jwks.json", { IDENTITY_SIGNING_KEY: rsa });
		expect(response.status).toBe(500);
		const body = (await response.json()) as { error: { message: string; data: { kind: string } } };
		expect(body.error.data.kind).toBe("misconfigured");
		expect(body.error.message).toContain("IDENTITY_SIGNING_KEY");
		expect(body.error.message).not.toContain(rsa.slice(0, 40));

		const cases: Array<[Record<string, string>, string]> = [
			[{}, "IDENTITY_SIGNING_KEY"],
			[{ IDENTITY_SIGNING_KEY: "not json" }, "IDENTITY_SIGNING_KEY"],
			[{ IDENTITY_SIGNING_KEY: rsa }, "IDENTITY_SIGNING_KEY"],
			// The previous key with the current key's kid: verifiers could not tell them apart.
			[
				{
					IDENTITY_SIGNING_KEY: String(env.IDENTITY_SIGNING_KEY),
					IDENTITY_SIGNING_KEY_PREVIOUS: String(env.IDENTITY_SIGNING_KEY),
				},
				"IDENTITY_SIGNING_KEY_PREVIOUS",
			],
			[
				{ IDENTITY_SIGNING_KEY: String(env.IDENTITY_SIGNING_KEY), IDENTITY_SIGNING_KEY_PREVIOUS: "{}" },
				"IDENTITY_SIGNING_KEY_PREVIOUS",
			],
		];
		for (const [settings, setting] of cases) {
			const error = await rejection(identityAssertion(alice, "https://tools.internal/mcp", BASE, settings, FLIGHT));
			expect(error).toBeInstanceOf(SigningKeyMisconfigured);
			expect((error as SigningKeyMisconfigured).setting).toBe(setting);
		}
		// A public JWK (no `d`) cannot sign.
		const currentPublic = JSON.parse(String(env.IDENTITY_SIGNING_KEY)) as Record<string, unknown>;
		delete currentPublic.d;
		const error = await rejection(signingKeys({ IDENTITY_SIGNING_KEY: JSON.stringify(currentPublic) }));
		expect(error).toMatchObject({ setting: "IDENTITY_SIGNING_KEY", reason: "invalid" });
	});

	it("the keys are imported once per isolate and settings", async () => {
		expect(await signingKeys(env)).toBe(await signingKeys(env));
	});
});

describe("an upstream verifies the gateway's assertions against its JWKS", () => {
	it("the identity upstream verifies a person's assertion against the JWKS fetched from the gateway; whoami names them", async () => {
		const tenant = identityTenant("person");
		await postJwks(tenant.base, await gatewayJwks());
		await configureIdentity(tenant.base, { issuer: BASE });
		// Each request of the session (initialize, notifications/initialized, tools/call) carries its own check.
		const token = await identityAssertion(alice, tenant.mcpUrl, BASE, env, FLIGHT);
		const whoami = await whoamiWith(tenant.mcpUrl, token);
		expect(whoami.text).toBe("alice-sub");
		expect(whoami.claims).toEqual({
			sub: "alice-sub",
			email: "alice@example.com",
			groups: ["staff", "admins"],
			key_id: null,
			iss: BASE,
		});
		const log = await identityLog(tenant.base);
		expect(log.length).toBeGreaterThanOrEqual(3);
		expect(log.every((entry) => entry.outcome === "accepted" && entry.subject === "alice-sub")).toBe(true);
	});

	it("an API key's assertion reaches whoami as key:<id> with its key_id", async () => {
		const tenant = identityTenant("key");
		await postJwks(tenant.base, await gatewayJwks());
		await configureIdentity(tenant.base, { issuer: BASE });
		const whoami = await whoamiWith(
			tenant.mcpUrl,
			await identityAssertion(keyCaller, tenant.mcpUrl, BASE, env, FLIGHT),
		);
		expect(whoami.claims).toEqual({ sub: "key:k_ci-robot", email: null, groups: [], key_id: "k_ci-robot", iss: BASE });
	});

	it("an assertion signed by another key under the gateway's kid is refused with 401, and so is one for another server", async () => {
		const tenant = identityTenant("forged");
		await postJwks(tenant.base, await gatewayJwks());
		await configureIdentity(tenant.base, { issuer: BASE });
		const { privateKey } = await generateKeyPair("ES256");
		const now = Math.floor(Date.now() / 1000);
		const forged = await new SignJWT({ sub: "alice-sub", groups: ["admins"] })
			.setProtectedHeader({ alg: "ES256", kid: CURRENT_KID, typ: "JWT" })
			.setIssuer(BASE)
			.setAudience(tenant.mcpUrl)
			.setIssuedAt(now)
			.setExpirationTime(now + 60)
			.sign(privateKey);
		expect(await initializeStatus(tenant.mcpUrl, forged)).toBe(401);
		// A genuine assertion, but for another server: an upstream never accepts what was meant for a neighbour.
		const elsewhere = await identityAssertion(alice, "https://other.internal/mcp", BASE, env, FLIGHT);
		expect(await initializeStatus(tenant.mcpUrl, elsewhere)).toBe(401);
		const log = await identityLog(tenant.base);
		expect(log.map((entry) => entry.outcome)).toEqual(["refused", "refused"]);
		expect(log[0]?.reason).toMatch(/signature/);
		expect(log[1]?.reason).toMatch(/aud/);
	});

	it("across a rotation an assertion signed under the previous key verifies while both are published, and not once it is gone", async () => {
		const tenant = identityTenant("rotation");
		await configureIdentity(tenant.base, { issuer: BASE });
		// Signed before the rotation, when today's previous key was the current one.
		const beforeRotation = { IDENTITY_SIGNING_KEY: env.IDENTITY_SIGNING_KEY_PREVIOUS };
		const old = await new IdentityAsserter().assertion(alice, tenant.mcpUrl, BASE, beforeRotation, FLIGHT);
		expect(decodeProtectedHeader(old).kid).toBe(PREVIOUS_KID);
		await postJwks(tenant.base, await gatewayJwks());
		expect((await whoamiWith(tenant.mcpUrl, old)).text).toBe("alice-sub");
		// And what the gateway signs now verifies against the same JWKS.
		const fresh = await identityAssertion(alice, tenant.mcpUrl, BASE, env, FLIGHT);
		expect(decodeProtectedHeader(fresh).kid).toBe(CURRENT_KID);
		expect((await whoamiWith(tenant.mcpUrl, fresh)).text).toBe("alice-sub");
		// The rotation finished: the previous key is no longer published, so its assertions stop verifying.
		await postJwks(tenant.base, await jwksDocument({ IDENTITY_SIGNING_KEY: env.IDENTITY_SIGNING_KEY }));
		expect(await initializeStatus(tenant.mcpUrl, old)).toBe(401);
		expect((await whoamiWith(tenant.mcpUrl, fresh)).text).toBe("alice-sub");
	});
});

describe("assertions are cached per isolate", () => {
	it("a burst of 8 concurrent calls for one principal and server signs once", async () => {
		const asserter = new IdentityAsserter({ now: () => NOW });
		const tokens = await Promise.all(
			Array.from({ length: 8 }, () => asserter.assertion(alice, "https://tools.internal/mcp", BASE, env, FLIGHT)),
		);
		expect(new Set(tokens).size).toBe(1);
	});

	it("another server, another principal or another issuing origin gets an assertion of its own", async () => {
		const asserter = new IdentityAsserter({ now: () => NOW });
		const first = await asserter.assertion(alice, "https://tools.internal/mcp", BASE, env, FLIGHT);
		const others = await Promise.all([
			asserter.assertion(alice, "https://other.internal/mcp", BASE, env, FLIGHT),
			asserter.assertion(bob, "https://tools.internal/mcp", BASE, env, FLIGHT),
			asserter.assertion(keyCaller, "https://tools.internal/mcp", BASE, env, FLIGHT),
			asserter.assertion(alice, "https://tools.internal/mcp", "https://gateway.example", env, FLIGHT),
		]);
		expect(new Set([first, ...others]).size).toBe(5);
		expect(decodeJwt(others[1] ?? "").sub).toBe("bob-sub");
	});

	it("a person whose groups changed at a new sign-in gets a new assertion at once", async () => {
		const asserter = new IdentityAsserter({ now: () => NOW });
		const before = await asserter.assertion(alice, "https://tools.internal/mcp", BASE, env, FLIGHT);
		const promoted = callerOf(alice.principalId, { ...aliceIdentity, groups: ["staff"] });
		const after = await asserter.assertion(promoted, "https://tools.internal/mcp", BASE, env, FLIGHT);
		expect(after).not.toBe(before);
		expect(decodeJwt(after).groups).toEqual(["staff"]);
	});

	it("an assertion is reused while more than 30 s of its life is left, and signed anew after", async () => {
		const clock = manualClock();
		const asserter = new IdentityAsserter({ now: clock.now });
		const first = await asserter.assertion(alice, "https://tools.internal/mcp", BASE, env, FLIGHT);
		clock.advance(29_000);
		expect(await asserter.assertion(alice, "https://tools.internal/mcp", BASE, env, FLIGHT)).toBe(first);
		clock.advance(1_500);
		const second = await asserter.assertion(alice, "https://tools.internal/mcp", BASE, env, FLIGHT);
		expect(second).not.toBe(first);
		expect(decodeJwt(second).iat).toBe(Math.floor((NOW + 30_500) / 1000));
	});
});
