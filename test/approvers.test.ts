import { env } from "cloudflare:test";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { afterEach, describe, expect, inject, it, vi } from "vitest";
import { Browser, type Page } from "../scripts/fixtures/browser.ts";
import type { ReceivedNotice } from "../scripts/fixtures/control-shapes.ts";
import { type ApprovalNotice, approvalNotice } from "../src/governance/approval-notice.ts";
import { registryStub } from "../src/registry/registry-stub.ts";
import { eventually } from "./support/eventually.ts";
import { admin, connectClient, createKey, uniqueName } from "./support/gateway.ts";
import { testPolicies, uniqueArgs, waitingFor } from "./support/held-calls.ts";
import { textOf } from "./support/modern.ts";
import {
	CLIENT_REDIRECT,
	gatewayWith,
	MemoryOAuthProvider,
	ORIGIN,
	oauthClient,
	testAccessRules,
} from "./support/oauth-client.ts";
import { toolCallsOf, upstreamUrl } from "./support/upstreams.ts";

/**
 * People as approvers and the approvers' webhook (decisions 0121, 0122): a
 * person whose access rule has `approver: true` decides held calls on the
 * gateway's /approvals page, never their own, through the admin's decision
 * path; an approve policy's webhook is told of each held call, signed, and a
 * webhook that fails changes nothing for the call. The receiver is its own
 * process and checks signatures with node:crypto; people sign in at the test
 * identity provider; the upstream's whole log says what reached it.
 */

const IDP = inject("idpIssuer");
const RECEIVER = `http://127.0.0.1:${inject("approvalReceiverPort")}`;
/** The gateway signing people in at the test identity provider (its pages, and its authorization server). */
const SIGN_IN = {
	OIDC_ISSUER: IDP,
	OIDC_CLIENT_ID: "mcp-edge-gateway",
	OIDC_CLIENT_SECRET: "test-oidc-client-secret-0123456789",
	OIDC_SCOPES: "openid email profile groups",
};
const gateway = gatewayWith(SIGN_IN);
const accessRule = testAccessRules();

const policy = testPolicies("approvers");
afterEach(() => {
	vi.restoreAllMocks();
});

/** A server of its own (policies are global) on the beta upstream, with an approve policy on its `add`. */
async function heldServer(extra: Record<string, unknown> = {}): Promise<{ server: string; policy: string }> {
	const server = uniqueName("approved");
	const response = await admin("PUT", `/servers/${server}`, { url: upstreamUrl("beta") });
	if (response.status !== 201) throw new Error(`server: ${await response.text()}`);
	const name = await policy({
		expression: 'tool.name == "add"',
		effect: "approve",
		approvalTimeoutSeconds: 300,
		applies: { servers: [server] },
		...extra,
	});
	return { server, policy: name };
}

/** A key's SDK client calling `add` on `server`; the call waits for an approver. */
async function heldCall(server: string, args: Record<string, unknown>) {
	const key = await createKey({ servers: [server] });
	const { client } = await connectClient(`/mcp/${server}`, key.key);
	const called = client.callTool({ name: "add", arguments: args }).catch((error: unknown) => error);
	return { key, client, called, waiting: await waitingFor(args) };
}

/** An approver rule for `email`, tried before any other test's rules (the first rule that matches decides). */
function personRule(email: string, approver: boolean, servers?: string[]): Promise<string> {
	return accessRule({ match: { email }, approver, priority: 0, ...(servers && { servers }) });
}

function newBrowser(): Browser {
	return new Browser((url) => (url.origin === ORIGIN ? gateway : undefined));
}

/** A browser signed in to the gateway's pages as `login`, landed on /approvals. */
async function signedIn(login: string): Promise<{ browser: Browser; page: Page }> {
	const browser = newBrowser();
	const form = await browser.get(`${ORIGIN}/connections/sign-in?return=/approvals`);
	const page = await browser.submit(form, { fields: { login, password: "demo" } });
	expect(page.url.pathname).toBe("/approvals");
	return { browser, page };
}

function decideOnPage(browser: Browser, page: Page, id: string, decision: "approve" | "deny", reason = "") {
	return browser.submit(page, {
		formAction: `/approvals/${id}`,
		fields: { reason },
		button: { name: "decision", value: decision },
	});
}

/** The registry's record of an approval: how it ended and who decided. */
async function recordOf(id: string) {
	return registryStub(env).approval(id);
}

function auditLines(): unknown[] {
	const lines: unknown[] = [];
	vi.spyOn(console, "log").mockImplementation((line: unknown) => {
		if (typeof line === "string" && line.includes('"admin_audit"')) lines.push(JSON.parse(line));
	});
	return lines;
}

