import { createHash, randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { NARROW, useBrowser } from "./support/browser.ts";
import { GATEWAY, registerClient } from "./support/gateway.ts";
import { keepScreenshot, readabilityProblems } from "./support/readability.ts";

/** A client name an attacker would choose: markup that runs if the page does not escape it. */
const HOSTILE_NAME = "<script>alert(1)</script>";
/** An app on the person's computer (RFC 8252 loopback): the page warns about those. */
const LOOPBACK_REDIRECT = "http://127.0.0.1:9/callback";

/** The authorization request an MCP client sends the person's browser to (PKCE S256, RFC 8707 resource). */
function authorizeUrl(clientId: string): string {
	const challenge = createHash("sha256").update(randomBytes(32).toString("base64url")).digest("base64url");
	const url = new URL(`${GATEWAY}/authorize`);
	url.search = new URLSearchParams({
		response_type: "code",
		client_id: clientId,
		redirect_uri: LOOPBACK_REDIRECT,
		state: "pages-test",
		code_challenge: challenge,
		code_challenge_method: "S256",
		resource: `${GATEWAY}/mcp`,
	}).toString();
	return url.href;
}

describe("the consent page of the gateway's authorization server", () => {
	const tab = useBrowser({ viewport: NARROW });

	it("shows a client's name as text, never as markup: no script runs and the name reads literally", async () => {
		const { page, dialogs } = tab();
		const clientId = await registerClient(HOSTILE_NAME, LOOPBACK_REDIRECT);
		const response = await page.goto(authorizeUrl(clientId));
		expect(response?.status()).toBe(200);
		await expect(page.title()).resolves.toBe(`Allow ${HOSTILE_NAME}?`);
		const heading = page.getByRole("heading", { level: 1 });
		expect(await heading.textContent()).toBe(
			`Allow ${HOSTILE_NAME} to use the MCP gateway at ${new URL(GATEWAY).host}?`,
		);
		// The page has no script of its own, so any <script> element would be the client's.
		expect(await page.locator("script").count()).toBe(0);
		// `goto` waits for the load event: a script in the name would have opened its alert by now.
		expect(dialogs).toEqual([]);
		expect(await page.getByText("registered itself; its name is not verified").count()).toBe(1);
		await keepScreenshot(page, "consent");
	});

	it("is readable on a phone: contrast, text size, no sideways scrolling, the loopback warning and both buttons in view", async () => {
		const { page } = tab();
		const clientId = await registerClient("Notes app", LOOPBACK_REDIRECT);
		await page.goto(authorizeUrl(clientId));
		expect(await readabilityProblems(page)).toEqual([]);
		await expect(page.getByText("This sends access to an app on your computer.").isVisible()).resolves.toBe(true);
		for (const name of ["Allow", "Deny"]) {
			const button = page.getByRole("button", { name, exact: true });
			await button.scrollIntoViewIfNeeded();
			await expect(button.isVisible()).resolves.toBe(true);
			// A finger-sized target (WCAG 2.5.8's 24 px minimum).
			expect((await button.boundingBox())?.height ?? 0).toBeGreaterThanOrEqual(24);
		}
	});
});
