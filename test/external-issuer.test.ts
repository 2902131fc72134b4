import { base64url, decodeProtectedHeader, generateKeyPair, SignJWT } from "jose";
import { afterEach, describe, expect, inject, it, vi } from "vitest";
import { type ExternalIssuer, TokenRejected, verifyExternalToken } from "../src/auth/external-issuer.ts";
import { IssuerUnavailable, metadataUrls } from "../src/auth/issuer-metadata.ts";
import { settingsFrom } from "../src/config.ts";
import { GatewayError } from "../src/mcp/gateway-error.ts";

/**
 * Tokens come from a real issuer (scripts/fixtures/jwt-issuer.ts) on loopback: its
 * keys, its metadata, its signatures. Tests that change an issuer (rotation,
 * metadata) use a tenant of their own, so no test sees another's keys.
 */
const ORIGIN = () => `http://127.0.0.1:${inject("jwtIssuerPort")}`;
const AUDIENCE = "https://gateway.test/mcp";
/** One instant the token tests reason from; verification gets it through the `now` option. */
const NOW = Date.UTC(2026, 11, 1, 12, 0, 0);
const at = () => NOW;
/** Nothing listens on port 1 of loopback: a connection there is refused at once. */
const UNREACHABLE = "http://127.0.0.1:1";

let tenants = 0;

/** A new issuer with keys, counters and (in this isolate) caches of its own. */
function newTenant(label: string): string {
	tenants += 1;
	return `${ORIGIN()}/t/${label}-${tenants}`;
}

function configured(
	issuer: string,
	jwksUrl: string | null = null,
	overrides: Partial<ExternalIssuer> = {},
): ExternalIssuer {
	return {
		issuer,
		audience: AUDIENCE,
		jwksUrl,
		emailsVerified: false,
		requiredTyp: null,
		requiredScope: null,
		...overrides,
	};
}

/** Claims of a good access token from `issuer` (it carries a scope), valid for five minutes from `now`; `undefined` drops a claim. */
function claims(issuer: string, overrides: Record<string, unknown> = {}, now = NOW): Record<string, unknown> {
	const seconds = Math.floor(now / 1000);
	return { iss: issuer, aud: AUDIENCE, sub: "user-1", scope: "mcp", iat: seconds, exp: seconds + 300, ...overrides };
}

interface SignOptions {
	alg?: "RS256" | "ES256";
	kid?: string;
	typ?: string;
	header?: Record<string, unknown>;
}

