import { describe, expect, it } from "vitest";
import { NARROW, useBrowser } from "./support/browser.ts";
import { GATEWAY } from "./support/gateway.ts";
import { keepScreenshot, readabilityProblems } from "./support/readability.ts";

describe("the gateway's address in a browser", () => {
	const tab = useBrowser({ viewport: NARROW });

	it("is a short page saying what this is, the endpoint to give a client and where to go, readable on a phone in light and dark", async () => {
		const { page } = tab();
		const response = await page.goto(`${GATEWAY}/`);
		expect(response?.status()).toBe(200);
		await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("This is an MCP gateway");
		expect(await page.getByText(`${GATEWAY}/mcp`, { exact: true }).count()).toBe(1);
		const links = await page.getByRole("link").evaluateAll((anchors) => anchors.map((a) => a.getAttribute("href")));
		expect(links).toEqual(["/connections", "/admin/", "/admin/docs", "/admin/openapi.json"]);
		for (const colorScheme of ["light", "dark"] as const) {
			await page.emulateMedia({ colorScheme });
			expect(await readabilityProblems(page)).toEqual([]);
		}
		await page.emulateMedia({ colorScheme: "light" });
		await keepScreenshot(page, "home");
	});
});
