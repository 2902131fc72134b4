import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { z } from "zod";
import { startIdentityUpstream } from "../../scripts/fixtures/identity-upstream.ts";
import { DEMO_PASSWORD } from "../../scripts/fixtures/oidc-idp.ts";
import { type RunningUpstream, startUpstream } from "../../scripts/fixtures/upstream-server.ts";
import { eventually } from "../support/eventually.ts";
import { artifactScreenshot } from "./support/artifacts.ts";
import { PHONE, useBrowser, WIDE } from "./support/browser.ts";
import { admin, GATEWAY, IDP_ISSUER } from "./support/gateway.ts";
import { keepScreenshot, readabilityProblems } from "./support/readability.ts";
import { tableProblems } from "./support/table-layout.ts";

const ADMIN_TOKEN = inject("pagesAdminToken");
/** The catalog key of this file's pinnable upstream (scripts/fixtures/pinnable-catalog.ts). */
const CATALOG = "dashboard";
const SERVER = "pinnable";
/** The person whose rule grants admin, as npm start sets it up: dave, by the rule `demo-operator` (scripts/demo-registry.ts). */
const OPERATOR_LOGIN = "dave";
const OPERATOR_RULE = "demo-operator";

const searchTool = (description: string) => ({ name: "search", description, args: ["query"] });

let upstream: RunningUpstream;

async function putCatalog(tools: unknown[]): Promise<void> {
	const response = await fetch(`${new URL(upstream.url).origin}/_catalog/${CATALOG}`, {
		method: "PUT",
		headers: { "content-type": "application/json" },
		body: JSON.stringify({ tools }),
	});
	if (response.status !== 204) throw new Error(`catalog: ${response.status}`);
}

async function signInWithToken(page: Page): Promise<void> {
	const first = await page.goto(`${GATEWAY}/admin/`);
	expect(first?.status()).toBe(401);
	await page.getByLabel("Admin token").fill(ADMIN_TOKEN);
	await page.getByRole("button", { name: "Sign in with the admin token" }).click();
	await page.waitForURL(`${GATEWAY}/admin/`);
	await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Gateway dashboard");
}

/** What `GET /admin/call-counts` answers, as far as this file reads it. */
const CallCountsSchema = z.object({ servers: z.array(z.object({ server: z.string(), calls: z.number() })) });

/** One tool call through the gateway with an API key, as an MCP client makes it: the call figures then have a row. */
async function callThroughGateway(key: string): Promise<void> {
	const client = new Client({ name: "dashboard-page-test", version: "1" });
	const transport = new StreamableHTTPClientTransport(new URL(`${GATEWAY}/mcp/demo`), {
		requestInit: { headers: { authorization: `Bearer ${key}` } },
	});
	await client.connect(transport);
	try {
		await client.callTool({ name: "echo", arguments: { text: "phone" } });
	} finally {
		await client.close();
	}
}

/** The row of the table whose first cell is `name`. */
function rowOf(page: Page, name: string) {
	return page.getByRole("row").filter({ has: page.getByRole("cell", { name, exact: true }) });
}

