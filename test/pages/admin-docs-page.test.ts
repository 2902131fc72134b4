import { describe, expect, inject, it } from "vitest";
import { NARROW, useBrowser, WIDE } from "./support/browser.ts";
import { GATEWAY, signInAtProvider } from "./support/gateway.ts";
import { keepScreenshot, readabilityProblems } from "./support/readability.ts";

describe("the admin API reference, /admin/docs", () => {
	const tab = useBrowser({ viewport: WIDE });

	it("reads in the gateway's one stylesheet, light and dark, on a laptop and on a phone, with no script", async () => {
		const { page } = tab();
		await page.setExtraHTTPHeaders({ authorization: `Bearer ${inject("pagesAdminToken")}` });
		const response = await page.goto(`${GATEWAY}/admin/docs`);
		expect(response?.status()).toBe(200);
		expect(await page.locator("script").count()).toBe(0);
		// The shared stylesheet, in its wide frame.
		expect(await page.locator("body.wide").count()).toBe(1);
		for (const viewport of [WIDE, NARROW]) {
			await page.setViewportSize(viewport);
			await page.reload();
			for (const colorScheme of ["light", "dark"] as const) {
				await page.emulateMedia({ colorScheme });
				expect(await readabilityProblems(page)).toEqual([]);
			}
		}
		await page.emulateMedia({ colorScheme: "light" });
		await page.setViewportSize(WIDE);
		await keepScreenshot(page, "admin-docs");
	});

	it("opens for dave, signed in to the dashboard at the identity provider as npm start sets it up: the home page's link, the sign-in, the reference", async () => {
		const { page } = tab();
		await page.goto(`${GATEWAY}/`);
		await page.getByRole("link", { name: "Admin API reference" }).click();
		// No sign-in yet: the dashboard's, which will come back here.
		await page.waitForURL(`${GATEWAY}/admin/ui/sign-in?return=%2Fadmin%2Fdocs`);
		await page.getByRole("link", { name: "Sign in with your organisation" }).click();
		await signInAtProvider(page, "dave");
		await page.waitForURL(`${GATEWAY}/admin/docs`);
		await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toMatch(/^mcp-edge-gateway admin API/);
		expect(await page.locator("script").count()).toBe(0);
		// Its document, from its link, with the same sign-in.
		const document = await page.request.get(`${GATEWAY}/admin/openapi.json`);
		expect(document.status()).toBe(200);
		expect(await document.json()).toMatchObject({ openapi: expect.stringMatching(/^3\.1\./) });
	});
});
