import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { SCHEMA_FILE, schemaText } from "../../scripts/cli/write-config-schema.ts";
import { startOAuthUpstream } from "../../scripts/fixtures/oauth-upstream.ts";
import { Processes } from "../../scripts/processes.ts";
import { buildWorker, ROOT, startWranglerDev, wranglerEnv } from "../../scripts/wrangler-dev.ts";
import { configFile, mcpgw, mcpgwJson, uniqueName } from "./run-cli.ts";

const upstream = () => inject("cliUpstreamUrl");
/** A slip of the keyboard: the name's first letter typed twice (`demo` → `ddemo`). */
const mistyped = (name: string) => `${name[0]}${name}`;

describe("mcpgw's help and errors", () => {
	it("prints its commands with --help and exits 0", async () => {
		const run = await mcpgw(["--help"]);
		expect(run.code).toBe(0);
		for (const command of [
			"servers",
			"connector-tokens",
			"virtual-servers",
			"keys",
			"rules",
			"policies",
			"approvals",
			"connections",
			"tools",
			"status",
			"call",
			"plan",
			"apply",
			"export",
			"connect",
		]) {
			expect(run.stdout).toContain(command);
		}
	});

	it("a wrong admin token in MCPGW_ADMIN_TOKEN is refused with a sentence naming the variable and where the right token is, exit code 1", async () => {
		const run = await mcpgw(["servers", "list"], { MCPGW_ADMIN_TOKEN: "not-the-token" });
		expect(run.code).toBe(1);
		expect(run.stderr).toBe(
			`mcpgw: The gateway at ${inject("cliGatewayUrl")} refused the admin token in MCPGW_ADMIN_TOKEN (HTTP 401): set MCPGW_ADMIN_TOKEN to the gateway's ADMIN_TOKEN (the secret given to \`npx wrangler secret put ADMIN_TOKEN\`; for a gateway on this machine, ADMIN_TOKEN in the .dev.vars of the clone that runs it).\n`,
		);
		expect(run.stderr).not.toContain("not-the-token");
	});

	it("a wrong admin token read from .dev.vars is refused naming that file, the clone that runs the gateway and MCPGW_ADMIN_TOKEN", async () => {
		const clone = mkdtempSync(join(tmpdir(), "mcpgw-clone-"));
		writeFileSync(join(clone, ".dev.vars"), 'ADMIN_TOKEN="a-token-of-another-clone"\n');
		const run = await mcpgw(["servers", "list"], { MCPGW_ADMIN_TOKEN: "" }, clone);
		expect(run.code).toBe(1);
		expect(run.stderr).toContain(`refused the admin token from ${join(clone, ".dev.vars")} (HTTP 401)`);
		expect(run.stderr).toContain(
			"Run mcpgw in the clone that runs the gateway (npm start writes its .dev.vars), or set MCPGW_ADMIN_TOKEN to the gateway's ADMIN_TOKEN.",
		);
		expect(run.stderr).not.toContain("a-token-of-another-clone");
	});

	it("a server the API refuses gets the API's message", async () => {
		const run = await mcpgw(["servers", "add", "Bad_Name", "--upstream", upstream()]);
		expect(run.code).toBe(1);
		expect(run.stderr).toContain("Bad Request: server name must be 1-32 characters");
	});
});

