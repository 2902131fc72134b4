import { describe, expect, it } from "vitest";
import { useBrowser } from "./support/browser.ts";
import { GATEWAY, IDP_ISSUER, signInAtProvider } from "./support/gateway.ts";

/**
 * Returns that would take the browser to another site if the gateway passed
 * them on as they are: a backslash Chromium reads as `/`, a tab it drops
 * (`/%09/evil.example` once decoded), a scheme-relative and an absolute URL,
 * and a backslash before a letter.
 */
const OFF_SITE = [
	"/\\evil.example/pwn",
	"/\t/evil.example",
	"//evil.example",
	"https://evil.example",
	"/\\t/evil.example",
];

describe("the sign-in's return in a real browser", () => {
	const tab = useBrowser();

	/** Every request the tab makes outside the gateway and the identity provider is refused and recorded. */
	async function offSiteRequests(): Promise<string[]> {
		const { context } = tab();
		const elsewhere: string[] = [];
		await context.route(
			(url) => url.origin !== GATEWAY && url.origin !== IDP_ISSUER,
			(route) => {
				elsewhere.push(route.request().url());
				return route.abort();
			},
		);
		return elsewhere;
	}

	it.each(OFF_SITE)(
		"after alice signs in at the identity provider, a return of %j lands on /connections, not another site",
		async (value) => {
			const { page } = tab();
			const elsewhere = await offSiteRequests();
			await page.goto(`${GATEWAY}/connections/sign-in?return=${encodeURIComponent(value)}`);
			await signInAtProvider(page, "alice");
			await page.waitForURL((url) => url.origin !== IDP_ISSUER);
			expect(page.url()).toBe(`${GATEWAY}/connections`);
			await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Your connections");
			expect(elsewhere).toEqual([]);
		},
	);

	it("after alice signs in, a return to a page of the gateway lands on that page, query included", async () => {
		const { page } = tab();
		const elsewhere = await offSiteRequests();
		await page.goto(`${GATEWAY}/connections/sign-in?return=${encodeURIComponent("/connections?from=mail")}`);
		await signInAtProvider(page, "alice");
		await page.waitForURL((url) => url.origin !== IDP_ISSUER);
		expect(page.url()).toBe(`${GATEWAY}/connections?from=mail`);
		await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Your connections");
		expect(elsewhere).toEqual([]);
	});
});
