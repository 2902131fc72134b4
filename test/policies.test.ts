import { env } from "cloudflare:test";
import { celEnv, isCelError, parse, plan } from "@bufbuild/cel";
import { tests as conformance } from "@bufbuild/cel-spec/testdata/conformance.js";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { afterEach, describe, expect, it, vi } from "vitest";
import { MAX_MATCHED_CHARS, MAX_PATTERN_SIZE, patternSize } from "../src/governance/cel-patterns.ts";
import { type CelBindings, compileExpression, MAX_NESTING } from "../src/governance/cel-program.ts";
import { TIMESTAMP_ACCESSORS } from "../src/governance/cel-time.ts";
import {
	compilePolicies,
	type PolicyPrincipal,
	type PolicyRequest,
	policyVerdict,
} from "../src/governance/policies.ts";
import { loadPolicies } from "../src/governance/policy-cache.ts";
import type { PolicyRecord } from "../src/registry/policy-records.ts";
import { kvRegistryReader } from "../src/registry/registry-reader.ts";
import { admin, createKey, uniqueName } from "./support/gateway.ts";
import { registerServer } from "./support/upstreams.ts";

/** 2026-12-01 at hh:mm UTC, in milliseconds: the injected clock. */
const at = (hours: number, minutes = 0) => Date.UTC(2026, 11, 1, hours, minutes);

const engineer: PolicyPrincipal = {
	kind: "person",
	id: "oauth~staff~g1~u_ada",
	subject: "ada",
	email: "ada@example.com",
	groups: ["engineering"],
	rule: "staff",
	keyName: null,
};
const designer: PolicyPrincipal = { ...engineer, id: "oauth~staff~g1~u_bo", subject: "bo", groups: ["design"] };
const serviceKey: PolicyPrincipal = {
	kind: "key",
	id: "key_abcdefghijkl",
	subject: null,
	email: null,
	groups: [],
	rule: null,
	keyName: "ci",
};

const readTool = { name: "list_repos", realName: "list_repos", annotations: { readOnlyHint: true } };
const writeTool = { name: "create_issue", realName: "create_issue", annotations: { readOnlyHint: false } };
/** A tool whose server says nothing about it: MCP's defaults (not read-only) apply. */
const silentTool = { name: "push", realName: "push", annotations: {} };
const deleteTool = { name: "delete_repo", realName: "delete_repo", annotations: { destructiveHint: true } };

function request(overrides: Partial<PolicyRequest>): PolicyRequest {
	return {
		principal: engineer,
		server: "github",
		virtualServer: null,
		tool: readTool,
		method: "tools/call",
		now: at(12),
		...overrides,
	};
}

let created = 0;
function policy(fields: Partial<PolicyRecord> & Pick<PolicyRecord, "expression" | "effect">): PolicyRecord {
	created++;
	return { name: `p${created}`, applies: null, priority: 100, createdAt: 0, updatedAt: 0, ...fields };
}

/** The issue's examples, as policies. */
const EXAMPLES = {
	writeToolsForEngineering: policy({
		name: "write-tools-for-engineering",
		effect: "deny",
		expression: '!tool.annotations.readOnlyHint && !("engineering" in principal.groups)',
	}),
	deletesInWorkingHours: policy({
		name: "deletes-in-working-hours",
		effect: "deny",
		expression:
			'tool.name.startsWith("delete_") && (request.time.getHours("UTC") < 9 || request.time.getHours("UTC") >= 17)',
	}),
	keysReadOnly: policy({
		name: "keys-read-only",
		effect: "deny",
		expression: 'principal.kind == "key" && !tool.annotations.readOnlyHint',
	}),
	acmeRepos: policy({
		name: "acme-repos-only",
		effect: "deny",
		expression: 'has(arguments.repo) && !arguments.repo.startsWith("acme/")',
	}),
};