describe("each resource: add, list, show, remove with --json", () => {
	it("servers, with a check, and header references shown while literals stay masked", async () => {
		const [name, withHeaders] = [uniqueName("srv"), uniqueName("hdr")];
		const added = await mcpgwJson<{ name: string; check: { reachable: boolean } }>([
			"servers",
			"add",
			name,
			"--upstream",
			upstream(),
		]);
		expect(added).toMatchObject({ name, check: { reachable: true } });
		const headers = await mcpgwJson<{ headers: Record<string, string> }>([
			"servers",
			"add",
			withHeaders,
			"--upstream",
			upstream(),
			"--no-check",
			"--header",
			"X-Team: ${UPSTREAM_TEAM}",
			"--header",
			"X-Literal: hush-hush",
		]);
		expect(headers.headers).toEqual({ "X-Team": "${UPSTREAM_TEAM}", "X-Literal": "***" });
		const listed = await mcpgwJson<Array<{ name: string }>>(["servers", "list"]);
		expect(listed.map((server) => server.name)).toContain(name);
		const shown = await mcpgwJson<{ check: { speaksMcp: boolean } }>(["servers", "show", name]);
		expect(shown.check.speaksMcp).toBe(true);
		const table = await mcpgw(["servers", "list"]);
		expect(table.stdout).toMatch(/NAME\s+URL\s+PROTOCOL/);
		expect(table.stdout).not.toContain("hush-hush");
		await mcpgwJson(["servers", "remove", name]);
		await mcpgwJson(["servers", "remove", withHeaders]);
		const gone = await mcpgw(["servers", "show", name]);
		expect(gone.code).toBe(1);
		expect(gone.stderr).toContain(`Not Found: no server named '${name}'.`);
	});

	it("a mistyped server or rule name is refused with the name most likely meant", async () => {
		const [server, rule] = [uniqueName("typo-srv"), uniqueName("typo-rule")];
		await mcpgwJson(["servers", "add", server, "--upstream", upstream(), "--no-check"]);
		await mcpgwJson(["rules", "add", rule, "--subject", "alice"]);
		const shown = await mcpgw(["servers", "show", mistyped(server)]);
		expect(shown.code).toBe(1);
		expect(shown.stderr).toBe(`mcpgw: Not Found: no server named '${mistyped(server)}' (did you mean '${server}'?).\n`);
		const tools = await mcpgw(["tools", "list", mistyped(server)]);
		expect(tools.stderr).toContain(`(did you mean '${server}'?)`);
		const ruleShown = await mcpgw(["rules", "show", mistyped(rule)]);
		expect(ruleShown.code).toBe(1);
		expect(ruleShown.stderr).toBe(
			`mcpgw: Not Found: no access rule named '${mistyped(rule)}' (did you mean '${rule}'?).\n`,
		);
		const keysBefore = await mcpgwJson(["keys", "list"]);
		const key = await mcpgw(["keys", "add", "--server", mistyped(server)]);
		expect(key.code).toBe(1);
		expect(key.stderr).toContain(
			`Bad Request: servers: no server or virtual server named '${mistyped(server)}' (did you mean '${server}'?).`,
		);
		expect(await mcpgwJson(["keys", "list"])).toEqual(keysBefore);
		await mcpgwJson(["rules", "remove", rule]);
		await mcpgwJson(["servers", "remove", server]);
	});

	it("an unknown field in a --body is refused with the field most likely meant", async () => {
		const name = uniqueName("body");
		const run = await mcpgw(["servers", "add", name, "--upstream", upstream(), "--body", '{"timeout":5}']);
		expect(run.code).toBe(1);
		expect(run.stderr).toContain('Bad Request: body: unknown field "timeout" (did you mean "timeoutSeconds"?).');
		expect((await mcpgw(["servers", "show", name, "--no-check"])).code).toBe(1);
	});

	it("each setting has the config file's name: --timeout-seconds sets timeoutSeconds (--timeout still works, unlisted), rules take --max-sessions, --rate-class, --admin and --approver", async () => {
		const name = uniqueName("flags");
		const help = await mcpgw(["servers", "add", "--help"]);
		expect(help.stdout).toContain("--timeout-seconds <seconds>");
		expect(help.stdout).not.toMatch(/--timeout </);
		const added = await mcpgwJson([
			"servers",
			"add",
			name,
			"--upstream",
			upstream(),
			"--no-check",
			"--timeout-seconds",
			"7",
		]);
		expect(added).toMatchObject({ timeoutSeconds: 7 });
		const old = await mcpgwJson(["servers", "put", name, "--upstream", upstream(), "--no-check", "--timeout", "9"]);
		expect(old).toMatchObject({ timeoutSeconds: 9 });
		await mcpgwJson(["servers", "remove", name]);
		const rule = uniqueName("flags-rule");
		const ruleAdded = await mcpgwJson([
			"rules",
			"add",
			rule,
			"--subject",
			"alice",
			"--max-sessions",
			"3",
			"--rate-class",
			"high",
			"--admin",
			"--approver",
		]);
		expect(ruleAdded).toMatchObject({ maxSessions: 3, rateClass: "high", admin: true, approver: true });
		await mcpgwJson(["rules", "remove", rule]);
	});

	it("virtual servers, their disclosure mode included", async () => {
		const [member, name] = [uniqueName("vsm"), uniqueName("vs")];
		await mcpgwJson(["servers", "add", member, "--upstream", upstream(), "--no-check"]);
		const added = await mcpgwJson<{ servers: string[] }>(["virtual-servers", "add", name, "--server", member]);
		expect(added.servers).toEqual([member]);
		expect((await mcpgwJson<Array<{ name: string }>>(["virtual-servers", "list"])).map((v) => v.name)).toContain(name);
		expect(await mcpgwJson(["virtual-servers", "show", name])).toMatchObject({
			name,
			servers: [member],
			disclosure: "full",
		});
		const searching = ["--disclosure", "search", "--always-list", `${member}__echo`];
		await mcpgwJson(["virtual-servers", "put", name, "--server", member, ...searching]);
		expect(await mcpgwJson(["virtual-servers", "show", name])).toMatchObject({
			disclosure: "search",
			alwaysList: [`${member}__echo`],
		});
		await mcpgwJson(["virtual-servers", "remove", name]);
		await mcpgwJson(["servers", "remove", member]);
		expect((await mcpgw(["virtual-servers", "show", name])).code).toBe(1);
	});

	it("connector servers and their tokens: --connector registers one, the list says it is reached through connectors, a token is printed once on create and never listed, revoke removes it", async () => {
		const name = uniqueName("conn");
		const added = await mcpgwJson<Record<string, unknown>>(["servers", "add", name, "--connector", "--no-check"]);
		expect(added).toMatchObject({ name, connector: {} });
		expect(added).not.toHaveProperty("url");
		const table = await mcpgw(["servers", "list"]);
		expect(table.stdout).toMatch(new RegExp(`^${name}\\s+\\(connectors\\)\\s`, "m"));

		const created = await mcpgw(["connector-tokens", "create", name]);
		expect(created.code, created.stderr).toBe(0);
		const token = /^token:\s+(mcpgwc1_(ct_[A-Za-z0-9_-]{16})\.\S+)$/m.exec(created.stdout);
		expect(token).not.toBeNull();
		const [, secret = "", id = ""] = token ?? [];
		expect(created.stdout).toContain("The token is shown this once");
		const listed = await mcpgw(["connector-tokens", "list", name]);
		expect(listed.stdout).toMatch(/ID\s+CREATED\s+LAST SEEN/);
		expect(listed.stdout).toContain(id);
		expect(listed.stdout).not.toContain(secret);
		expect(await mcpgwJson(["connector-tokens", "list", name])).toEqual([
			{ id, createdAt: expect.any(String), lastSeenAt: null },
		]);
		expect(await mcpgwJson(["connector-tokens", "revoke", name, id])).toEqual({
			removed: `connector token ${id} of ${name}`,
		});
		expect(await mcpgwJson(["connector-tokens", "list", name])).toEqual([]);
		const again = await mcpgw(["connector-tokens", "revoke", name, id]);
		expect(again.code).toBe(1);
		expect(again.stderr).toContain(`Not Found: server '${name}' has no connector token '${id}'.`);
		await mcpgwJson(["servers", "remove", name]);
		const gone = await mcpgw(["connector-tokens", "list", name]);
		expect(gone.code).toBe(1);
		expect(gone.stderr).toContain(`Not Found: no server named '${name}'.`);
	});

	it("servers add --openapi <file> sends the file's YAML as the document with --base-url and --credential; the list says (openapi: N tools), a literal credential is masked, and the PUT's notes are printed", async () => {
		const name = uniqueName("oa-file");
		const file = join(mkdtempSync(join(tmpdir(), "mcpgw-openapi-")), "notes.yaml");
		writeFileSync(file, SWAGGER_NOTES_YAML);
		const args = ["servers", "add", name, "--openapi", file, "--base-url", "http://127.0.0.1:9/v2", "--no-check"];
		const credentials = ["--credential", "apiKey=${UPSTREAM_NOTES_KEY}", "--credential", "basic=user:hush-hush"];
		const added = await mcpgwJson<Record<string, unknown> & { notes: string[] }>([...args, ...credentials]);
		expect(added).toMatchObject({
			name,
			openapi: {
				document: "inline",
				baseUrl: "http://127.0.0.1:9/v2",
				credentials: { apiKey: "${UPSTREAM_NOTES_KEY}", basic: "***" },
				tools: 2,
			},
		});
		expect(added).not.toHaveProperty("url");
		// A Swagger 2.0 document is converted to be read, and the notes say so.
		expect(added.notes.length).toBeGreaterThan(0);
		// The file's text is what the gateway keeps, as written.
		expect(await adminGet(`/servers/${name}/openapi`)).toEqual({ document: SWAGGER_NOTES_YAML });
		const again = await mcpgw([...args, ...credentials]);
		expect(again.code, again.stderr).toBe(0);
		for (const note of added.notes) expect(again.stdout).toContain(`\nnote: ${note}`);
		expect(again.stdout).not.toContain("hush-hush");
		const table = await mcpgw(["servers", "list"]);
		expect(table.stdout).toMatch(new RegExp(`^${name}\\s+\\(openapi: 2 tools\\)\\s`, "m"));
		await mcpgwJson(["servers", "remove", name]);
	});

	it("servers add --openapi <url> registers the document by its URL, which the gateway fetches", async () => {
		const name = uniqueName("oa-url");
		const served = await serveDocument(JSON.stringify(NOTES_DOCUMENT));
		try {
			const added = await mcpgwJson<Record<string, unknown>>([
				"servers",
				"add",
				name,
				"--openapi",
				served.url,
				"--no-check",
			]);
			expect(added).toMatchObject({ name, openapi: { url: served.url, credentials: {}, tools: 2 } });
			expect(served.requests()).toBe(1);
			const table = await mcpgw(["servers", "list"]);
			expect(table.stdout).toMatch(new RegExp(`^${name}\\s+\\(openapi: 2 tools\\)\\s`, "m"));
		} finally {
			await served.close();
			await mcpgw(["servers", "remove", name]);
		}
	});

	it("--openapi options the CLI cannot read are refused with a sentence naming the option, and nothing is registered", async () => {
		const name = uniqueName("oa-bad");
		const missing = await mcpgw(["servers", "add", name, "--openapi", join(tmpdir(), "no-such-document.yaml")]);
		expect(missing.code).toBe(1);
		expect(missing.stderr).toContain(
			`mcpgw: --openapi: '${join(tmpdir(), "no-such-document.yaml")}' is neither an http(s) URL nor a file that can be read`,
		);
		const credential = await mcpgw([
			"servers",
			"add",
			name,
			"--openapi",
			"https://api.example.com/openapi.json",
			"--credential",
			"apiKey",
		]);
		expect(credential.code).toBe(1);
		expect(credential.stderr).toBe(
			"mcpgw: --credential: 'apiKey' is not 'scheme=value' (a security scheme's name, then =).\n",
		);
		const alone = await mcpgw([
			"servers",
			"add",
			name,
			"--upstream",
			upstream(),
			"--base-url",
			"https://api.example.com",
		]);
		expect(alone.code).toBe(1);
		expect(alone.stderr).toBe(
			"mcpgw: --base-url and --credential describe an OpenAPI server: give --openapi <url|file> with them.\n",
		);
		expect((await mcpgw(["servers", "show", name, "--no-check"])).code).toBe(1);
	});

	it("keys: the secret once on add, never on list or show", async () => {
		const created = await mcpgwJson<{ id: string; key: string }>([
			"keys",
			"add",
			"--name",
			uniqueName("key"),
			"--user-path",
			"/team/a",
		]);
		expect(created.key.length).toBeGreaterThan(20);
		const listed = await mcpgw(["keys", "list", "--json"]);
		expect(listed.stdout).toContain(created.id);
		expect(listed.stdout).not.toContain(created.key);
		expect(await mcpgwJson(["keys", "show", created.id])).toMatchObject({ id: created.id, userPath: "/team/a" });
		await mcpgwJson(["keys", "remove", created.id]);
		expect((await mcpgw(["keys", "show", created.id])).code).toBe(1);
	});

	it("access rules", async () => {
		const name = uniqueName("rule");
		const added = await mcpgwJson(["rules", "add", name, "--email-domain", "example.com", "--priority", "7"]);
		expect(added).toMatchObject({ name, match: { emailDomain: "example.com" }, priority: 7 });
		expect((await mcpgwJson<Array<{ name: string }>>(["rules", "list"])).map((rule) => rule.name)).toContain(name);
		expect(await mcpgwJson(["rules", "show", name])).toMatchObject({ name });
		await mcpgwJson(["rules", "remove", name]);
		expect((await mcpgw(["rules", "show", name])).code).toBe(1);
	});

	it("policies, and the compiler's message for one that does not compile", async () => {
		const name = uniqueName("pol");
		const added = await mcpgwJson(["policies", "add", name, "--expression", "tool.name == 'fail'", "--effect", "deny"]);
		expect(added).toMatchObject({ name, effect: "deny" });
		expect(await mcpgwJson(["policies", "show", name])).toMatchObject({ expression: "tool.name == 'fail'" });
		expect((await mcpgwJson<Array<{ name: string }>>(["policies", "list"])).map((p) => p.name)).toContain(name);
		const bad = await mcpgw(["policies", "add", name, "--expression", "tool.name ==", "--effect", "deny"]);
		expect(bad.code).toBe(1);
		expect(bad.stderr).toContain("Bad Request: expression:");
		await mcpgwJson(["policies", "remove", name]);
		expect((await mcpgw(["policies", "show", name])).code).toBe(1);
	});

	it("guards: add with --stage, --detect (repeatable), --action and --applies; list says what each scans with; show; an unknown detector gets the API's sentence; remove", async () => {
		const name = uniqueName("grd");
		const added = await mcpgwJson([
			"guards",
			"add",
			name,
			"--stage",
			"response",
			"--detect",
			"secrets",
			"--detect",
			"email",
			"--action",
			"redact",
			"--applies",
			'{"tools":["get_*"]}',
		]);
		expect(added).toMatchObject({
			name,
			stage: "response",
			detect: ["secrets", "email"],
			action: "redact",
			applies: { tools: ["get_*"] },
		});
		expect(await mcpgwJson(["guards", "show", name])).toMatchObject({ name, detect: ["secrets", "email"] });
		expect((await mcpgwJson<Array<{ name: string }>>(["guards", "list"])).map((guard) => guard.name)).toContain(name);
		const listed = await mcpgw(["guards", "list"]);
		expect(listed.stdout).toMatch(/^NAME +STAGE +SCANS WITH +ACTION +APPLIES$/m);
		const row = listed.stdout.split("\n").find((line) => line.startsWith(`${name} `));
		expect(row?.split(/ {2,}/)).toEqual([name, "response", "secrets,email", "redact", '{"tools":["get_*"]}']);
		const bad = await mcpgw(["guards", "put", name, "--stage", "request", "--detect", "passport", "--action", "block"]);
		expect(bad.code).toBe(1);
		expect(bad.stderr).toContain("must be one of secrets, email, phone, card, iban");
		expect(await mcpgwJson(["guards", "show", name])).toMatchObject({ stage: "response", action: "redact" });
		await mcpgwJson(["guards", "remove", name]);
		const gone = await mcpgw(["guards", "show", name]);
		expect(gone.code).toBe(1);
		expect(gone.stderr).toContain(`no guard named '${name}'`);
	});

	it("an approve policy with its timeout and webhook; approvals list answers what waits, and a decision on an unknown id exits 1 naming it", async () => {
		const name = uniqueName("pol");
		const added = await mcpgwJson([
			"policies",
			"add",
			name,
			"--expression",
			"tool.name == 'never-called'",
			"--effect",
			"approve",
			"--approval-timeout-seconds",
			"60",
			"--approval-webhook-url",
			"https://hooks.example/approvals",
			"--approval-webhook-secret",
			"${UPSTREAM_APPROVAL_HOOK}",
		]);
		expect(added).toMatchObject({
			name,
			effect: "approve",
			approvalTimeoutSeconds: 60,
			approvalWebhook: { url: "https://hooks.example/approvals", secret: "${UPSTREAM_APPROVAL_HOOK}" },
		});
		expect(Array.isArray(await mcpgwJson(["approvals", "list"]))).toBe(true);
		const id = `${"a".repeat(64)}.${"b".repeat(22)}`;
		for (const decision of ["approve", "deny"]) {
			const refused = await mcpgw(["approvals", decision, id, "--reason", "no"]);
			expect(refused.code).toBe(1);
			expect(refused.stderr).toContain(`No approval has the id '${id}'.`);
		}
		await mcpgwJson(["policies", "remove", name]);
	});

	it("connections: none at a server nobody connected to", async () => {
		const name = uniqueName("conn");
		await mcpgwJson(["servers", "add", name, "--upstream", upstream(), "--no-check"]);
		expect(await mcpgwJson(["connections", "list", "--server", name])).toEqual([]);
		await mcpgwJson(["servers", "remove", name]);
	});

	it("tools: states, and approve", async () => {
		const name = uniqueName("tls");
		await mcpgwJson(["servers", "add", name, "--upstream", upstream(), "--no-check"]);
		const view = await mcpgwJson<{ tools: Array<{ name: string; state: string }> }>(["tools", "list", name]);
		expect(view.tools.map((tool) => tool.name)).toContain("echo");
		const approved = await mcpgwJson<{ approved: string[] }>(["tools", "approve", name, "echo"]);
		expect(approved.approved).toEqual(["echo"]);
		const after = await mcpgwJson<{ tools: Array<{ name: string; state: string }> }>(["tools", "list", name]);
		expect(after.tools.find((tool) => tool.name === "echo")?.state).toBe("approved");
		await mcpgwJson(["servers", "remove", name]);
	});
});