describe("people whose access rule has approver: true decide held calls at /approvals", () => {
	it("an approver sees the waiting call (caller, server, tool, arguments, until when) and approves it: the caller gets the result, the upstream saw exactly one call, and the audit line and the registry's record name the person", async () => {
		const { server, policy: holding } = await heldServer();
		const rule = await personRule("alice@example.com", true);
		const args = uniqueArgs(3);
		const { key, client, called, waiting } = await heldCall(server, args);
		const audit = auditLines();
		const { browser, page } = await signedIn("alice");
		expect(page.status).toBe(200);
		expect(page.html).toContain("Signed in as <strong>alice@example.com</strong>");
		const card = page.html.slice(page.html.indexOf(`data-approval="${waiting.id}"`));
		expect(card).toContain(`<code>add</code> on <code>${server}</code>`);
		expect(card).toContain(`Called by <code>${key.id}</code>, held by policy <code>${holding}</code>`);
		expect(card).toContain(JSON.stringify(args).replaceAll('"', "&#34;"));
		expect(card).toContain("until <time");
		expect(await toolCallsOf("beta", "add", args)).toEqual([]);

		const done = await decideOnPage(browser, page, waiting.id, "approve");
		expect(done.status).toBe(200);
		expect(done.html).toContain("<h1>Approved</h1>");
		expect(textOf((await called) as object)).toBe(String(args.a + args.b));
		expect(await toolCallsOf("beta", "add", args)).toHaveLength(1);
		const by = `oauth~${rule}~`;
		expect(audit).toEqual([
			{
				event: "admin_audit",
				actor: "approver",
				action: "approval.approved",
				target: waiting.id,
				by: expect.stringContaining(by),
			},
		]);
		const record = await recordOf(waiting.id);
		expect(record).toMatchObject({
			status: "approved",
			decidedBy: expect.stringMatching(new RegExp(`^${by}[^~]+~[^~]+$`)),
		});
		await client.close();
	});

	it("an approver denies a call with a reason: the caller is told the reason, nothing reaches the upstream, and the list no longer shows it", async () => {
		const { server } = await heldServer();
		await personRule("alice@example.com", true);
		const args = uniqueArgs(3);
		const { client, called, waiting } = await heldCall(server, args);
		const { browser, page } = await signedIn("alice");
		const done = await decideOnPage(browser, page, waiting.id, "deny", "not during the freeze");
		expect(done.status).toBe(200);
		expect(done.html).toContain("<h1>Denied</h1>");
		expect(String(await called)).toContain("An approver denied the call of 'add'");
		expect(String(await called)).toContain("not during the freeze. Nothing was sent.");
		expect(await toolCallsOf("beta", "add", args)).toEqual([]);
		expect((await browser.get(`${ORIGIN}/approvals`)).html).not.toContain(waiting.id);
		expect(await recordOf(waiting.id)).toMatchObject({ status: "denied" });
		await client.close();
	});

	it("a person whose rule is not an approver gets a 403 page for the list and for a decision, and the call still waits", async () => {
		const { server } = await heldServer();
		await personRule("bob@contractor.example", false);
		const args = uniqueArgs(3);
		const { client, called, waiting } = await heldCall(server, args);
		const { browser, page } = await signedIn("bob");
		expect(page.status).toBe(403);
		expect(page.html).toContain("You are not an approver");
		expect(page.html).not.toContain(waiting.id);
		const posted = await postFrom(browser, ORIGIN, waiting.id, "approve");
		expect(posted.html).toContain("You are not an approver");
		expect(posted.status).toBe(403);
		expect(await recordOf(waiting.id)).toMatchObject({ status: "waiting" });
		expect(await toolCallsOf("beta", "add", args)).toEqual([]);
		expect((await admin("POST", `/approvals/${waiting.id}`, { decision: "deny" })).status).toBe(200);
		await called;
		await client.close();
	});

	it("a person not signed in is sent to sign in, and a form posted from another origin is refused: nothing is decided", async () => {
		const { server } = await heldServer();
		await personRule("alice@example.com", true);
		const args = uniqueArgs(3);
		const { client, called, waiting } = await heldCall(server, args);
		const anonymous = await newBrowser().get(`${ORIGIN}/approvals`);
		expect(anonymous.status).toBe(401);
		expect(anonymous.html).toContain('href="/connections/sign-in?return=%2Fapprovals"');
		const { browser } = await signedIn("alice");
		const forged = await postFrom(browser, "https://attacker.example", waiting.id, "approve");
		expect(forged.status).toBe(403);
		expect(forged.html).toContain("may only be sent from the gateway&#39;s own pages");
		expect(await recordOf(waiting.id)).toMatchObject({ status: "waiting" });
		expect((await admin("POST", `/approvals/${waiting.id}`, { decision: "deny" })).status).toBe(200);
		await called;
		expect(await toolCallsOf("beta", "add", args)).toEqual([]);
		await client.close();
	});

	it("a person may not decide their own call: the page shows it without buttons, a posted decision is refused with 403 saying another approver must, and the call still waits", async () => {
		const { server } = await heldServer();
		await personRule("alice@example.com", true, [server]);
		const { client } = await connectAs(`/mcp/${server}`, "alice");
		const args = uniqueArgs(3);
		const called = client.callTool({ name: "add", arguments: args }).catch((error: unknown) => error);
		const waiting = await waitingFor(args);
		expect(waiting.principal).toMatch(/^oauth~/);
		const { browser, page } = await signedIn("alice");
		const card = page.html.slice(page.html.indexOf(`data-approval="${waiting.id}"`));
		expect(card.slice(0, card.indexOf("</div>"))).toContain("You made this call: another approver must decide it.");
		const refused = await postFrom(browser, ORIGIN, waiting.id, "approve");
		expect(refused.status).toBe(403);
		expect(refused.html).toContain("You made this call yourself, so you may not decide it: another approver must.");
		expect(await recordOf(waiting.id)).toMatchObject({ status: "waiting" });
		expect(await toolCallsOf("beta", "add", args)).toEqual([]);
		expect((await admin("POST", `/approvals/${waiting.id}`, { decision: "approve" })).status).toBe(200);
		expect(textOf((await called) as object)).toBe(String(args.a + args.b));
		await client.close();
	});
});