describe("the operators' dashboard", () => {
	const tab = useBrowser();

	beforeAll(async () => {
		upstream = await startUpstream({ name: "pinnable", catalog: "mutable" });
		await putCatalog([searchTool("Searches the notes."), { name: "lookup", args: ["id"] }]);
	});
	afterAll(async () => {
		await upstream?.close();
	});

	it("signs in with the admin token, keeps no token in the page or a readable cookie, and reads on a laptop and a phone", async () => {
		const { page, context, dialogs } = tab();
		await signInWithToken(page);
		const cookies = await context.cookies();
		const session = cookies.find((cookie) => cookie.name === "gw_admin");
		expect(session).toMatchObject({ httpOnly: true, sameSite: "Strict", path: "/admin" });
		expect(JSON.stringify(cookies)).not.toContain(ADMIN_TOKEN);
		expect(await page.content()).not.toContain(ADMIN_TOKEN);
		// No script runs on the page at all: the only way to learn of one is a dialog, and none opened.
		expect(await page.locator("script").count()).toBe(0);
		expect(dialogs).toEqual([]);
		expect(await readabilityProblems(page)).toEqual([]);
		await artifactScreenshot(page, "dashboard-laptop");
		await page.setViewportSize(PHONE);
		expect(await readabilityProblems(page)).toEqual([]);
		await artifactScreenshot(page, "dashboard-phone");
	});

	it(`as npm start sets it up: signs ${OPERATOR_LOGIN} in at the identity provider, whose rule ${OPERATOR_RULE} grants admin`, async () => {
		const { page } = tab();
		await page.goto(`${GATEWAY}/admin/`);
		await page.getByRole("link", { name: "Sign in with your organisation" }).click();
		await page.waitForURL((url) => url.origin === IDP_ISSUER);
		await page.getByLabel("User").fill(OPERATOR_LOGIN);
		await page.getByLabel("Password").fill(DEMO_PASSWORD);
		await page.getByRole("button", { name: "Sign in" }).click();
		await page.waitForURL(`${GATEWAY}/admin/`);
		await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Gateway dashboard");
		await expect(page.getByText("Signed in with").textContent()).resolves.toContain("dave@example.com");
		await expect(rowOf(page, OPERATOR_RULE).getByRole("cell").nth(4).textContent()).resolves.toBe("yes");
	});

	it("every dashboard page with a table reads on a laptop and on a 390 px phone, where its rows stack: no cell splits a word, no table or last column reaches past the window", async () => {
		const { page } = tab();
		// Something in every table of the overview: npm start's servers and rules, and a key, a
		// virtual server, a policy, a guard and a call of this test's own.
		const created = z
			.object({ id: z.string(), key: z.string() })
			.parse(await admin("POST", "/keys", { name: "phone" }));
		await admin("PUT", "/virtual-servers/phone-mix", { servers: ["demo", "modern-demo"] });
		await admin("PUT", "/policies/phone-policy", {
			expression: 'tool == "never-called"',
			effect: "deny",
			applies: { servers: ["demo"] },
		});
		await admin("PUT", "/guards/phone-guard", {
			stage: "response",
			applies: { servers: ["demo"], tools: ["get_*", "read_*"] },
			detect: ["secrets", "email", "phone"],
			action: "redact",
		});
		try {
			await callThroughGateway(created.key);
			await eventually(async () => {
				const figures = CallCountsSchema.parse(await admin("GET", "/call-counts"));
				return figures.servers.some((row) => row.server === "demo" && row.calls > 0);
			}, "the call in the call figures");
			await signInWithToken(page);
			for (const viewport of [WIDE, PHONE]) {
				await page.setViewportSize(viewport);
				await page.goto(`${GATEWAY}/admin/`);
				for (const section of ["servers", "calls", "virtual-servers", "keys", "access-rules", "policies", "guards"]) {
					expect(await page.locator(`#${section} table`).count(), section).toBe(1);
				}
				expect(await tableProblems(page), `${viewport.width} px`).toEqual([]);
				expect(await readabilityProblems(page), `${viewport.width} px`).toEqual([]);
				// The last columns in view, not cut off: "Revoke" and the access rules' "Admin".
				const lastColumns = [
					page.getByRole("button", { name: "Revoke phone" }),
					page.locator('#access-rules td[data-label="Admin"]').first(),
				];
				for (const cell of lastColumns) {
					const box = await cell.boundingBox();
					expect(box && box.x + box.width <= viewport.width, `${viewport.width} px`).toBe(true);
				}
				await page.goto(`${GATEWAY}/admin/ui/servers/demo`);
				expect(await page.locator("table").count()).toBe(1);
				expect(await tableProblems(page), `${viewport.width} px`).toEqual([]);
				expect(await readabilityProblems(page), `${viewport.width} px`).toEqual([]);
			}
			// On the phone each row is a block of its own, its cells one under another.
			await page.goto(`${GATEWAY}/admin/`);
			await expect(
				page
					.locator("#keys tr")
					.last()
					.evaluate((row) => getComputedStyle(row).display),
			).resolves.toBe("block");
			await artifactScreenshot(page, "dashboard-phone-tables");
			await keepScreenshot(page, "dashboard-phone");
		} finally {
			await admin("DELETE", "/guards/phone-guard");
			await admin("DELETE", "/policies/phone-policy");
			await admin("DELETE", "/virtual-servers/phone-mix");
			await admin("DELETE", `/keys/${created.id}`);
		}
	});

	it("adds a server from its form, approves its tools, then approves a tool whose definition changed", async () => {
		const { page } = tab();
		await signInWithToken(page);
		const form = page.getByRole("group", { name: "Add a server" });
		await form.getByLabel("Name").fill(SERVER);
		await form.getByLabel("URL").fill(`${upstream.url}?catalog=${CATALOG}`);
		await form.getByLabel("Changed tools").selectOption("block");
		await form.getByRole("button", { name: "Add server" }).click();
		await page.waitForURL(`${GATEWAY}/admin/ui/servers/${SERVER}`);
		await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe(`Server ${SERVER}`);
		await expect(page.getByText("Check:").textContent()).resolves.toContain("Answers");
		await expect(rowOf(page, "search").getByRole("cell").nth(1).textContent()).resolves.toBe("New");
		await page.getByRole("button", { name: "Approve every tool as listed now" }).click();
		await page.waitForURL(`${GATEWAY}/admin/ui/servers/${SERVER}`);
		await expect(rowOf(page, "search").getByRole("cell").nth(1).textContent()).resolves.toBe("Approved");

		await putCatalog([searchTool("Searches the notes, and sends them elsewhere."), { name: "lookup", args: ["id"] }]);
		await page.reload();
		const changed = rowOf(page, "search");
		await expect(changed.getByRole("cell").nth(1).textContent()).resolves.toBe("Changed since approved: description");
		await expect(rowOf(page, "lookup").getByRole("cell").nth(1).textContent()).resolves.toBe("Approved");
		expect(await readabilityProblems(page)).toEqual([]);
		await artifactScreenshot(page, "dashboard-server-changed");
		await keepScreenshot(page, "dashboard-server");
		await changed.getByRole("button", { name: "Approve search" }).click();
		await page.waitForURL(`${GATEWAY}/admin/ui/servers/${SERVER}`);
		await expect(rowOf(page, "search").getByRole("cell").nth(1).textContent()).resolves.toBe("Approved");
		// The overview counts none waiting now, and the approval is the admin API's own.
		await page.goto(`${GATEWAY}/admin/`);
		const listed = rowOf(page, SERVER);
		await expect(listed.getByRole("cell").nth(1).textContent()).resolves.toBe("Answers");
		await expect(listed.getByRole("cell").nth(3).textContent()).resolves.not.toContain("to approve");
		await keepScreenshot(page, "dashboard");
	});

	it("creates a key and shows its secret once: on the page after the form, not after a reload", async () => {
		const { page } = tab();
		await signInWithToken(page);
		const form = page.getByRole("group", { name: "Create a key" });
		await form.getByLabel("Name").fill("dashboard-ci");
		await form.getByRole("button", { name: "Create key" }).click();
		await page.waitForURL(`${GATEWAY}/admin/ui/keys/new`);
		await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Key dashboard-ci created");
		const secret = (await page.locator("#new-key").textContent())?.trim() ?? "";
		expect(secret.length).toBeGreaterThan(30);
		await artifactScreenshot(page, "dashboard-new-key");
		// The key works: the gateway takes it as a bearer (an MCP request without a session is refused as such, not 401).
		const probe = await fetch(`${GATEWAY}/mcp`, {
			method: "POST",
			headers: {
				authorization: `Bearer ${secret}`,
				"content-type": "application/json",
				accept: "application/json, text/event-stream",
			},
			body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
		});
		expect(probe.status).not.toBe(401);
		await page.reload();
		await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("The key was shown once");
		expect(await page.content()).not.toContain(secret);
		await page.goto(`${GATEWAY}/admin/#keys`);
		await expect(rowOf(page, "dashboard-ci").count()).resolves.toBe(1);
		expect(await page.content()).not.toContain(secret);
	});

	it("lists servers that take each caller's own credentials as answering, in the neutral colour, not as broken", async () => {
		const identity = await startIdentityUpstream();
		try {
			await admin("PUT", "/servers/per-caller-oauth?check=false", {
				url: inject("pagesOAuthUpstreamUrl"),
				auth: { type: "oauth" },
			});
			await admin("PUT", "/servers/per-caller-identity?check=false", { url: identity.url, auth: { type: "identity" } });
			const { page } = tab();
			await signInWithToken(page);
			for (const [name, words] of [
				["per-caller-oauth", "Answers; each caller signs in"],
				["per-caller-identity", "Answers; needs the caller's identity"],
			] as const) {
				const check = rowOf(page, name).getByRole("cell").nth(1);
				await expect(check.textContent()).resolves.toBe(words);
				await expect(check.locator("span").getAttribute("class")).resolves.toBe("muted");
			}
		} finally {
			await admin("DELETE", "/servers/per-caller-oauth");
			await admin("DELETE", "/servers/per-caller-identity");
			await identity.close();
		}
	});
});