describe("status and call", () => {
	it("status says the gateway is healthy and checks each server", async () => {
		const name = uniqueName("st");
		await mcpgwJson(["servers", "add", name, "--upstream", upstream(), "--no-check"]);
		const status = await mcpgwJson<{ healthy: boolean; servers: Array<{ name: string; reachable: boolean }> }>([
			"status",
		]);
		expect(status.healthy).toBe(true);
		expect(status.servers.find((server) => server.name === name)?.reachable).toBe(true);
		await mcpgwJson(["servers", "remove", name]);
	});

	it("status shows a server that takes each caller's own OAuth token as needing a caller, not as failing", async () => {
		const oauthUpstream = await startOAuthUpstream();
		const name = uniqueName("per-caller");
		try {
			await mcpgwJson(["servers", "add", name, "--upstream", oauthUpstream.url, "--auth", "oauth", "--no-check"]);
			const status = await mcpgwJson<{ servers: Array<{ name: string; needsCaller?: string; reachable: boolean }> }>([
				"status",
			]);
			expect(status.servers.find((server) => server.name === name)).toMatchObject({
				reachable: true,
				needsCaller: "oauth",
			});
			const run = await mcpgw(["status"]);
			expect(run.code).toBe(0);
			const line = run.stdout.split("\n").find((text) => text.startsWith(`${name} `)) ?? "";
			expect(line).toMatch(new RegExp(`^${name} +true +needs a caller \\(oauth\\) +- +It refused the check's`));
		} finally {
			await mcpgwJson(["servers", "remove", name]);
			await oauthUpstream.close();
		}
	});

	it("call lists an endpoint's tools and calls one with JSON arguments, with a key", async () => {
		const name = uniqueName("call");
		await mcpgwJson(["servers", "add", name, "--upstream", upstream(), "--no-check"]);
		const { key, id } = await mcpgwJson<{ key: string; id: string }>(["keys", "add", "--server", name]);
		const tools = await mcpgwJson<Array<{ name: string }>>(["call", name, "--key", key]);
		expect(tools.map((tool) => tool.name)).toContain("echo");
		const run = await mcpgw(["call", name, "echo", "--args", '{"text":"hello through the gateway"}'], {
			MCP_API_KEY: key,
		});
		expect(run.code).toBe(0);
		expect(run.stdout).toContain("hello through the gateway");
		const refused = await mcpgw(["call", name, "--key", "mcpgw-wrong-key"]);
		expect(refused.code).toBe(1);
		await mcpgwJson(["keys", "remove", id]);
		await mcpgwJson(["servers", "remove", name]);
	});
});