describe("compiling a policy expression", () => {
	it("accepts the documented examples", () => {
		for (const example of Object.values(EXAMPLES)) expect(compileExpression(example.expression).ok).toBe(true);
	});

	it("refuses a syntax error with the parser's message, line and column", () => {
		expect(compileExpression('principal.kind == "key" &&')).toEqual({
			ok: false,
			message: expect.stringMatching(/^does not compile: <input>:1:\d+: /),
		});
	});

	it(`refuses nesting deeper than ${MAX_NESTING} levels, naming the limit, without exhausting the parser's stack`, () => {
		const refused = {
			ok: false,
			message: `nests deeper than ${MAX_NESTING} levels (the limit on an expression's nesting)`,
		};
		expect(compileExpression(`${"(".repeat(MAX_NESTING + 1)}true${")".repeat(MAX_NESTING + 1)}`)).toEqual(refused);
		// Far deeper than the parser's stack would take: refused before it runs.
		expect(compileExpression(`${"(".repeat(900)}true${")".repeat(900)}`)).toEqual(refused);
		// Operators nest too: a left-leaning sum is as deep as it is long.
		expect(
			compileExpression(
				`${Array(MAX_NESTING + 2)
					.fill("1")
					.join(" + ")} > 0`,
			),
		).toEqual(refused);
		expect(compileExpression(`${"(".repeat(MAX_NESTING - 2)}true${")".repeat(MAX_NESTING - 2)}`).ok).toBe(true);
		// Brackets inside a string are not nesting.
		expect(compileExpression(`tool.name == "${"(".repeat(100)}"`).ok).toBe(true);
		// Chains of && and || are balanced by the parser, so a long list of alternatives is fine.
		expect(compileExpression(Array(60).fill('tool.name == "x"').join(" || ")).ok).toBe(true);
	});

	it("refuses a comprehension inside another, whose cost would multiply with the arguments", () => {
		const compiled = compileExpression("arguments.a.all(x, arguments.b.exists(y, x == y))");
		expect(compiled).toEqual({ ok: false, message: expect.stringContaining("nests a comprehension") });
		expect(compileExpression('principal.groups.exists(g, g.startsWith("eng"))').ok).toBe(true);
	});

	it("refuses names a policy does not see, fields our records lack and functions outside the standard library", () => {
		expect(compileExpression('user.name == "x"')).toEqual({
			ok: false,
			message: "uses 'user', which a policy does not see (it sees principal, server, tool, arguments, method, request)",
		});
		expect(compileExpression('principal.group == "x"')).toEqual({
			ok: false,
			message:
				"uses principal.group, and principal has no field 'group' (it has kind, id, subject, email, groups, rule, keyName)",
		});
		expect(compileExpression('tool.name.lowerAscii() == "x"')).toEqual({
			ok: false,
			message: "calls lowerAscii(), which is not a function of CEL's standard library",
		});
		// Maps of the caller's or the server's choosing have any field.
		expect(compileExpression("has(arguments.anything) && has(tool.annotations.title)").ok).toBe(true);
	});

	it("refuses a matches() pattern taken from the request: a caller would choose what compiling it costs", () => {
		expect(compileExpression("arguments.name.matches(arguments.pattern)")).toEqual({
			ok: false,
			message:
				"calls matches() with a pattern that is not a string written in the policy; a pattern taken from the request would let a caller choose what it costs",
		});
		expect(compileExpression('arguments.name.matches("^" + tool.name)')).toMatchObject({
			ok: false,
			message: expect.stringContaining("not a string written in the policy"),
		});
	});

	it(`refuses a matches() pattern larger than ${MAX_PATTERN_SIZE} instructions, or one that does not compile, saying which`, () => {
		expect(compileExpression('arguments.text.matches("^.{0,1000}$")')).toEqual({
			ok: false,
			message: `has a matches() pattern of about 2002 instructions, more than ${MAX_PATTERN_SIZE}; a counted repetition such as {1000} multiplies what it repeats`,
		});
		// Repetitions inside repetitions multiply; a Unicode class weighs more than a letter.
		expect(compileExpression('arguments.text.matches("((a{10}){10}){10}")').ok).toBe(false);
		expect(compileExpression('arguments.text.matches("(\\\\pL{100}){10}")').ok).toBe(false);
		expect(compileExpression('arguments.text.matches("(a|b")')).toEqual({
			ok: false,
			message: "has a matches() pattern that does not compile: error parsing regexp: missing closing ): `(a|b`",
		});
	});

	it("accepts the patterns policies are written with, and sizes them from above", () => {
		const patterns = [
			"^[a-z0-9-]{1,64}$",
			"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
			"^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}Z$",
			"(?i)drop\\s+table",
			"^acme/[^/]+$",
			"^.{1,255}$",
		];
		for (const pattern of patterns) {
			const compiled = compileExpression(`arguments.text.matches(${JSON.stringify(pattern)})`);
			expect([pattern, compiled.ok]).toEqual([pattern, true]);
		}
		expect(patternSize("^[a-z0-9-]{1,64}$")).toBe(130);
		expect(patternSize("(a{10}){10}")).toBeGreaterThanOrEqual(100);
		expect(patternSize("[\\pL\\pN]+")).toBeGreaterThan(patternSize("[a-z0-9]+"));
	});

	it("refuses a comprehension over the arguments that reads the arguments again at each step, whose cost would grow with the square of their size", () => {
		const refused = {
			ok: false,
			message:
				"walks the call's arguments and reads them again at each step (all, exists, exists_one, map, filter); its cost would grow with the square of their size",
		};
		expect(compileExpression("arguments.paths.all(p, p.startsWith(arguments.root))")).toEqual(refused);
		expect(compileExpression("arguments.ids.map(i, i).exists(i, i == arguments.owner)")).toEqual(refused);
		// The arguments read once, either side of the walk, cost what they are long.
		expect(compileExpression('arguments.paths.all(p, p.startsWith("/tmp/"))').ok).toBe(true);
		expect(compileExpression("principal.groups.exists(g, g == arguments.team)").ok).toBe(true);
	});

	it("refuses an expression that gives something other than true or false", () => {
		expect(compileExpression("tool.name")).toEqual({
			ok: false,
			message: "must evaluate to true or false, and gives a string",
		});
	});
});