async function issuerCall<T>(issuer: string, route: string, body?: unknown): Promise<T> {
	const response = await fetch(`${issuer}${route}`, {
		method: body === undefined ? "GET" : "POST",
		...(body === undefined ? {} : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
	});
	if (!response.ok) throw new Error(`issuer ${route}: ${response.status} ${await response.text()}`);
	return response.status === 204 ? (undefined as T) : ((await response.json()) as T);
}

/** `claims` signed by the issuer's current key. */
async function sign(issuer: string, payload: Record<string, unknown>, options: SignOptions = {}): Promise<string> {
	return (await issuerCall<{ token: string }>(issuer, "/sign", { claims: payload, ...options })).token;
}

/** How many times the issuer's JWKS and metadata were fetched (its token endpoint's counts left out). */
async function stats(issuer: string): Promise<{ jwks: number; metadata: number }> {
	const { jwks, metadata } = await issuerCall<{ jwks: number; metadata: number }>(issuer, "/stats");
	return { jwks, metadata };
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
	return promise.then(
		() => {
			throw new Error("expected a failure, but the token was accepted");
		},
		(error: unknown) => error,
	);
}

async function expectRejected(promise: Promise<unknown>, reason: string): Promise<void> {
	const error = await failure(promise);
	expect(error).toBeInstanceOf(TokenRejected);
	expect(error).toHaveProperty("reason", reason);
}

async function expectUnavailable(promise: Promise<unknown>, message: RegExp): Promise<void> {
	const error = await failure(promise);
	expect(error).toBeInstanceOf(IssuerUnavailable);
	expect(error).not.toBeInstanceOf(TokenRejected);
	expect((error as Error).message).toMatch(message);
}

function encodeJson(value: unknown): string {
	return base64url.encode(JSON.stringify(value));
}

describe("a token from the configured issuer", () => {
	it("yields the subject, the lowercased verified email and the groups, tagged with the issuer", async () => {
		const issuer = ORIGIN();
		const token = await sign(
			issuer,
			claims(issuer, { email: "Ada.Lovelace@Example.COM", email_verified: true, groups: ["eng", "admins"] }),
		);
		await expect(verifyExternalToken(token, configured(issuer), { now: at })).resolves.toEqual({
			identity: { issuer, subject: "user-1", email: "ada.lovelace@example.com", groups: ["eng", "admins"] },
			unverifiedEmail: null,
		});
	});

	it("keeps an email without email_verified out of the identity, unless the operator trusts the issuer's addresses", async () => {
		const issuer = ORIGIN();
		const token = await sign(issuer, claims(issuer, { email: "ada@example.com" }));
		await expect(verifyExternalToken(token, configured(issuer), { now: at })).resolves.toMatchObject({
			identity: { email: null },
			unverifiedEmail: "ada@example.com",
		});
		const trusted = configured(issuer, null, { emailsVerified: true });
		await expect(verifyExternalToken(token, trusted, { now: at })).resolves.toMatchObject({
			identity: { email: "ada@example.com" },
			unverifiedEmail: null,
		});
	});

	it("verifies with the issuer's ES256 key as well as its RS256 key", async () => {
		const issuer = ORIGIN();
		const token = await sign(issuer, claims(issuer, { sub: "ec-user" }), { alg: "ES256" });
		expect(decodeProtectedHeader(token).alg).toBe("ES256");
		await expect(verifyExternalToken(token, configured(issuer), { now: at })).resolves.toMatchObject({
			identity: { subject: "ec-user" },
		});
	});

	it("is accepted when its aud is a list that contains the gateway", async () => {
		const issuer = ORIGIN();
		const token = await sign(issuer, claims(issuer, { aud: ["https://other.example/api", AUDIENCE] }));
		await expect(verifyExternalToken(token, configured(issuer), { now: at })).resolves.toMatchObject({
			identity: { subject: "user-1" },
		});
	});

	it("is accepted typed at+jwt, application/at+jwt, JWT or untyped; any other type is refused", async () => {
		const issuer = ORIGIN();
		for (const typ of ["at+jwt", "application/at+jwt", "JWT", undefined]) {
			const token = await sign(issuer, claims(issuer), typ === undefined ? {} : { typ });
			await expect(verifyExternalToken(token, configured(issuer), { now: at })).resolves.toMatchObject({
				identity: { subject: "user-1" },
			});
		}
		const proof = await sign(issuer, claims(issuer), { typ: "dpop+jwt" });
		await expectRejected(
			verifyExternalToken(proof, configured(issuer), { now: at }),
			"the token is not an access token (typ)",
		);
	});

	it("passes within the 30 s clock tolerance on exp and nbf", async () => {
		const issuer = ORIGIN();
		const seconds = Math.floor(NOW / 1000);
		const justExpired = await sign(issuer, claims(issuer, { exp: seconds - 20 }));
		const almostValid = await sign(issuer, claims(issuer, { nbf: seconds + 20 }));
		await expect(verifyExternalToken(justExpired, configured(issuer), { now: at })).resolves.toBeTruthy();
		await expect(verifyExternalToken(almostValid, configured(issuer), { now: at })).resolves.toBeTruthy();
	});
});

describe("access tokens, not ID tokens", () => {
	/** The gateway's audience is a client id here, as when an operator sets OAUTH_AUDIENCE to one (Entra ID's v2 tokens). */
	const CLIENT_ID = "0b8a7e6c-client-of-the-gateway";
	/** What an OpenID provider signs for a client at sign-in: the client's id as aud, a nonce, no scope. */
	const idTokenClaims = (issuer: string) =>
		claims(issuer, {
			aud: CLIENT_ID,
			azp: CLIENT_ID,
			scope: undefined,
			nonce: "n-0S6_WzA2Mj",
			auth_time: Math.floor(NOW / 1000) - 5,
			email: "ada@example.com",
			email_verified: true,
		});
	const asClient = (issuer: string, overrides: Partial<ExternalIssuer> = {}) =>
		configured(issuer, null, { audience: CLIENT_ID, ...overrides });

	it("an ID token of the issuer with the gateway's audience is refused, typed JWT or untyped", async () => {
		const issuer = ORIGIN();
		for (const typ of ["JWT", undefined]) {
			const token = await sign(issuer, idTokenClaims(issuer), typ === undefined ? {} : { typ });
			await expectRejected(
				verifyExternalToken(token, asClient(issuer), { now: at }),
				"the token is not an access token (neither typed at+jwt nor carrying a scope)",
			);
		}
	});

	it("by default an access token is typed at+jwt or carries a scope, in scope (a string) or scp (a list or a string)", async () => {
		const issuer = ORIGIN();
		const accepted = [
			{ payload: { scope: undefined }, typ: "at+jwt" },
			{ payload: { scope: "openid mcp" }, typ: "JWT" },
			{ payload: { scope: undefined, scp: ["mcp"] }, typ: undefined },
			{ payload: { scope: undefined, scp: "mcp.access" }, typ: "JWT" },
		];
		for (const { payload, typ } of accepted) {
			const token = await sign(issuer, claims(issuer, { aud: CLIENT_ID, ...payload }), typ ? { typ } : {});
			await expect(verifyExternalToken(token, asClient(issuer), { now: at })).resolves.toMatchObject({
				identity: { subject: "user-1" },
			});
		}
		// An empty scope is no scope.
		const empty = await sign(issuer, claims(issuer, { aud: CLIENT_ID, scope: " " }), { typ: "JWT" });
		await expectRejected(
			verifyExternalToken(empty, asClient(issuer), { now: at }),
			"the token is not an access token (neither typed at+jwt nor carrying a scope)",
		);
	});

	it("OAUTH_REQUIRED_TYP at+jwt refuses a scoped token typed JWT or untyped", async () => {
		const issuer = ORIGIN();
		const strict = asClient(issuer, { requiredTyp: "at+jwt" });
		for (const typ of ["JWT", undefined]) {
			const token = await sign(issuer, claims(issuer, { aud: CLIENT_ID }), typ ? { typ } : {});
			await expectRejected(
				verifyExternalToken(token, strict, { now: at }),
				"the token is not an access token (its typ is not at+jwt)",
			);
		}
		const typed = await sign(issuer, claims(issuer, { aud: CLIENT_ID }), { typ: "application/at+jwt" });
		await expect(verifyExternalToken(typed, strict, { now: at })).resolves.toMatchObject({
			identity: { subject: "user-1" },
		});
	});

	it("OAUTH_REQUIRED_SCOPE refuses a token without that scope, even typed at+jwt, and finds it in scope or scp", async () => {
		const issuer = ORIGIN();
		const scoped = asClient(issuer, { requiredScope: "mcp.access" });
		for (const payload of [{ scope: "openid mcp" }, { scope: undefined }, { scope: undefined, scp: ["mcp"] }]) {
			const token = await sign(issuer, claims(issuer, { aud: CLIENT_ID, ...payload }), { typ: "at+jwt" });
			await expectRejected(
				verifyExternalToken(token, scoped, { now: at }),
				"the token does not carry the scope mcp.access",
			);
		}
		for (const payload of [
			{ scope: "openid mcp.access" },
			{ scope: undefined, scp: "User.Read mcp.access" },
			{ scope: undefined, scp: ["mcp.access"] },
		]) {
			const token = await sign(issuer, claims(issuer, { aud: CLIENT_ID, ...payload }), { typ: "JWT" });
			await expect(verifyExternalToken(token, scoped, { now: at })).resolves.toMatchObject({
				identity: { subject: "user-1" },
			});
		}
	});
});

describe("tokens the gateway refuses, each with its reason", () => {
	it("an expired token: the token has expired", async () => {
		const issuer = ORIGIN();
		const token = await sign(issuer, claims(issuer));
		// Valid for 300 s; the clock is 300 s plus the tolerance plus one past its issue.
		const later = () => NOW + 331_000;
		await expectRejected(verifyExternalToken(token, configured(issuer), { now: later }), "the token has expired");
	});

	it("a token whose nbf is in the future: the token is not valid yet", async () => {
		const issuer = ORIGIN();
		const token = await sign(issuer, claims(issuer, { nbf: Math.floor(NOW / 1000) + 120 }));
		await expectRejected(verifyExternalToken(token, configured(issuer), { now: at }), "the token is not valid yet");
	});

	it("a token for another resource: the token is not for this gateway (audience)", async () => {
		const issuer = ORIGIN();
		const token = await sign(issuer, claims(issuer, { aud: "https://other.example/mcp" }));
		await expectRejected(
			verifyExternalToken(token, configured(issuer), { now: at }),
			"the token is not for this gateway (audience)",
		);
	});

	it("a token naming another issuer, even one signed with the issuer's key: the token was not issued by <issuer>", async () => {
		const issuer = ORIGIN();
		const token = await sign(issuer, claims(issuer, { iss: "https://elsewhere.example" }));
		await expectRejected(
			verifyExternalToken(token, configured(issuer), { now: at }),
			`the token was not issued by ${issuer}`,
		);
	});

	it("an unsigned token (alg none) is refused before the issuer is asked for anything", async () => {
		const issuer = newTenant("unsigned");
		const token = `${encodeJson({ alg: "none", typ: "JWT" })}.${encodeJson(claims(issuer))}.`;
		await expectRejected(
			verifyExternalToken(token, configured(issuer), { now: at }),
			"the token's signing algorithm is not accepted (alg)",
		);
		expect(await stats(issuer)).toEqual({ jwks: 0, metadata: 0 });
	});

	it("an HS256 token signed with some shared secret: the algorithm is not accepted", async () => {
		const issuer = ORIGIN();
		const { kid } = decodeProtectedHeader(await sign(issuer, claims(issuer)));
		const token = await new SignJWT(claims(issuer))
			.setProtectedHeader({ alg: "HS256", kid })
			.sign(new TextEncoder().encode("a-shared-secret-of-at-least-32-bytes"));
		await expectRejected(
			verifyExternalToken(token, configured(issuer), { now: at }),
			"the token's signing algorithm is not accepted (alg)",
		);
	});

	it("a token signed by a key the issuer does not publish, under the issuer's own kid: the signature does not verify", async () => {
		const issuer = ORIGIN();
		const { kid } = decodeProtectedHeader(await sign(issuer, claims(issuer)));
		const forger = await generateKeyPair("RS256");
		const token = await new SignJWT(claims(issuer)).setProtectedHeader({ alg: "RS256", kid }).sign(forger.privateKey);
		await expectRejected(
			verifyExternalToken(token, configured(issuer), { now: at }),
			"the token's signature does not verify",
		);
	});

	it("a token signed by a key the issuer does not publish, under an unknown kid: the key is not one the issuer publishes", async () => {
		const issuer = ORIGIN();
		const forger = await generateKeyPair("RS256");
		const token = await new SignJWT(claims(issuer))
			.setProtectedHeader({ alg: "RS256", kid: "forged-key" })
			.sign(forger.privateKey);
		await expectRejected(
			verifyExternalToken(token, configured(issuer), { now: at }),
			"the token's signing key is not one the issuer publishes",
		);
	});

	it("a tampered payload under the original signature: the signature does not verify", async () => {
		const issuer = ORIGIN();
		const [header, payload, signature] = (await sign(issuer, claims(issuer, { groups: ["readers"] }))).split(".");
		const claimsSet = JSON.parse(new TextDecoder().decode(base64url.decode(payload ?? "")));
		const tampered = `${header}.${encodeJson({ ...claimsSet, groups: ["admins"] })}.${signature}`;
		await expectRejected(
			verifyExternalToken(tampered, configured(issuer), { now: at }),
			"the token's signature does not verify",
		);
	});

	it("a token without exp: the token has no expiry (exp)", async () => {
		const issuer = ORIGIN();
		const token = await sign(issuer, claims(issuer, { exp: undefined }));
		await expectRejected(verifyExternalToken(token, configured(issuer), { now: at }), "the token has no expiry (exp)");
	});

	it("a token without sub, or with a sub that is not a string: the token names no subject", async () => {
		const issuer = ORIGIN();
		for (const sub of [undefined, 42]) {
			const token = await sign(issuer, claims(issuer, { sub }));
			await expectRejected(verifyExternalToken(token, configured(issuer), { now: at }), "the token names no subject");
		}
	});

	it("an opaque token: the token is not a JWT", async () => {
		const issuer = ORIGIN();
		for (const token of ["an-opaque-access-token", "a.b.c", "a.b.c.d.e"]) {
			await expectRejected(verifyExternalToken(token, configured(issuer), { now: at }), "the token is not a JWT");
		}
	});
});

describe("key rotation", () => {
	afterEach(() => {
		vi.useRealTimers();
	});

	it("a token under the new kid verifies after one refetch of the keys; unknown kids within the cooldown fetch nothing more", async () => {
		// jose times its key set's cooldown with Date.now(); a fake Date moves it past 30 s without sleeping.
		vi.useFakeTimers({ toFake: ["Date"] });
		const issuer = newTenant("rotation");
		const before = await sign(issuer, claims(issuer, {}, Date.now()));
		await expect(verifyExternalToken(before, configured(issuer))).resolves.toMatchObject({
			identity: { subject: "user-1" },
		});
		expect(await stats(issuer)).toEqual({ jwks: 1, metadata: 1 });

		const { kid } = await issuerCall<{ kid: string }>(issuer, "/rotate", {});
		const after = await sign(issuer, claims(issuer, {}, Date.now()));
		expect(decodeProtectedHeader(after).kid).toBe(kid);
		// Within 30 s of the last fetch an unknown kid is refused without asking the issuer.
		await expectRejected(
			verifyExternalToken(after, configured(issuer)),
			"the token's signing key is not one the issuer publishes",
		);
		expect((await stats(issuer)).jwks).toBe(1);

		vi.setSystemTime(Date.now() + 31_000);
		await expect(verifyExternalToken(after, configured(issuer))).resolves.toMatchObject({
			identity: { subject: "user-1" },
		});
		expect((await stats(issuer)).jwks).toBe(2);

		// The refetch restarted the cooldown: garbage kids are refused from the cache.
		for (const garbage of ["garbage-1", "garbage-2", "garbage-3", "garbage-4", "garbage-5"]) {
			const token = await sign(issuer, claims(issuer, {}, Date.now()), { kid: garbage });
			await expectRejected(
				verifyExternalToken(token, configured(issuer)),
				"the token's signing key is not one the issuer publishes",
			);
		}
		// The retired key left the set along with its kid.
		await expectRejected(
			verifyExternalToken(before, configured(issuer)),
			"the token's signing key is not one the issuer publishes",
		);
		expect(await stats(issuer)).toEqual({ jwks: 2, metadata: 1 });
	});
});

describe("finding the issuer's keys", () => {
	it("lists metadata candidates in MCP's order, with RFC 8414 path insertion for an issuer with a path", () => {
		expect(metadataUrls("https://idp.example")).toEqual([
			"https://idp.example/.well-known/oauth-authorization-server",
			"https://idp.example/.well-known/openid-configuration",
		]);
		expect(metadataUrls("https://idp.example/tenants/acme/")).toEqual([
			"https://idp.example/.well-known/oauth-authorization-server/tenants/acme",
			"https://idp.example/.well-known/openid-configuration/tenants/acme",
			"https://idp.example/tenants/acme/.well-known/openid-configuration",
		]);
	});

	it("discovers the JWKS from the metadata once per isolate, through the path-inserted URL", async () => {
		const issuer = newTenant("discovered");
		for (let round = 0; round < 3; round += 1) {
			const token = await sign(issuer, claims(issuer));
			await expect(verifyExternalToken(token, configured(issuer), { now: at })).resolves.toMatchObject({
				identity: { issuer },
			});
		}
		expect(await stats(issuer)).toEqual({ jwks: 1, metadata: 1 });
	});

	it("falls back to OpenID configuration when the issuer publishes no OAuth metadata", async () => {
		const issuer = newTenant("openid");
		await issuerCall(issuer, "/configure", { discovery: "openid-configuration" });
		const token = await sign(issuer, claims(issuer));
		await expect(verifyExternalToken(token, configured(issuer), { now: at })).resolves.toMatchObject({
			identity: { issuer },
		});
		// The OAuth document's 404, then the OpenID document.
		expect(await stats(issuer)).toEqual({ jwks: 1, metadata: 2 });
	});

	it("uses a configured JWKS URL without asking for metadata", async () => {
		const issuer = newTenant("configured-jwks");
		const token = await sign(issuer, claims(issuer));
		await expect(verifyExternalToken(token, configured(issuer, `${issuer}/jwks`), { now: at })).resolves.toMatchObject({
			identity: { issuer },
		});
		expect(await stats(issuer)).toEqual({ jwks: 1, metadata: 0 });
	});

	it("concurrent first verifications each look the metadata up for themselves (none waits on another request's I/O), and a verification after one settled asks nobody", async () => {
		const issuer = newTenant("concurrent");
		const requested: string[] = [];
		const countingFetch: typeof fetch = (input, init) => {
			requested.push(input instanceof Request ? input.url : String(input));
			return fetch(input, init);
		};
		const tokens = await Promise.all([1, 2, 3, 4, 5].map((n) => sign(issuer, claims(issuer, { sub: `user-${n}` }))));
		const identities = await Promise.all(
			tokens.map((token) => verifyExternalToken(token, configured(issuer), { fetch: countingFetch, now: at })),
		);
		expect(identities.map((claimed) => claimed.identity.subject)).toEqual([
			"user-1",
			"user-2",
			"user-3",
			"user-4",
			"user-5",
		]);
		const metadata = () => requested.filter((url) => url.includes("/.well-known/"));
		expect(metadata()).toEqual(Array(5).fill(metadataUrls(issuer)[0] ?? "a metadata URL"));
		// Settled, the URL is the isolate's: the next verification reads no metadata.
		const later = await sign(issuer, claims(issuer, { sub: "user-6" }));
		await verifyExternalToken(later, configured(issuer), { fetch: countingFetch, now: at });
		expect(metadata()).toHaveLength(5);
		expect((await stats(issuer)).metadata).toBe(5);
	});

	it("refuses metadata that names another issuer, and looks again on the next request", async () => {
		const issuer = newTenant("spoofed");
		await issuerCall(issuer, "/configure", { claimedIssuer: "https://elsewhere.example" });
		const token = await sign(issuer, claims(issuer));
		await expectUnavailable(
			verifyExternalToken(token, configured(issuer), { now: at }),
			/names another issuer \(https:\/\/elsewhere\.example\), not http:\/\/127\.0\.0\.1:\d+\/t\/spoofed-\d+$/,
		);
		expect(await stats(issuer)).toEqual({ jwks: 0, metadata: 1 });

		// A failure is not cached: once the issuer is fixed, the next request finds its keys.
		await issuerCall(issuer, "/configure", { claimedIssuer: null });
		await expect(verifyExternalToken(token, configured(issuer), { now: at })).resolves.toMatchObject({
			identity: { issuer },
		});
		expect(await stats(issuer)).toEqual({ jwks: 1, metadata: 2 });
	});

	it("an unreachable issuer is IssuerUnavailable, not TokenRejected, whether its metadata or its keys cannot be had", async () => {
		const token = await sign(ORIGIN(), claims(UNREACHABLE));
		await expectUnavailable(
			verifyExternalToken(token, configured(UNREACHABLE), { now: at }),
			/^the metadata of http:\/\/127\.0\.0\.1:1 could not be fetched from http:\/\/127\.0\.0\.1:1\/\.well-known\/oauth-authorization-server: /,
		);
		await expectUnavailable(
			verifyExternalToken(token, configured(UNREACHABLE, `${UNREACHABLE}/jwks`), { now: at }),
			/^the key set of http:\/\/127\.0\.0\.1:1 could not be read: /,
		);
		// A token that fails on its face is still refused as such: no issuer is needed for that verdict.
		await expectRejected(
			verifyExternalToken("not-a-jwt", configured(UNREACHABLE), { now: at }),
			"the token is not a JWT",
		);
	});
});

describe("an issuer that answers badly", () => {
	it("a key set URL that does not answer 200 is IssuerUnavailable", async () => {
		const issuer = newTenant("no-keys");
		const token = await sign(issuer, claims(issuer));
		await expectUnavailable(
			verifyExternalToken(token, configured(issuer, `${issuer}/no-such-keys`), { now: at }),
			/^the key set of http:\/\/127\.0\.0\.1:\d+\/t\/no-keys-\d+ could not be read: Expected 200 OK/,
		);
	});

	it("an issuer without any metadata document is IssuerUnavailable, naming every URL tried", async () => {
		const issuer = `${ORIGIN()}/no-tenant-here`;
		const token = await sign(ORIGIN(), claims(issuer));
		const error = await failure(verifyExternalToken(token, configured(issuer), { now: at }));
		expect(error).toBeInstanceOf(IssuerUnavailable);
		expect((error as Error).message).toBe(
			`no metadata for ${issuer}: ${metadataUrls(issuer)
				.map((url) => `${url} answered 404`)
				.join("; ")}`,
		);
	});

	it("a metadata document or key set over 64 KiB is refused unread", async () => {
		const issuer = "https://idp.example";
		const huge = `{"issuer":"${issuer}","jwks_uri":"${issuer}/keys","padding":"${"x".repeat(64 * 1024)}"}`;
		const oversized: typeof fetch = async () => new Response(huge, { status: 200 });
		const token = await sign(ORIGIN(), claims(issuer));
		await expectUnavailable(
			verifyExternalToken(token, configured(issuer), { fetch: oversized, now: at }),
			/^the metadata at https:\/\/idp\.example\/\.well-known\/oauth-authorization-server is larger than 65536 bytes$/,
		);
		await expectUnavailable(
			verifyExternalToken(token, configured(issuer, `${issuer}/keys`), { fetch: oversized, now: at }),
			/^the key set at https:\/\/idp\.example\/keys is larger than 65536 bytes$/,
		);
	});
});

describe("OAuth settings", () => {
	const base = { ADMIN_TOKEN: "a".repeat(32) };
	const misconfigured = (env: Record<string, string>) => {
		try {
			settingsFrom({ ...base, ...env });
		} catch (error) {
			return error instanceof GatewayError ? error.message : String(error);
		}
		return "accepted";
	};

	it("are off without an issuer, and an external issuer defaults its audience to the resource and discovers its keys", () => {
		expect(settingsFrom({ ...base }).oauth).toEqual({ mode: "off" });
		expect(settingsFrom({ ...base, OAUTH_ISSUER: "" }).oauth).toEqual({ mode: "off" });
		expect(settingsFrom({ ...base, OAUTH_ISSUER: "https://idp.example/realms/acme" }).oauth).toEqual({
			mode: "external",
			issuer: "https://idp.example/realms/acme",
			audience: null,
			jwksUrl: null,
			scopes: [],
			emailsVerified: false,
			requiredTyp: null,
			requiredScope: null,
		});
	});

	it("take OAUTH_REQUIRED_TYP (at+jwt only), OAUTH_REQUIRED_SCOPE (one scope) and EMAIL_VERIFIED_ISSUERS naming the issuer in use", () => {
		const issuer = "https://login.example/tenant/v2.0";
		expect(
			settingsFrom({
				...base,
				OAUTH_ISSUER: issuer,
				OAUTH_REQUIRED_TYP: "application/AT+JWT",
				OAUTH_REQUIRED_SCOPE: "mcp.access",
				EMAIL_VERIFIED_ISSUERS: issuer,
			}).oauth,
		).toMatchObject({ requiredTyp: "at+jwt", requiredScope: "mcp.access", emailsVerified: true });
		const signIn = { OIDC_ISSUER: issuer, OIDC_CLIENT_ID: "c", OIDC_CLIENT_SECRET: "s" };
		expect(settingsFrom({ ...base, ...signIn, EMAIL_VERIFIED_ISSUERS: issuer }).oauth).toMatchObject({
			oidc: { emailsVerified: true },
		});
		expect(settingsFrom({ ...base, ...signIn }).oauth).toMatchObject({ oidc: { emailsVerified: false } });

		expect(misconfigured({ OAUTH_ISSUER: issuer, OAUTH_REQUIRED_TYP: "JWT" })).toMatch(
			/OAUTH_REQUIRED_TYP: must be at\+jwt/,
		);
		expect(misconfigured({ OAUTH_ISSUER: issuer, OAUTH_REQUIRED_SCOPE: "mcp openid" })).toMatch(
			/OAUTH_REQUIRED_SCOPE: must be one scope/,
		);
		expect(misconfigured({ OAUTH_REQUIRED_SCOPE: "mcp" })).toMatch(/OAUTH_ISSUER, which is not set/);
		// A trailing slash is another issuer: trusting it would trust nothing, so it is refused, not ignored.
		expect(misconfigured({ OAUTH_ISSUER: issuer, EMAIL_VERIFIED_ISSUERS: `${issuer}/` })).toMatch(
			/EMAIL_VERIFIED_ISSUERS: may name only the issuer the gateway uses/,
		);
		expect(misconfigured({ EMAIL_VERIFIED_ISSUERS: issuer })).toMatch(/EMAIL_VERIFIED_ISSUERS/);
	});

	it("refuse an issuer or key set that is not https (http only on loopback), or that has a query or fragment", () => {
		for (const local of ["http://127.0.0.1:9000", "http://localhost:9000/t/a", "http://[::1]:9000"]) {
			expect(misconfigured({ OAUTH_ISSUER: local })).toBe("accepted");
		}
		for (const insecure of ["http://idp.example", "http://10.0.0.5", "ftp://idp.example", "idp.example"]) {
			expect(misconfigured({ OAUTH_ISSUER: insecure })).toMatch(/^The gateway is misconfigured .*OAUTH_ISSUER/);
		}
		expect(misconfigured({ OAUTH_ISSUER: "https://idp.example", OAUTH_JWKS_URL: "http://idp.example/keys" })).toMatch(
			/OAUTH_JWKS_URL/,
		);
		for (const issuer of ["https://idp.example?tenant=a", "https://idp.example#x"]) {
			expect(misconfigured({ OAUTH_ISSUER: issuer })).toMatch(/OAUTH_ISSUER/);
		}
	});

	it("refuse the gateway's own sign-in and an external issuer at once, and a provider without its client", () => {
		expect(
			misconfigured({
				OAUTH_ISSUER: "https://as.example",
				OIDC_ISSUER: "https://idp.example",
				OIDC_CLIENT_ID: "c",
				OIDC_CLIENT_SECRET: "s",
			}),
		).toMatch(/not both/);
		expect(misconfigured({ OIDC_ISSUER: "https://idp.example" })).toMatch(/OIDC_CLIENT_ID and the OIDC_CLIENT_SECRET/);
	});
});