/** The demo upstream's Worker (examples/demo-upstream): what docs/deploy.md registers in its smoke test. */
const DEMO_UPSTREAM_CONFIG = join(ROOT, "examples", "demo-upstream", "wrangler.toml");
/** A build and a `wrangler dev` start, on two shared cores. */
const WORKER_STARTUP_TIMEOUT_MS = 240_000;

describe("the deploy smoke test of docs/deploy.md", () => {
	const procs = new Processes();
	let upstreamUrl = "";

	// Built as `wrangler deploy` would upload it, and served by `wrangler dev`.
	beforeAll(async () => {
		const dir = procs.tempDir("mcp-demo-upstream-");
		const env = { ...wranglerEnv(dir), NO_COLOR: "1" };
		const [name, config] = ["demo upstream Worker", DEMO_UPSTREAM_CONFIG];
		const { entry } = await buildWorker(procs, { name, config, outDir: join(dir, "bundle"), env });
		const { url } = await startWranglerDev(procs, { name, config, entry, persistTo: join(dir, "state"), env });
		upstreamUrl = `${url}/mcp`;
	}, WORKER_STARTUP_TIMEOUT_MS);

	afterAll(() => procs.stopAll());

	it("the demo upstream, deployed as its own Worker, registers at the gateway and answers a call through it with a key", async () => {
		const name = uniqueName("demo-worker");
		const added = await mcpgwJson<{ check: { reachable: boolean; speaksMcp: boolean } }>([
			"servers",
			"add",
			name,
			"--upstream",
			upstreamUrl,
		]);
		expect(added.check).toMatchObject({ reachable: true, speaksMcp: true });
		const { key, id } = await mcpgwJson<{ key: string; id: string }>([
			"keys",
			"add",
			"--name",
			"smoke",
			"--server",
			name,
		]);
		const tools = await mcpgwJson<Array<{ name: string }>>(["call", name, "--key", key]);
		expect(tools.map((tool) => tool.name).sort()).toEqual(["add", "echo"]);
		const run = await mcpgw(["call", name, "echo", "--args", '{"text":"hello"}'], { MCP_API_KEY: key });
		expect(run.code, run.stderr).toBe(0);
		expect(run.stdout).toBe("hello\n");
		await mcpgwJson(["keys", "remove", id]);
		await mcpgwJson(["servers", "remove", name]);
	});
});