describe("an approve policy's approvalWebhook is told of each held call", () => {
	const secret = "${UPSTREAM_APPROVAL_WEBHOOK_SECRET}";

	async function noticesAt(path: string): Promise<ReceivedNotice[]> {
		const answer = (await (await fetch(`${RECEIVER}/received?path=${encodeURIComponent(path)}`)).json()) as {
			received: ReceivedNotice[];
		};
		return answer.received;
	}

	it("a held call's notice arrives once, signed, with the approval's id and fields, Slack's text and blocks, and links to the approvals page and the dashboard", async () => {
		const path = `/ok/${uniqueName("notice")}`;
		const { server, policy: holding } = await heldServer({ approvalWebhook: { url: `${RECEIVER}${path}`, secret } });
		const args = uniqueArgs(3);
		const { key, client, called, waiting } = await heldCall(server, args);
		const [notice] = await eventually(async () => {
			const received = await noticesAt(path);
			return received.length > 0 ? received : null;
		}, "the notice received");
		expect(notice?.verified).toBe(true);
		const body = notice?.body as ApprovalNotice;
		expect(body.approval).toMatchObject({
			id: waiting.id,
			policy: holding,
			server,
			tool: "add",
			caller: key.id,
			summary: JSON.stringify(args),
		});
		expect(Date.parse(body.approval.until) - Date.parse(body.approval.since)).toBe(300_000);
		expect(body.text).toContain(
			`A call of add on ${server} by ${key.id} waits for an approver until ${body.approval.until}`,
		);
		expect(body.blocks.length).toBeGreaterThan(0);
		expect(body.blocks.every((block) => (block as { type: string }).type === "section")).toBe(true);
		expect(JSON.stringify(body.blocks)).toContain("/approvals|Decide on the approvals page>");
		expect(body.links).toEqual({ approvals: "http://gateway.test/approvals", dashboard: "http://gateway.test/admin/" });

		expect((await admin("POST", `/approvals/${waiting.id}`, { decision: "approve" })).status).toBe(200);
		expect(textOf((await called) as object)).toBe(String(args.a + args.b));
		expect(await noticesAt(path)).toHaveLength(1);
		await client.close();
	});

	for (const [failure, url, logged] of [
		["answers 500", () => `${RECEIVER}/fail/${uniqueName("notice")}`, "its webhook answered 500"],
		["is unreachable", () => "http://127.0.0.1:9/unreachable", "its webhook could not be reached"],
	] as const) {
		it(`a webhook that ${failure} does not stop the call from being approved and sent once; the operator's log says so`, async () => {
			const target = url();
			const { server } = await heldServer({ approvalWebhook: { url: target, secret } });
			const warned: string[] = [];
			vi.spyOn(console, "warn").mockImplementation((line: unknown) => void warned.push(String(line)));
			const args = uniqueArgs(3);
			const { client, called, waiting } = await heldCall(server, args);
			await eventually(
				async () => warned.find((line) => line.startsWith(`approval ${waiting.id}`) && line.includes(logged)) ?? null,
				"the failed notice logged",
			);
			expect((await admin("POST", `/approvals/${waiting.id}`, { decision: "approve" })).status).toBe(200);
			expect(textOf((await called) as object)).toBe(String(args.a + args.b));
			expect(await toolCallsOf("beta", "add", args)).toHaveLength(1);
			if (target.startsWith(RECEIVER)) expect(await noticesAt(new URL(target).pathname)).toHaveLength(1);
			await client.close();
		});
	}

	it("a policy keeps its approvalWebhook as given: the secret as its reference, never resolved", async () => {
		const webhook = { url: `${RECEIVER}/ok/${uniqueName("kept")}`, secret };
		const { policy: name } = await heldServer({ approvalWebhook: webhook });
		expect(await (await admin("GET", `/policies/${name}`)).json()).toMatchObject({ name, approvalWebhook: webhook });
	});

	it("a caller's text cannot make Slack markup: <, > and & in the arguments and names are escaped in text and blocks", () => {
		const notice = approvalNotice(
			{
				id: "id",
				policy: "p",
				principal: "key_abcdefghijkl",
				server: "s",
				tool: "add",
				arguments: JSON.stringify({ text: "<!channel> & <https://evil.example|click>" }),
				since: 0,
				until: 60_000,
				status: "waiting",
			},
			"https://gw.example",
		);
		const slack = JSON.stringify({ text: notice.text, blocks: notice.blocks });
		expect(slack).not.toContain("<!channel>");
		expect(slack).not.toContain("<https://evil.example");
		expect(slack).toContain("&lt;!channel&gt; &amp; &lt;https://evil.example|click&gt;");
		expect(slack).toContain("<https://gw.example/approvals|Decide on the approvals page>");
		// The machine-readable summary is the arguments as the approvers' lists show them.
		expect(notice.approval.summary).toBe(JSON.stringify({ text: "<!channel> & <https://evil.example|click>" }));
	});

	it("a webhook whose secret is not a ${UPSTREAM_…} reference is refused with 400, and no policy is stored", async () => {
		const name = uniqueName("approvers");
		const refused = await admin("PUT", `/policies/${name}`, {
			expression: "true",
			effect: "approve",
			applies: { servers: ["nowhere"] },
			approvalWebhook: { url: `${RECEIVER}/ok/x`, secret: "the-secret-itself" },
		});
		expect(refused.status).toBe(400);
		expect(await refused.text()).toContain("must be a reference to a Worker secret");
		expect((await admin("GET", `/policies/${name}`)).status).toBe(404);
	});
});