describe("policy verdicts: the issue's examples", () => {
	it("only the group engineering may call tools that are not read-only (a tool that says nothing is not)", () => {
		const compiled = compilePolicies([EXAMPLES.writeToolsForEngineering]);
		const denied = { allowed: false, policy: "write-tools-for-engineering" };
		expect(policyVerdict(compiled, request({ principal: engineer, tool: writeTool }))).toEqual({ allowed: true });
		expect(policyVerdict(compiled, request({ principal: designer, tool: writeTool }))).toEqual(denied);
		expect(policyVerdict(compiled, request({ principal: designer, tool: silentTool }))).toEqual(denied);
		expect(policyVerdict(compiled, request({ principal: designer, tool: readTool }))).toEqual({ allowed: true });
		// Lists see the same verdicts: what a caller may not call, it does not see.
		expect(policyVerdict(compiled, request({ principal: designer, tool: writeTool, method: "tools/list" }))).toEqual(
			denied,
		);
	});

	it("nobody calls delete_* outside 09:00–17:00 UTC, by the injected clock", () => {
		const compiled = compilePolicies([EXAMPLES.deletesInWorkingHours]);
		const denied = { allowed: false, policy: "deletes-in-working-hours" };
		expect(policyVerdict(compiled, request({ tool: deleteTool, now: at(9) }))).toEqual({ allowed: true });
		expect(policyVerdict(compiled, request({ tool: deleteTool, now: at(16, 59) }))).toEqual({ allowed: true });
		expect(policyVerdict(compiled, request({ tool: deleteTool, now: at(17) }))).toEqual(denied);
		expect(policyVerdict(compiled, request({ tool: deleteTool, now: at(8, 59) }))).toEqual(denied);
		expect(policyVerdict(compiled, request({ tool: writeTool, now: at(23) }))).toEqual({ allowed: true });
	});

	it("a key may call only read-only tools; people are not concerned", () => {
		const compiled = compilePolicies([EXAMPLES.keysReadOnly]);
		expect(policyVerdict(compiled, request({ principal: serviceKey, tool: readTool }))).toEqual({ allowed: true });
		expect(policyVerdict(compiled, request({ principal: serviceKey, tool: writeTool }))).toEqual({
			allowed: false,
			policy: "keys-read-only",
		});
		expect(policyVerdict(compiled, request({ principal: engineer, tool: writeTool }))).toEqual({ allowed: true });
	});

	it('an argument constraint: arguments.repo.startsWith("acme/"), with lists (no arguments) unaffected', () => {
		const compiled = compilePolicies([EXAMPLES.acmeRepos]);
		expect(policyVerdict(compiled, request({ arguments: { repo: "acme/site" } }))).toEqual({ allowed: true });
		expect(policyVerdict(compiled, request({ arguments: { repo: "evil/site" } }))).toEqual({
			allowed: false,
			policy: "acme-repos-only",
		});
		expect(policyVerdict(compiled, request({ method: "tools/list" }))).toEqual({ allowed: true });
	});

	it("the same rule as an allow policy: group members may call it, nobody else", () => {
		const compiled = compilePolicies([
			policy({ name: "engineering-only", effect: "allow", expression: '"engineering" in principal.groups' }),
		]);
		expect(policyVerdict(compiled, request({ principal: engineer }))).toEqual({ allowed: true });
		expect(policyVerdict(compiled, request({ principal: serviceKey }))).toEqual({
			allowed: false,
			policy: "engineering-only",
		});
	});
});

