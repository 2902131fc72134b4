import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { identityFromClaims } from "../src/auth/identity.ts";
import type { Identity } from "../src/registry/access-rules.ts";
import {
	type AccessRuleRecord,
	parsePrincipalId,
	principalId,
	principalRecord,
	ruleFor,
} from "../src/registry/access-rules.ts";
import { checkSessionWith, kvRegistryReader } from "../src/registry/registry-reader.ts";
import { admin, uniqueName } from "./support/gateway.ts";
import { registerServer } from "./support/upstreams.ts";

const ISSUER = "https://idp.example";

function identity(overrides: Partial<Identity> = {}): Identity {
	return { issuer: ISSUER, subject: "alice", email: "alice@example.com", groups: ["engineering"], ...overrides };
}

function rule(name: string, match: AccessRuleRecord["match"], priority = 100): AccessRuleRecord {
	return {
		name,
		match,
		servers: null,
		userPath: "/",
		maxSessions: null,
		rateClass: "standard",
		priority,
		admin: false,
		approver: false,
		disclosure: "full",
		alwaysList: [],
		generation: `gen-${name}`,
		createdAt: 0,
		updatedAt: 0,
	};
}

describe("access rules: matching", () => {
	it("every condition of a rule must hold; email and domain compare without case", () => {
		const rules = [rule("eng", { emailDomain: "EXAMPLE.com", group: "engineering" })];
		expect(ruleFor(rules, identity(), ISSUER)?.name).toBe("eng");
		expect(ruleFor(rules, identity({ groups: [] }), ISSUER)).toBeNull();
		expect(ruleFor(rules, identity({ email: "alice@examples.com" }), ISSUER)).toBeNull();
	});

	it("an identity from another issuer matches nothing unless a rule names that issuer", () => {
		const rules = [rule("alice", { subject: "alice" })];
		expect(ruleFor(rules, identity({ issuer: "https://other.example" }), ISSUER)).toBeNull();
		const named = [rule("other", { subject: "alice", issuer: "https://other.example" })];
		expect(ruleFor(named, identity({ issuer: "https://other.example" }), ISSUER)?.name).toBe("other");
	});

	it("the first rule by priority, then name, decides", () => {
		const rules = [rule("b-wide", { emailDomain: "example.com" }, 50), rule("a-exact", { subject: "alice" }, 50)];
		expect(ruleFor(rules, identity(), ISSUER)?.name).toBe("a-exact");
		expect(ruleFor([...rules, rule("z-first", { group: "engineering" }, 1)], identity(), ISSUER)?.name).toBe("z-first");
	});

	/** The identity in `claims`, as a token or sign-in of ISSUER yields it. */
	function identityOf(claims: Record<string, unknown>, emailsVerified = false): Identity {
		const claimed = identityFromClaims(ISSUER, { sub: "carol", ...claims }, { emailsVerified });
		if (!claimed) throw new Error("the claims name no subject");
		return claimed.identity;
	}
	const emailRules = [rule("domain", { emailDomain: "example.com" }), rule("exact", { email: "carol@example.com" })];

	it("an email counts only when email_verified is true, as a boolean or the string", () => {
		for (const flag of [true, "true"]) {
			const verified = identityOf({ email: "Carol@Example.com", email_verified: flag });
			expect(verified.email).toBe("carol@example.com");
			expect(ruleFor(emailRules, verified, ISSUER)?.name).toBe("domain");
			expect(ruleFor(emailRules.slice(1), verified, ISSUER)?.name).toBe("exact");
		}
	});

	it("an unverified email, or one without the email_verified flag, matches no email or emailDomain rule", () => {
		for (const flag of [false, "false", undefined, "yes"]) {
			const claimed = identityFromClaims(ISSUER, { sub: "carol", email: "carol@example.com", email_verified: flag });
			expect(claimed?.identity.email).toBeNull();
			expect(claimed?.unverifiedEmail).toBe("carol@example.com");
			expect(ruleFor(emailRules, claimed?.identity as Identity, ISSUER)).toBeNull();
		}
	});

	it('"example.com", "@example.com" or "a@b@example.com" as the email is no address in example.com, even verified', () => {
		for (const email of ["example.com", "@example.com", "a@b@example.com", "carol@"]) {
			const odd = identityOf({ email, email_verified: true });
			expect(ruleFor([rule("domain", { emailDomain: "example.com" })], odd, ISSUER)).toBeNull();
			expect(ruleFor([rule("exact", { email })], odd, ISSUER)).toBeNull();
		}
	});

	it("an issuer the operator trusts for verified addresses (EMAIL_VERIFIED_ISSUERS) admits the missing flag, never an explicit false", () => {
		const unflagged = identityOf({ email: "carol@example.com" }, true);
		expect(unflagged.email).toBe("carol@example.com");
		expect(ruleFor(emailRules, unflagged, ISSUER)?.name).toBe("domain");
		for (const flag of [false, "false"]) {
			expect(identityOf({ email: "carol@example.com", email_verified: flag }, true).email).toBeNull();
		}
	});

	it("a principal id names its rule, the rule's generation, the user and the grant, and nothing else parses as one", () => {
		const id = principalId({ rule: "eng", generation: "g1", userId: "u_1", grantId: "grant1" });
		expect(parsePrincipalId(id)).toEqual({ rule: "eng", generation: "g1", userId: "u_1", grantId: "grant1" });
		expect(
			parsePrincipalId(principalId({ rule: "eng", generation: "g1", userId: "u_1", grantId: null }))?.grantId,
		).toBeNull();
		expect(parsePrincipalId("key_abcdefghijkl")).toBeNull();
		expect(parsePrincipalId("oauth~eng~g1")).toBeNull();
	});
});