/** The browser posts a decision on `id` as a form on a page of `pageOrigin` would (its Origin header names that origin). */
function postFrom(browser: Browser, pageOrigin: string, id: string, decision: "approve" | "deny"): Promise<Page> {
	const form: Page = {
		url: new URL(`${pageOrigin}/approvals`),
		status: 200,
		html: `<form method="post" action="${ORIGIN}/approvals/${id}"></form>`,
		headers: new Headers(),
	};
	return browser.submit(form, { fields: {}, button: { name: "decision", value: decision } });
}

/** The SDK's whole OAuth flow at the gateway as `login` (sign-in, consent), then a connected client. */
async function connectAs(path: string, login: string) {
	const atClient = (url: URL) => url.href.startsWith(CLIENT_REDIRECT);
	const provider = new MemoryOAuthProvider();
	const first = oauthClient(path, provider, gateway);
	await expect(first.client.connect(first.transport)).rejects.toBeInstanceOf(UnauthorizedError);
	if (!provider.authorizationUrl) throw new Error("the client was not sent to sign in");
	const browser = newBrowser();
	const loginPage = await browser.get(provider.authorizationUrl, { stopAt: atClient });
	const consent = await browser.submit(loginPage, { fields: { login, password: "demo" } }, { stopAt: atClient });
	const landed = await browser.submit(
		consent,
		{ fields: {}, button: { name: "decision", value: "approve" } },
		{ stopAt: atClient },
	);
	const code = landed.url.searchParams.get("code");
	if (!code) throw new Error(`no code: ${landed.url.href}`);
	await first.transport.finishAuth(code);
	const second = oauthClient(path, provider, gateway);
	await second.client.connect(second.transport);
	return { client: second.client };
}