describe("policy verdicts: the rule", () => {
	afterEach(() => {
		vi.restoreAllMocks();
	});

	it("no policy, or none that applies, is today's behaviour: allowed", () => {
		expect(policyVerdict(compilePolicies([]), request({}))).toEqual({ allowed: true });
		const elsewhere = policy({ effect: "deny", expression: "true", applies: { servers: ["slack"] } });
		expect(policyVerdict(compilePolicies([elsewhere]), request({ server: "github" }))).toEqual({ allowed: true });
	});

	it("deny wins over allow, whatever their priorities", () => {
		const allowAll = policy({ name: "allow-all", effect: "allow", expression: "true", priority: 0 });
		const denyWrites = policy({
			name: "deny-writes",
			effect: "deny",
			expression: "!tool.annotations.readOnlyHint",
			priority: 500,
		});
		const compiled = compilePolicies([denyWrites, allowAll]);
		expect(policyVerdict(compiled, request({ tool: writeTool }))).toEqual({ allowed: false, policy: "deny-writes" });
		expect(policyVerdict(compiled, request({ tool: readTool }))).toEqual({ allowed: true });
	});

	it("with allow policies, one that is true suffices; none true denies, naming the first in order", () => {
		const groups = policy({ name: "b-groups", effect: "allow", expression: '"engineering" in principal.groups' });
		const keys = policy({ name: "a-keys", effect: "allow", expression: 'principal.kind == "key"' });
		const compiled = compilePolicies([groups, keys]);
		expect(policyVerdict(compiled, request({ principal: engineer }))).toEqual({ allowed: true });
		expect(policyVerdict(compiled, request({ principal: serviceKey }))).toEqual({ allowed: true });
		expect(policyVerdict(compiled, request({ principal: designer }))).toEqual({ allowed: false, policy: "a-keys" });
	});

	it("order is by priority, then by name: the denial names the same policy whatever the list's order", () => {
		const records = [
			policy({ name: "zeta", effect: "deny", expression: "true", priority: 10 }),
			policy({ name: "beta", effect: "deny", expression: "true", priority: 20 }),
			policy({ name: "alpha", effect: "deny", expression: "true", priority: 20 }),
		];
		expect(policyVerdict(compilePolicies(records), request({}))).toEqual({ allowed: false, policy: "zeta" });
		expect(policyVerdict(compilePolicies([...records].reverse()), request({}))).toEqual({
			allowed: false,
			policy: "zeta",
		});
		const tied = records.slice(1);
		expect(policyVerdict(compilePolicies(tied), request({}))).toEqual({ allowed: false, policy: "alpha" });
	});

	it("applies narrows by server, virtual server, key and access rule; every list given must match", () => {
		const deny = (applies: PolicyRecord["applies"]) =>
			policyVerdict(compilePolicies([policy({ name: "narrow", effect: "deny", expression: "true", applies })]), {
				...request({}),
				principal: serviceKey,
				server: "github",
				virtualServer: "devtools",
			}).allowed === false;
		expect(deny({ servers: ["github"] })).toBe(true);
		expect(deny({ servers: ["slack"] })).toBe(false);
		expect(deny({ virtualServers: ["devtools"] })).toBe(true);
		expect(deny({ virtualServers: ["ops"] })).toBe(false);
		expect(deny({ keys: [serviceKey.id] })).toBe(true);
		expect(deny({ keys: ["key_otherkey0000"] })).toBe(false);
		// A key was admitted by no access rule.
		expect(deny({ rules: ["staff"] })).toBe(false);
		expect(deny({ servers: ["github"], keys: [serviceKey.id] })).toBe(true);
		expect(deny({ servers: ["github"], keys: ["key_otherkey0000"] })).toBe(false);
		expect(deny({})).toBe(true);
		const asPerson = compilePolicies([policy({ effect: "deny", expression: "true", applies: { rules: ["staff"] } })]);
		expect(policyVerdict(asPerson, request({ principal: engineer })).allowed).toBe(false);
		// On /mcp/<server> or /mcp there is no virtual server.
		const viaVirtual = compilePolicies([
			policy({ effect: "deny", expression: "true", applies: { virtualServers: ["devtools"] } }),
		]);
		expect(policyVerdict(viaVirtual, request({ virtualServer: null })).allowed).toBe(true);
	});

	it("an expression that fails to evaluate denies, with a log line naming the policy and never an argument's value", () => {
		const warnings: string[] = [];
		vi.spyOn(console, "warn").mockImplementation((...args: unknown[]) => {
			warnings.push(args.map(String).join(" "));
		});
		const strict = policy({
			name: "strict-repos",
			effect: "allow",
			expression: 'arguments.repo.startsWith("acme/")',
		});
		const compiled = compilePolicies([strict]);
		// No repo argument: a field that is not there is an error, and an error denies.
		expect(policyVerdict(compiled, request({ arguments: { path: "secret-value-7f3c" } }))).toEqual({
			allowed: false,
			policy: "strict-repos",
		});
		// A repo that is not a string: no such overload, denied too.
		expect(policyVerdict(compiled, request({ arguments: { repo: 42 } }))).toEqual({
			allowed: false,
			policy: "strict-repos",
		});
		expect(warnings).toHaveLength(2);
		expect(warnings[0]).toContain("policy 'strict-repos' could not be evaluated for tools/call of tool 'list_repos'");
		expect(warnings[0]).toContain("denied");
		for (const line of warnings) {
			expect(line).not.toContain("secret-value-7f3c");
			expect(line).not.toContain("42");
		}
		// The same failure on the same tool is logged once per compiled list, not on every list.
		policyVerdict(compiled, request({ arguments: { path: "secret-value-7f3c" } }));
		expect(warnings).toHaveLength(2);
	});

	it(`matches() reads at most ${MAX_MATCHED_CHARS} characters: a longer argument denies at once, logging why`, () => {
		const warnings: string[] = [];
		vi.spyOn(console, "warn").mockImplementation((...args: unknown[]) => {
			warnings.push(args.map(String).join(" "));
		});
		// The costliest pattern the bound admits, against the longest text it reads: every position keeps
		// a few hundred threads of the match alive, and none completes.
		const costly = policy({
			name: "no-long-words",
			effect: "deny",
			expression: 'arguments.text.matches("[a-z]{255}0")',
		});
		const compiled = compilePolicies([costly]);
		const started = performance.now();
		expect(policyVerdict(compiled, request({ arguments: { text: "a".repeat(MAX_MATCHED_CHARS) } }))).toEqual({
			allowed: true,
		});
		expect(policyVerdict(compiled, request({ arguments: { text: "a".repeat(4 * 1024 * 1024) } }))).toEqual({
			allowed: false,
			policy: "no-long-words",
		});
		// A generous bound: both take a few tens of milliseconds.
		expect(performance.now() - started).toBeLessThan(1000);
		expect(warnings).toEqual([expect.stringContaining("policy 'no-long-words' could not be evaluated")]);
		expect(warnings[0]).toContain("(text too long to match)");
	});

	it("a published policy that does not compile here denies where it applies, and says so", () => {
		const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
		const broken = policy({ name: "from-elsewhere", effect: "deny", expression: "tool.name.lowerAscii() == 'x'" });
		expect(policyVerdict(compilePolicies([broken]), request({}))).toEqual({
			allowed: false,
			policy: "from-elsewhere",
		});
		expect(String(warn.mock.calls[0]?.[0])).toContain("does not compile");
	});

	it("a list is compiled once: the same array gives the same compiled policies", () => {
		const records = [EXAMPLES.keysReadOnly];
		expect(compilePolicies(records)).toBe(compilePolicies(records));
		expect(compilePolicies([...records])).not.toBe(compilePolicies(records));
	});
});