/** The example config with the run's demo upstream in place of `npm start`'s. */
function exampleConfig(): Record<string, Record<string, Record<string, unknown>>> {
	const text = readFileSync(join(import.meta.dirname, "..", "..", "examples", "gateway.config.json"), "utf8");
	const config = JSON.parse(text.replaceAll("http://127.0.0.1:8788/mcp", upstream()));
	delete config.$schema;
	return config;
}

/** What must not move when nothing changes: each record's generation and updatedAt, and the keys' ids. */
async function registryMarks(): Promise<unknown> {
	const [servers, virtualServers, rules, policies, guards, keys] = await Promise.all(
		["servers", "virtual-servers", "rules", "policies", "guards", "keys"].map((group) =>
			mcpgwJson<Array<Record<string, unknown>>>([group, "list"]),
		),
	);
	const marks = (records: Array<Record<string, unknown>> | undefined) =>
		(records ?? []).map(({ name, id, generation, updatedAt }) => ({ name, id, generation, updatedAt }));
	return {
		servers: marks(servers),
		virtualServers: marks(virtualServers),
		rules: marks(rules),
		policies: marks(policies),
		guards: marks(guards),
		keys: marks(keys),
	};
}

interface PlanJson {
	changes: Array<{
		kind: string;
		name: string;
		action: string;
		diff: Array<{ field: string; from: unknown; to: unknown }>;
	}>;
	refusals: string[];
}

