import type { Page } from "playwright-core";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { z } from "zod";
import { freePort, HOST } from "../../scripts/processes.ts";
import { eventually } from "../support/eventually.ts";
import { PHONE, useBrowser, WIDE } from "./support/browser.ts";
import { admin, GATEWAY, signInAtProvider } from "./support/gateway.ts";
import { keepScreenshot, readabilityProblems } from "./support/readability.ts";
import { tableProblems } from "./support/table-layout.ts";

/** `oauth-demo`, which npm start registers (scripts/demo-registry.ts): its MCP endpoint, at the OAuth upstream. */
const OAUTH_UPSTREAM = inject("pagesOAuthUpstreamUrl");

/** npm start's servers: one that takes each person's own account, one that does not. */
const CONNECTABLE = "oauth-demo";
const OPERATOR = "demo";
/** This file's own: an oauth server that alice's rule (npm start's `demo`) does not grant. */
const NOT_GRANTED = "payroll";

/** The OAuth upstream's counters (scripts/fixtures/control-shapes.ts), as far as these tests read them. */
const UpstreamStatsSchema = z.object({ codeExchanges: z.number(), revocations: z.number() });

async function upstreamStats(): Promise<z.output<typeof UpstreamStatsSchema>> {
	const response = await fetch(new URL("/_stats", OAUTH_UPSTREAM), { signal: AbortSignal.timeout(5_000) });
	return UpstreamStatsSchema.parse(await response.json());
}

/** The row of the connections table for `server`. */
function rowOf(page: Page, server: string) {
	return page.getByRole("row").filter({ has: page.getByRole("cell", { name: server, exact: true }) });
}

describe("the connections page", () => {
	const tab = useBrowser();

	beforeAll(async () => {
		// Nothing listens here: the page lists servers without reaching them (the admin API's
		// check of a new server only warns that it found nothing).
		const nowhere = `http://${HOST}:${await freePort()}/mcp`;
		await admin("PUT", `/servers/${NOT_GRANTED}`, { url: nowhere, auth: { type: "oauth" } });
	});

	it("as npm start sets it up: sends a browser without a sign-in to the identity provider and back, then lists the oauth servers alice's rule grants, not connected", async () => {
		const { page } = tab();
		const first = await page.goto(`${GATEWAY}/connections`);
		expect(first?.status()).toBe(401);
		await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Sign in to continue");
		await page.getByRole("link", { name: "Sign in" }).click();
		await signInAtProvider(page, "alice");
		await page.waitForURL(`${GATEWAY}/connections`);
		await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Your connections");
		expect(await page.getByText("Signed in as").textContent()).toContain("alice@example.com");
		const row = rowOf(page, CONNECTABLE);
		await expect(row.getByRole("cell").nth(1).textContent()).resolves.toBe("Not connected");
		await expect(row.getByRole("button", { name: "Connect", exact: true }).isVisible()).resolves.toBe(true);
		// Only servers that take each person's own account, and only those the rule grants.
		await expect(rowOf(page, OPERATOR).count()).resolves.toBe(0);
		await expect(rowOf(page, NOT_GRANTED).count()).resolves.toBe(0);
		expect(await readabilityProblems(page)).toEqual([]);
		await keepScreenshot(page, "connections");
	});

	it("as npm start sets it up: alice connects her own account at oauth-demo and disconnects it, all from the page", async () => {
		const { page } = tab();
		const before = await upstreamStats();
		await page.goto(`${GATEWAY}/connections`);
		await page.getByRole("link", { name: "Sign in" }).click();
		await signInAtProvider(page, "alice");
		await page.waitForURL(`${GATEWAY}/connections`);
		await rowOf(page, CONNECTABLE).getByRole("button", { name: "Connect", exact: true }).click();
		// The upstream's own authorization server: pick who to be there.
		await page.waitForURL((url) => url.origin === new URL(OAUTH_UPSTREAM).origin);
		await page.getByLabel("alice").check();
		await page.getByRole("button", { name: "Sign in" }).click();
		await page.waitForURL((url) => url.origin === GATEWAY && url.pathname !== "/connections");
		await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe(`Connected to ${CONNECTABLE}`);
		expect(await readabilityProblems(page)).toEqual([]);
		await keepScreenshot(page, "connected");
		// One sign-in there, one code exchanged: the tokens are the gateway's to keep now.
		expect((await upstreamStats()).codeExchanges).toBe(before.codeExchanges + 1);
		await page.getByRole("link", { name: "Your connections" }).click();
		const row = rowOf(page, CONNECTABLE);
		await expect(row.getByRole("cell").nth(1).textContent()).resolves.toMatch(/^Connected since \d{4}-\d{2}-\d{2}$/);
		// On a phone the row reads whole: the date and "Disconnect" each on one line.
		await page.setViewportSize(PHONE);
		expect(await tableProblems(page)).toEqual([]);
		expect(await readabilityProblems(page)).toEqual([]);
		await page.setViewportSize(WIDE);
		await row.getByRole("button", { name: "Disconnect", exact: true }).click();
		await page.waitForURL(`${GATEWAY}/connections`);
		await expect(rowOf(page, CONNECTABLE).getByRole("cell").nth(1).textContent()).resolves.toBe("Not connected");
		await expect(
			rowOf(page, CONNECTABLE).getByRole("button", { name: "Connect", exact: true }).isVisible(),
		).resolves.toBe(true);
		// A disconnect also revokes the tokens where the upstream offers it (RFC 7009).
		await eventually(
			async () => (await upstreamStats()).revocations > before.revocations,
			"a revocation at the upstream",
		);
	});
});