describe("PUT /admin/policies/:name", () => {
	const put = (name: string, body: unknown) => admin("PUT", `/policies/${name}`, body);

	it("creates, replaces, reads, lists and deletes a policy, publishing the list to KV", async () => {
		const server = await registerServer("beta");
		const name = uniqueName("policy");
		const body = {
			expression: EXAMPLES.keysReadOnly.expression,
			effect: "deny",
			applies: { servers: [server] },
		};
		const created = await put(name, body);
		expect(created.status).toBe(201);
		expect(await created.json()).toMatchObject({ name, ...body, priority: 100 });
		const replaced = await put(name, { ...body, priority: 5 });
		expect(replaced.status).toBe(200);
		expect(await (await admin("GET", `/policies/${name}`)).json()).toMatchObject({ name, priority: 5 });
		const listed = (await (await admin("GET", "/policies")).json()) as { policies: Array<{ name: string }> };
		expect(listed.policies.map((entry) => entry.name)).toContain(name);
		const reader = kvRegistryReader(env.REGISTRY_KV, 0);
		expect((await reader.policies()).find((entry) => entry.name === name)).toMatchObject({
			expression: body.expression,
			effect: "deny",
			applies: { servers: [server] },
			priority: 5,
		});
		// What the edge and the sessions read: the published list, compiled, through the isolate's cache.
		const compiled = await loadPolicies(reader, 0);
		const verdict = policyVerdict(compiled, request({ server, principal: serviceKey, tool: writeTool }));
		expect(verdict).toEqual({ allowed: false, policy: name });

		expect((await admin("DELETE", `/policies/${name}`)).status).toBe(204);
		expect((await admin("DELETE", `/policies/${name}`)).status).toBe(404);
		expect((await admin("GET", `/policies/${name}`)).status).toBe(404);
		expect((await reader.policies()).some((entry) => entry.name === name)).toBe(false);
	});

	it("refuses an expression that does not compile with 400 and the compiler's message, and writes nothing", async () => {
		const name = uniqueName("policy");
		const response = await put(name, { expression: 'principal.kind == "key" &&', effect: "deny" });
		expect(response.status).toBe(400);
		const text = await response.text();
		expect(text).toMatch(/expression: does not compile: <input>:1:\d+: /);
		expect((await admin("GET", `/policies/${name}`)).status).toBe(404);
		const unknown = await put(name, { expression: 'tool.nmae == "x"', effect: "deny" });
		expect(await unknown.text()).toContain("tool has no field 'nmae'");
	});

	it("refuses an expression too deep or too long with 400 naming the limit", async () => {
		const name = uniqueName("policy");
		const deep = await put(name, { expression: `${"(".repeat(200)}true${")".repeat(200)}`, effect: "deny" });
		expect(deep.status).toBe(400);
		expect(await deep.text()).toContain(`nests deeper than ${MAX_NESTING} levels`);
		const long = await put(name, { expression: `tool.name == "${"x".repeat(2_000)}"`, effect: "deny" });
		expect(long.status).toBe(400);
		expect(await long.text()).toContain("expression: Too big: expected string to have <=2000 characters");
	});

	it("refuses a matches() pattern taken from the request, or one too large, with 400 and the sentence, and writes nothing", async () => {
		const name = uniqueName("policy");
		const taken = await put(name, { expression: "arguments.name.matches(arguments.pattern)", effect: "deny" });
		expect(taken.status).toBe(400);
		expect(await taken.text()).toContain(
			"expression: calls matches() with a pattern that is not a string written in the policy",
		);
		const large = await put(name, { expression: 'arguments.name.matches("^.{0,1000}$")', effect: "deny" });
		expect(large.status).toBe(400);
		expect(await large.text()).toContain(`more than ${MAX_PATTERN_SIZE}`);
		expect((await admin("GET", `/policies/${name}`)).status).toBe(404);
	});

	it("refuses an effect other than allow, deny or confirm, unknown fields, and a bad name", async () => {
		expect((await put(uniqueName("policy"), { expression: "true", effect: "maybe" })).status).toBe(400);
		expect((await put(uniqueName("policy"), { expression: "true", effect: "deny", when: "now" })).status).toBe(400);
		expect((await put("Not_A_Name", { expression: "true", effect: "deny" })).status).toBe(400);
	});

	it("refuses applies naming a server, virtual server, key or rule that does not exist, naming each", async () => {
		const server = await registerServer("beta");
		const { id } = await createKey({ servers: [server] });
		const typo = uniqueName("typo");
		const response = await put(uniqueName("policy"), {
			expression: "true",
			effect: "deny",
			applies: { servers: [server, typo], virtualServers: [typo], keys: [id, "key_nonexistent0"], rules: [typo] },
		});
		expect(response.status).toBe(400);
		const text = await response.text();
		expect(text).toContain(`applies.servers: no server named '${typo}'`);
		expect(text).toContain(`applies.virtualServers: no virtual server named '${typo}'`);
		expect(text).toContain("applies.keys: no API key with id 'key_nonexistent0'");
		expect(text).toContain(`applies.rules: no access rule named '${typo}'`);
		expect(text).not.toContain(`'${id}'`);
	});
});