// After the resource tests, which leave nothing behind: these own the whole registry, in order.
describe("configuration as code: plan, apply, export", () => {
	it("applies the example config, and a second apply changes nothing: generations, updatedAt and keys unchanged, plan empty", async () => {
		const file = configFile(exampleConfig());
		const first = await mcpgw(["apply", "-f", file]);
		expect(first.code, first.stderr).toBe(0);
		expect(first.stdout).toContain("created server demo (answers");
		expect(first.stdout).toContain("created virtual server demo-suite");
		expect(first.stdout).toMatch(/created key ci-smoke: key_\S+, key \S+ \(shown this once/);
		const before = await registryMarks();
		const second = await mcpgwJson<{ applied: unknown[]; unchanged: number }>(["apply", "-f", file]);
		expect(second).toMatchObject({ applied: [], unchanged: 7 });
		expect(await registryMarks()).toEqual(before);
		const plan = await mcpgwJson<PlanJson>(["plan", "-f", file]);
		expect(plan.changes).toEqual([]);
		expect((await mcpgw(["plan", "-f", file])).stdout).toContain(
			"No changes: the gateway matches the file (7 unchanged).",
		);
	});

	it("plan shows a change with each changed field, and apply makes it", async () => {
		const config = exampleConfig();
		(config.servers?.["demo-math"] as Record<string, unknown>).pinning = "warn";
		(config.accessRules?.["demo-team"] as Record<string, unknown>).priority = 60;
		// A secret by reference: shown by the admin API as written, so it compares and exports.
		(config.servers as Record<string, unknown>)["demo-auth"] = {
			url: upstream(),
			headers: { Authorization: "Bearer ${UPSTREAM_DEMO_TOKEN}" },
		};
		const file = configFile(config);
		const plan = await mcpgw(["plan", "-f", file]);
		expect(plan.code).toBe(0);
		expect(plan.stdout).toContain("+ create server demo-auth\n");
		expect(plan.stdout).toContain('~ replace server demo-math\n    pinning: "block" → "warn"');
		expect(plan.stdout).toContain("~ replace access rule demo-team\n    priority: 50 → 60");
		expect(plan.stdout).toContain("Plan: 1 to create, 2 to replace, 0 to delete, 5 unchanged.");
		await mcpgwJson(["apply", "-f", file]);
		expect(await mcpgwJson(["servers", "show", "demo-math", "--no-check"])).toMatchObject({ pinning: "warn" });
		expect((await mcpgwJson<PlanJson>(["plan", "-f", file])).changes).toEqual([]);
	});

	it("a changed key declaration makes a new key, printed once, and revokes the old one", async () => {
		const [before] = await mcpgwJson<Array<{ id: string; name: string }>>(["keys", "list"]);
		const config = exampleConfig();
		(config.keys?.["ci-smoke"] as Record<string, unknown>).userPath = "/team/demo/ci";
		const file = configFile(config);
		const plan = await mcpgw(["plan", "-f", file]);
		expect(plan.stdout).toContain(`~ replace key ci-smoke (a new secret, shown once; revokes ${before?.id})`);
		expect(plan.stdout).toContain('    userPath: "/team/demo" → "/team/demo/ci"');
		const applied = await mcpgwJson<{ applied: Array<{ key?: { id: string; key: string } }> }>(["apply", "-f", file]);
		const made = applied.applied.find((entry) => entry.key)?.key;
		expect(made?.key.length).toBeGreaterThan(20);
		const after = await mcpgwJson<Array<{ id: string; userPath: string }>>(["keys", "list"]);
		expect(after).toEqual([expect.objectContaining({ id: made?.id, userPath: "/team/demo/ci" })]);
	});

	it("a guard is created, changed field by field and deleted under --prune by plan and apply, and export writes it", async () => {
		const name = uniqueName("guard");
		const guard = { stage: "request", applies: { servers: ["demo"] }, detect: ["email"], action: "log" };
		const file = configFile({ guards: { [name]: guard } });
		const create = await mcpgw(["plan", "-f", file]);
		expect(create.code, create.stdout).toBe(0);
		expect(create.stdout).toContain(`+ create guard ${name}\n`);
		expect((await mcpgw(["apply", "-f", file])).stdout).toContain(`created guard ${name}\n`);
		expect(await mcpgwJson(["guards", "show", name])).toMatchObject({ ...guard, name });
		expect((await mcpgwJson<PlanJson>(["plan", "-f", file])).changes).toEqual([]);

		const changed = configFile({ guards: { [name]: { ...guard, detect: ["email", "card"], action: "block" } } });
		const replace = await mcpgw(["plan", "-f", changed]);
		expect(replace.stdout).toContain(
			`~ replace guard ${name}\n    action: "log" → "block"\n    detect: ["email"] → ["email","card"]\n`,
		);
		expect((await mcpgw(["apply", "-f", changed])).stdout).toContain(`replaced guard ${name}\n`);
		expect(await mcpgwJson(["guards", "show", name])).toMatchObject({ detect: ["email", "card"], action: "block" });

		// The whole state, as export writes it, without the guard: --prune deletes the guard and nothing else.
		const output = join(dirname(configFile({})), "exported.json");
		expect((await mcpgw(["export", "-o", output])).code).toBe(0);
		const exported = JSON.parse(readFileSync(output, "utf8"));
		expect(exported.guards[name]).toEqual({ ...guard, detect: ["email", "card"], action: "block" });
		delete exported.guards[name];
		writeFileSync(output, JSON.stringify(exported));
		const prune = await mcpgwJson<PlanJson>(["plan", "-f", output, "--prune"]);
		expect(prune.changes.map(({ kind, name, action }) => ({ kind, name, action }))).toEqual([
			{ kind: "guards", name, action: "delete" },
		]);
		expect((await mcpgw(["apply", "-f", output, "--prune"])).stdout).toContain(`deleted guard ${name}\n`);
		expect((await mcpgw(["guards", "show", name])).code).toBe(1);
	});

	it("plan refuses a guard whose applies names a server that does not exist, with the name most likely meant, and apply writes nothing", async () => {
		const name = uniqueName("guard");
		const file = configFile({
			guards: { [name]: { stage: "response", applies: { servers: ["demoo"] }, detect: ["secrets"], action: "redact" } },
		});
		const refusal = `guards.${name}.applies.servers: no server named 'demoo' (did you mean 'demo'?) in the file or on the gateway.`;
		const plan = await mcpgw(["plan", "-f", file]);
		expect(plan.code).toBe(1);
		expect(plan.stdout).toContain(`refused: ${refusal}\n`);
		const apply = await mcpgw(["apply", "-f", file]);
		expect(apply.code).toBe(1);
		expect(apply.stderr).toContain(refusal);
		expect((await mcpgw(["guards", "show", name])).code).toBe(1);
	});

	it("export writes the state in the same format, without secrets, and plan of it is empty", async () => {
		const dir = dirname(configFile({}));
		const output = join(dir, "exported.json");
		const run = await mcpgw(["export", "-o", output]);
		expect(run.code, run.stderr).toBe(0);
		const exported = JSON.parse(readFileSync(output, "utf8"));
		expect(Object.keys(exported.servers)).toEqual(expect.arrayContaining(["demo", "demo-math"]));
		expect(exported.keys["ci-smoke"]).toEqual({ servers: ["demo-suite"], userPath: "/team/demo/ci" });
		expect(exported.servers["demo-auth"].headers).toEqual({ Authorization: "Bearer ${UPSTREAM_DEMO_TOKEN}" });
		expect(readFileSync(output, "utf8")).not.toMatch(/"key":/);
		expect(exported.$schema).toMatch(/gateway\.config\.schema\.json$/);
		expect((await mcpgwJson<PlanJson>(["plan", "-f", output, "--prune"])).changes).toEqual([]);
	});

	it("--prune deletes what the file drops, keys first and servers last", async () => {
		const config = exampleConfig();
		delete config.keys?.["ci-smoke"];
		delete config.virtualServers?.["demo-suite"];
		(config.accessRules?.["demo-team"] as Record<string, unknown>).servers = ["demo"];
		delete config.servers?.["demo-math"];
		const file = configFile(config);
		const plan = await mcpgw(["plan", "-f", file, "--prune"]);
		const deletes = plan.stdout.split("\n").filter((line) => line.startsWith("- "));
		expect(deletes, plan.stdout).toEqual([
			expect.stringMatching(/^- delete key ci-smoke \(revokes key_/),
			"- delete virtual server demo-suite",
			"- delete server demo-math",
			"- delete server demo-auth",
		]);
		const applied = await mcpgw(["apply", "-f", file, "--prune"]);
		expect(applied.code, applied.stderr).toBe(0);
		const servers = await mcpgwJson<Array<{ name: string }>>(["servers", "list"]);
		expect(servers.map((server) => server.name)).toEqual(["demo"]);
		expect(await mcpgwJson(["virtual-servers", "list"])).toEqual([]);
		expect(await mcpgwJson(["keys", "list"])).toEqual([]);
		expect((await mcpgwJson<PlanJson>(["plan", "-f", file, "--prune"])).changes).toEqual([]);
	});

	it("an unknown field in the config is refused with its path and the field most likely meant, and nothing is applied", async () => {
		const file = configFile({ servers: { "typo-field": { url: upstream(), timeout: 5 } } });
		const plan = await mcpgw(["plan", "-f", file]);
		expect(plan.code).toBe(1);
		expect(plan.stderr).toBe(
			`mcpgw: ${file} is not a valid gateway config: servers.typo-field: unknown field "timeout" (did you mean "timeoutSeconds"?).\n`,
		);
		const apply = await mcpgw(["apply", "-f", file]);
		expect(apply.code).toBe(1);
		expect(apply.stderr).toContain('servers.typo-field: unknown field "timeout" (did you mean "timeoutSeconds"?)');
		expect((await mcpgw(["servers", "show", "typo-field", "--no-check"])).code).toBe(1);
		const section = await mcpgw(["plan", "-f", configFile({ server: {} })]);
		expect(section.stderr).toContain('the file: unknown field "server" (did you mean "servers"?)');
		const far = await mcpgw(["plan", "-f", configFile({ servers: { demo: { url: upstream(), colour: "blue" } } })]);
		expect(far.stderr).toContain(
			'servers.demo: unknown field "colour"; the fields are url, connector, openapi, headers, timeoutSeconds,',
		);
	});

	it("plan refuses each reference to a name neither the file nor the gateway has, with the name most likely meant, and apply writes nothing", async () => {
		const [server, held] = [uniqueName("refs"), uniqueName("held")];
		await mcpgwJson(["servers", "add", held, "--upstream", upstream(), "--no-check"]);
		const [virtual, rule, key, policy] = [`${server}-vs`, `${server}-rule`, `${server}-key`, `${server}-pol`];
		const file = configFile({
			servers: { [server]: { url: upstream() } },
			// `held` exists on the gateway only: a reference to it is fine.
			virtualServers: { [virtual]: { servers: [server, held, mistyped(server)] } },
			accessRules: { [rule]: { match: { subject: "alice" }, servers: [virtual, "nothing-like-any-name"] } },
			policies: {
				[policy]: {
					expression: "true",
					effect: "deny",
					applies: { servers: [mistyped(held)], rules: [mistyped(rule)] },
				},
			},
			keys: { [key]: { servers: [mistyped(virtual)] } },
		});
		const anywhere = "in the file or on the gateway";
		const refusals = [
			`virtualServers.${virtual}.servers: no server named '${mistyped(server)}' (did you mean '${server}'?) ${anywhere}.`,
			`keys.${key}.servers: no server or virtual server named '${mistyped(virtual)}' (did you mean '${virtual}'?) ${anywhere}.`,
			`accessRules.${rule}.servers: no server or virtual server named 'nothing-like-any-name' ${anywhere}.`,
			`policies.${policy}.applies.servers: no server named '${mistyped(held)}' (did you mean '${held}'?) ${anywhere}.`,
			`policies.${policy}.applies.rules: no access rule named '${mistyped(rule)}' (did you mean '${rule}'?) ${anywhere}.`,
		];
		const plan = await mcpgw(["plan", "-f", file]);
		expect(plan.code).toBe(1);
		for (const refusal of refusals) expect(plan.stdout).toContain(`refused: ${refusal}\n`);
		const json = await mcpgw(["plan", "-f", file, "--json"]);
		expect(json.code).toBe(1);
		expect((JSON.parse(json.stdout) as PlanJson).refusals).toEqual(refusals);
		const keysBefore = await mcpgwJson(["keys", "list"]);
		const apply = await mcpgw(["apply", "-f", file]);
		expect(apply.code).toBe(1);
		expect(apply.stderr).toContain(`Refusing to apply:\n  ${refusals.join("\n  ")}`);
		expect((await mcpgw(["servers", "show", server, "--no-check"])).code).toBe(1);
		expect(await mcpgwJson(["keys", "list"])).toEqual(keysBefore);
		await mcpgwJson(["servers", "remove", held]);
	});

	it("under --prune only the file counts, and a server may not take a virtual server's name", async () => {
		const [server, held, shared] = [uniqueName("prn"), uniqueName("prn-held"), uniqueName("prn-shared")];
		await mcpgwJson(["servers", "add", held, "--upstream", upstream(), "--no-check"]);
		await mcpgwJson(["virtual-servers", "add", shared, "--server", held]);
		const virtual = `${server}-vs`;
		const leansOnHeld = configFile({
			servers: { [server]: { url: upstream() } },
			virtualServers: { [virtual]: { servers: [server, held] } },
		});
		const plain = await mcpgw(["plan", "-f", leansOnHeld]);
		expect(plain.code, plain.stdout).toBe(0);
		const pruned = await mcpgw(["plan", "-f", leansOnHeld, "--prune"]);
		expect(pruned.code).toBe(1);
		expect(pruned.stdout).toContain(
			`refused: virtualServers.${virtual}.servers: no server named '${held}' in the file (--prune deletes the rest).\n`,
		);
		const clash = await mcpgw(["plan", "-f", configFile({ servers: { [shared]: { url: upstream() } } })]);
		expect(clash.code).toBe(1);
		expect(clash.stdout).toContain(
			`refused: servers.${shared}: '${shared}' is a virtual server on the gateway, and servers and virtual servers share names; rename the server, or remove the virtual server first.`,
		);
		await mcpgwJson(["virtual-servers", "remove", shared]);
		await mcpgwJson(["servers", "remove", held]);
	});

	it("a secret written into a header is refused with a sentence saying what to do, and nothing is applied", async () => {
		const file = configFile({
			servers: { leaky: { url: upstream(), headers: { Authorization: "Bearer sk-live-0123456789" } } },
		});
		const plan = await mcpgw(["plan", "-f", file]);
		expect(plan.code).toBe(1);
		expect(plan.stdout).toContain(
			"refused: servers.leaky.headers.Authorization holds a literal credential; put the secret in a Worker secret (npx wrangler secret put UPSTREAM_LEAKY_AUTHORIZATION) and write ${UPSTREAM_LEAKY_AUTHORIZATION} in its place.",
		);
		const apply = await mcpgw(["apply", "-f", file]);
		expect(apply.code).toBe(1);
		expect(apply.stderr).toContain("Refusing to apply:");
		expect((await mcpgw(["servers", "show", "leaky", "--no-check"])).code).toBe(1);
	});

	it("a server with connector: {} round-trips through apply, plan and export, and its connector tokens are never exported", async () => {
		const name = uniqueName("conn");
		const file = configFile({ servers: { [name]: { connector: {}, pinning: "off" } } });
		const applied = await mcpgw(["apply", "-f", file]);
		expect(applied.code, applied.stderr).toBe(0);
		expect(applied.stdout).toContain(`created server ${name}`);
		expect((await mcpgwJson<PlanJson>(["plan", "-f", file])).changes).toEqual([]);
		const made = await mcpgwJson<{ id: string; token: string }>(["connector-tokens", "create", name]);
		const output = join(dirname(file), "exported.json");
		expect((await mcpgw(["export", "-o", output])).code).toBe(0);
		const text = readFileSync(output, "utf8");
		expect(JSON.parse(text).servers[name]).toEqual({ connector: {}, pinning: "off" });
		expect(text).not.toContain(made.id);
		expect(text).not.toContain(made.token);
		await mcpgwJson(["servers", "remove", name]);
	});

	it("servers made from OpenAPI documents round-trip through apply, plan and export: a YAML document as its text, a JSON one as its object, a URL as its URL, credentials as their references", async () => {
		const [yaml, json, byUrl] = [uniqueName("oa-yaml"), uniqueName("oa-json"), uniqueName("oa-url")];
		const served = await serveDocument(JSON.stringify(NOTES_DOCUMENT));
		try {
			const declared = {
				[yaml]: {
					openapi: { document: SWAGGER_NOTES_YAML, credentials: { apiKey: "${UPSTREAM_NOTES_KEY}" } },
					pinning: "off",
				},
				[json]: { openapi: { document: NOTES_DOCUMENT, baseUrl: "http://127.0.0.1:9/v3" } },
				[byUrl]: { openapi: { url: served.url } },
			};
			const file = configFile({ servers: declared });
			const applied = await mcpgw(["apply", "-f", file]);
			expect(applied.code, applied.stderr).toBe(0);
			for (const name of [yaml, json, byUrl]) expect(applied.stdout).toContain(`created server ${name}`);
			expect((await mcpgwJson<PlanJson>(["plan", "-f", file])).changes).toEqual([]);
			const output = join(dirname(file), "exported.json");
			const exported = await mcpgw(["export", "-o", output]);
			expect(exported.code, exported.stderr).toBe(0);
			const text = readFileSync(output, "utf8");
			const servers = JSON.parse(text).servers;
			expect(servers[yaml]).toEqual(declared[yaml]);
			expect(servers[json]).toEqual(declared[json]);
			expect(servers[byUrl]).toEqual(declared[byUrl]);
			// The JSON document is written back as given, its keys in the document's order.
			expect(Object.keys(servers[json].openapi.document)).toEqual(Object.keys(NOTES_DOCUMENT));
			expect((await mcpgwJson<PlanJson>(["plan", "-f", output])).changes).toEqual([]);
		} finally {
			await served.close();
			for (const name of [yaml, json, byUrl]) await mcpgw(["servers", "remove", name]);
		}
	});

	it("plan shows a changed document as one field named by size and digest, and a changed URL as its URLs; apply makes both", async () => {
		const [inline, byUrl] = [uniqueName("oa-doc"), uniqueName("oa-moved")];
		const [first, second] = [
			await serveDocument(JSON.stringify(NOTES_DOCUMENT)),
			await serveDocument(JSON.stringify(NOTES_DOCUMENT)),
		];
		try {
			const before = configFile({
				servers: { [inline]: { openapi: { document: NOTES_DOCUMENT } }, [byUrl]: { openapi: { url: first.url } } },
			});
			expect((await mcpgw(["apply", "-f", before])).code).toBe(0);
			const grown = structuredClone(NOTES_DOCUMENT) as typeof NOTES_DOCUMENT & { paths: Record<string, unknown> };
			grown.paths["/notes/{id}"] = {
				delete: {
					operationId: "deleteNote",
					parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }],
					responses: { "204": { description: "gone" } },
				},
			};
			const after = configFile({
				servers: { [inline]: { openapi: { document: grown } }, [byUrl]: { openapi: { url: second.url } } },
			});
			const plan = await mcpgw(["plan", "-f", after]);
			expect(plan.code, plan.stdout).toBe(0);
			const digest = String.raw`"\(document, \d+ bytes, sha256 [0-9a-f]{12}…\)"`;
			expect(plan.stdout).toMatch(
				new RegExp(`~ replace server ${inline}\n    openapi.document: ${digest} → ${digest}\n(?! {4})`),
			);
			expect(plan.stdout).toContain(`~ replace server ${byUrl}\n    openapi.url: "${first.url}" → "${second.url}"`);
			expect((await mcpgw(["apply", "-f", after])).code).toBe(0);
			expect(await mcpgwJson(["servers", "show", inline, "--no-check"])).toMatchObject({ openapi: { tools: 3 } });
			expect(await mcpgwJson(["servers", "show", byUrl, "--no-check"])).toMatchObject({ openapi: { url: second.url } });
			expect(second.requests()).toBe(1);
			expect((await mcpgwJson<PlanJson>(["plan", "-f", after])).changes).toEqual([]);
		} finally {
			await Promise.all([first.close(), second.close()]);
			for (const name of [inline, byUrl]) await mcpgw(["servers", "remove", name]);
		}
	});

	it("a literal credential in openapi.credentials is refused by plan with a sentence saying what to do, and export notes one the gateway masks", async () => {
		const name = uniqueName("oa-leaky");
		const file = configFile({
			servers: { [name]: { openapi: { document: SWAGGER_NOTES_YAML, credentials: { basic: "user:hush-hush" } } } },
		});
		const plan = await mcpgw(["plan", "-f", file]);
		expect(plan.code).toBe(1);
		const secret = `UPSTREAM_${name.toUpperCase().replaceAll("-", "_")}_BASIC`;
		expect(plan.stdout).toContain(
			`refused: servers.${name}.openapi.credentials.basic holds a literal credential; put the secret in a Worker secret (npx wrangler secret put ${secret}) and write \${${secret}} in its place.`,
		);
		expect((await mcpgw(["apply", "-f", file])).code).toBe(1);
		expect((await mcpgw(["servers", "show", name, "--no-check"])).code).toBe(1);
		const oaFile = join(dirname(file), "notes.yaml");
		writeFileSync(oaFile, SWAGGER_NOTES_YAML);
		await mcpgwJson([
			"servers",
			"add",
			name,
			"--openapi",
			oaFile,
			"--credential",
			"basic=user:hush-hush",
			"--no-check",
		]);
		try {
			const exported = await mcpgw(["export"]);
			expect(exported.stderr).toContain(
				`note: servers.${name}.openapi.credentials.basic holds a literal value the gateway masks: exported as "***"; write a \${UPSTREAM_…} reference instead.`,
			);
			expect(exported.stdout).not.toContain("hush-hush");
		} finally {
			await mcpgwJson(["servers", "remove", name]);
		}
	});

	it("gateway.config.schema.json is what npm run config-schema writes now", () => {
		// Compared as JSON: the formatter may lay the committed file out differently.
		expect(JSON.parse(readFileSync(SCHEMA_FILE, "utf8"))).toEqual(JSON.parse(schemaText()));
	});
});