describe("access rules: the admin API", () => {
	// Every rule a test writes is removed after it: the first matching rule decides, so a rule left behind
	// would decide for the next file's people (test files share the registry).
	const written = new Set<string>();
	afterEach(async () => {
		for (const name of written) await admin("DELETE", `/access-rules/${name}`);
		written.clear();
	});
	const put = (name: string, body: unknown) => {
		written.add(name);
		return admin("PUT", `/access-rules/${name}`, body);
	};

	it("creates, replaces, lists and deletes a rule, and publishes the rules to KV", async () => {
		const name = uniqueName("rule");
		const [alpha, beta] = [await registerServer("alpha"), await registerServer("beta")];
		const created = await put(name, { match: { emailDomain: "example.com" }, servers: [alpha], userPath: "/team" });
		expect(created.status).toBe(201);
		const first = (await created.json()) as { generation: string; priority: number };
		expect(first.priority).toBe(100);
		const listed = (await (await admin("GET", "/access-rules")).json()) as { accessRules: Array<{ name: string }> };
		expect(listed.accessRules.map((entry) => entry.name)).toContain(name);
		const published = await kvRegistryReader(env.REGISTRY_KV, 0).rules();
		expect(published.find((entry) => entry.name === name)?.servers).toEqual([alpha]);

		// A new grant keeps the generation (sessions follow it); a new match does not.
		const regranted = await put(name, { match: { emailDomain: "example.com" }, servers: [beta] });
		expect(regranted.status).toBe(200);
		expect(((await regranted.json()) as { generation: string }).generation).toBe(first.generation);
		const rematched = (await (await put(name, { match: { emailDomain: "example.org" } })).json()) as {
			generation: string;
		};
		expect(rematched.generation).not.toBe(first.generation);

		expect((await admin("DELETE", `/access-rules/${name}`)).status).toBe(204);
		expect((await admin("DELETE", `/access-rules/${name}`)).status).toBe(404);
		const after = await kvRegistryReader(env.REGISTRY_KV, 0).rules();
		expect(after.some((entry) => entry.name === name)).toBe(false);
	});

	it("refuses a rule that matches on the issuer alone, unknown fields and bad names, and stores nothing", async () => {
		const name = uniqueName("rule");
		for (const body of [
			{ match: { issuer: ISSUER } },
			{ match: {} },
			{ match: { subject: "alice" }, extra: true },
			{ match: { emailDomain: "@example.com" } },
			{ match: { subject: "alice" }, userPath: "/team/../x" },
		]) {
			const response = await put(name, body);
			expect(response.status).toBe(400);
			expect(((await response.json()) as { error: { message: string } }).error.message).toMatch(/^Bad Request: /);
		}
		expect((await put("Not_A_Name", { match: { subject: "alice" } })).status).toBe(400);
		const listed = (await (await admin("GET", "/access-rules")).json()) as { accessRules: Array<{ name: string }> };
		expect(listed.accessRules.some((entry) => entry.name === name)).toBe(false);
	});

	it("a rule's servers must name servers or virtual servers that exist: unknown names get 400 naming them, and the rule stays as it was", async () => {
		const name = uniqueName("rule");
		const server = await registerServer("beta");
		const virtual = uniqueName("vs");
		expect((await admin("PUT", `/virtual-servers/${virtual}`, { servers: [server] })).status).toBe(201);
		const typo = uniqueName("team-tool");
		const refusedNew = await put(name, { match: { subject: "alice" }, servers: [typo] });
		expect(refusedNew.status).toBe(400);
		expect(((await refusedNew.json()) as { error: { message: string } }).error.message).toBe(
			`Bad Request: servers: no server or virtual server named '${typo}'.`,
		);
		const rules = async () =>
			((await (await admin("GET", "/access-rules")).json()) as { accessRules: unknown[] }).accessRules;
		expect((await rules()).some((rule) => (rule as { name: string }).name === name)).toBe(false);

		expect((await put(name, { match: { subject: "alice" }, servers: [virtual] })).status).toBe(201);
		const before = await rules();
		const refusedEdit = await put(name, { match: { subject: "bob" }, servers: [server, typo] });
		expect(refusedEdit.status).toBe(400);
		expect(await rules()).toEqual(before);
		const published = await kvRegistryReader(env.REGISTRY_KV, 0).rules();
		expect(published.find((rule) => rule.name === name)).toMatchObject({
			match: { subject: "alice" },
			servers: [virtual],
		});
	});

	it("a session of a rule's principal follows its grant, and ends when the rule is removed or its match changes", async () => {
		const name = uniqueName("rule");
		const server = await registerServer("beta");
		const created = (await (await put(name, { match: { subject: "alice" }, servers: [server] })).json()) as {
			generation: string;
		};
		const keyId = principalId({ rule: name, generation: created.generation, userId: "u_x", grantId: null });
		const reader = kvRegistryReader(env.REGISTRY_KV, 0);
		const input = { keyId, userPath: "/", endpoint: { kind: "aggregate" as const } };
		expect(principalRecord(keyId, await reader.rules())?.servers).toEqual([server]);
		expect((await checkSessionWith(reader, input)).ok).toBe(true);

		await put(name, { match: { subject: "alice" }, userPath: "/elsewhere" });
		expect(await checkSessionWith(reader, input)).toEqual({
			ok: false,
			reason: "the API key's user path no longer matches the session's",
		});
		await put(name, { match: { subject: "alice" } });
		expect((await checkSessionWith(reader, input)).ok).toBe(true);
		await put(name, { match: { subject: "bob" } });
		expect(await checkSessionWith(reader, input)).toEqual({
			ok: false,
			reason: `access rule '${name}' no longer grants this identity (it was removed, or its match changed)`,
		});
	});

	it("a principal whose grant was revoked fails its recheck", async () => {
		const name = uniqueName("rule");
		const created = (await (await put(name, { match: { subject: "alice" } })).json()) as { generation: string };
		const keyId = principalId({ rule: name, generation: created.generation, userId: "u_y", grantId: "g_1" });
		const reader = kvRegistryReader(env.REGISTRY_KV, 0);
		const input = { keyId, userPath: "/", endpoint: { kind: "aggregate" as const } };
		expect((await checkSessionWith(reader, input, async () => true)).ok).toBe(true);
		expect(await checkSessionWith(reader, input, async () => false)).toEqual({
			ok: false,
			reason: "the sign-in was revoked (its grant no longer exists)",
		});
	});
});