/** A test of the CEL spec's conformance data, as `@bufbuild/cel-spec` serializes it. */
interface SerializedTest {
	original: {
		name?: string;
		expr: string;
		value?: { boolValue?: boolean; int64Value?: string; stringValue?: string };
		bindings?: unknown;
		typeEnv?: unknown;
		container?: string;
	};
}
interface SerializedSuite {
	name: string;
	suites?: SerializedSuite[];
	tests?: SerializedTest[];
}

describe("the CEL spec's conformance data through the policy compiler", () => {
	it("every boolean or integer conformance test without variables that the compiler accepts evaluates as the spec says", () => {
		const flat: SerializedTest[] = [];
		const walk = (suite: SerializedSuite) => {
			flat.push(...(suite.tests ?? []));
			for (const inner of suite.suites ?? []) walk(inner);
		};
		walk(conformance as SerializedSuite);
		const bindings: CelBindings = { principal: {}, server: "", tool: {}, arguments: {}, method: "", request: {} };
		const mismatches: string[] = [];
		let ran = 0;
		for (const { original } of flat) {
			// Policies have no protobuf registry: tests that build the suite's messages are not for them.
			if (original.bindings || original.typeEnv || original.container || original.expr.includes("TestAllTypes"))
				continue;
			const { boolValue, int64Value } = original.value ?? {};
			// An integer result is asked for as a comparison, since a policy gives true or false.
			const expression =
				typeof boolValue === "boolean"
					? original.expr
					: int64Value !== undefined
						? `(${original.expr}) == ${int64Value}`
						: null;
			if (expression === null) continue;
			const compiled = compileExpression(expression);
			// Refused ones are the bounds at work (two-variable macros, extensions, names a policy cannot see).
			if (!compiled.ok) continue;
			ran++;
			const result = compiled.program(bindings);
			if (result !== (boolValue ?? true)) mismatches.push(`${original.name ?? original.expr}: ${String(result)}`);
		}
		expect(mismatches).toEqual([]);
		expect(ran).toBeGreaterThan(600);
	});

	it("the timestamp accessors, which keep their time zone formats, agree with the library's own in every zone form", () => {
		const accessors = ["getFullYear", "getMonth", "getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear"];
		accessors.push("getHours", "getMinutes", "getSeconds", "getMilliseconds");
		const zones = [
			null,
			"UTC",
			"America/New_York",
			"Asia/Kathmandu",
			"Australia/Lord_Howe",
			"+05:30",
			"-08:00",
			"02:00",
		];
		const times = [
			Date.UTC(2026, 0, 1, 0, 0, 0, 5),
			Date.UTC(2026, 2, 8, 6, 59, 59, 999),
			Date.UTC(2024, 11, 31, 23, 30),
		];
		times.push(Date.UTC(2026, 10, 1, 5, 30, 15, 250), Date.UTC(1999, 5, 15, 12));
		const theirs = celEnv();
		for (const accessor of accessors) {
			for (const zone of zones) {
				const call = `request.time.${accessor}(${zone === null ? "" : `"${zone}"`})`;
				const ours = compileExpression(`${call} == 0 || true`);
				if (!ours.ok) throw new Error(ours.message);
				const reference = plan(theirs, parse(call));
				const mine = plan(celEnv({ funcs: TIMESTAMP_ACCESSORS }), parse(call));
				for (const ms of times) {
					const request = { time: timestampFromMs(ms) };
					expect(mine({ request }), `${call} at ${new Date(ms).toISOString()}`).toEqual(reference({ request }));
				}
			}
		}
		// A zone that does not exist is an evaluation error, which denies.
		const bogus = compileExpression('request.time.getHours("Mars/Olympus_Mons") == 1');
		expect(bogus.ok && isCelError(bogus.program({ ...bindingsAt(0) }))).toBe(true);
	});
});

function bindingsAt(ms: number): CelBindings {
	return { principal: {}, server: "", tool: {}, arguments: {}, method: "", request: { time: timestampFromMs(ms) } };
}
