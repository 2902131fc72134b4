import { describe, expect, inject, it } from "vitest";
import { NARROW, useBrowser, WIDE } from "./support/browser.ts";
import { GATEWAY } from "./support/gateway.ts";
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
});