/** `GET /admin<path>` with the project's admin token, its JSON. */
async function adminGet(path: string): Promise<unknown> {
	const response = await fetch(`${inject("cliGatewayUrl")}/admin${path}`, {
		headers: { authorization: `Bearer ${inject("cliAdminToken")}` },
	});
	return response.json();
}

/** A Swagger 2.0 document in YAML: two operations, an API key and HTTP basic. */
const SWAGGER_NOTES_YAML = `swagger: "2.0"
info:
  title: Notes
  version: "1"
host: 127.0.0.1:9
basePath: /api
schemes: [http]
securityDefinitions:
  apiKey: { type: apiKey, in: header, name: X-Api-Key }
  basic: { type: basic }
security:
  - apiKey: []
paths:
  /notes:
    get:
      operationId: listNotes
      responses: { "200": { description: the notes } }
    post:
      operationId: createNote
      parameters:
        - { in: body, name: note, schema: { type: object, properties: { text: { type: string } } } }
      responses: { "201": { description: made } }
`;

/** The same API as OpenAPI 3.1 JSON, without security. */
const NOTES_DOCUMENT = {
	openapi: "3.1.0",
	info: { title: "Notes", version: "1" },
	servers: [{ url: "http://127.0.0.1:9/api" }],
	paths: {
		"/notes": {
			get: { operationId: "listNotes", responses: { "200": { description: "the notes" } } },
			post: {
				operationId: "createNote",
				requestBody: { content: { "application/json": { schema: { type: "object" } } } },
				responses: { "201": { description: "made" } },
			},
		},
	},
};

/** A document served on loopback, as a REST API serves its own: its URL and how often it was fetched. */
async function serveDocument(text: string): Promise<{ url: string; requests(): number; close(): Promise<void> }> {
	let requests = 0;
	const server = createServer((_request, response) => {
		requests += 1;
		response.writeHead(200, { "content-type": "application/json" }).end(text);
	});
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
	const { port } = server.address() as AddressInfo;
	return {
		url: `http://127.0.0.1:${port}/openapi.json`,
		requests: () => requests,
		close: () => new Promise((resolve) => server.close(() => resolve())),
	};
}
