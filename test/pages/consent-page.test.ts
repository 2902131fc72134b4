import { createHash, randomBytes } from "node:crypto";
import type { Page } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import { freePort, HOST } from "../../scripts/processes.ts";
import { NARROW, useBrowser } from "./support/browser.ts";
import { admin, GATEWAY, IDP_ISSUER, registerClient, signInAtProvider } from "./support/gateway.ts";
import { keepScreenshot, readabilityProblems } from "./support/readability.ts";

/** A client name an attacker would choose: markup that runs if the page does not escape it. */
const HOSTILE_NAME = "<script>alert(1)</script>";
/** An app on the person's computer (RFC 8252 loopback): the page warns about those. */
const LOOPBACK_REDIRECT = "http://127.0.0.1:9/callback";
/** The client's state, which every answer to the client carries back. */
const CLIENT_STATE = "pages-test";
/** This file's servers and the rule granting them to bob (fixed names: screenshots stay alike). */
const GRANTED = ["tickets", "wiki"];
const NOT_GRANTED = "finance";

/** The authorization request an MCP client sends the person's browser to (PKCE S256, RFC 8707 resource). */
function authorizeUrl(clientId: string): string {
	const challenge = createHash("sha256").update(randomBytes(32).toString("base64url")).digest("base64url");
	const url = new URL(`${GATEWAY}/authorize`);
	url.search = new URLSearchParams({
		response_type: "code",
		client_id: clientId,
		redirect_uri: LOOPBACK_REDIRECT,
		state: CLIENT_STATE,
		code_challenge: challenge,
		code_challenge_method: "S256",
		resource: `${GATEWAY}/mcp`,
	}).toString();
	return url.href;
}

/**
 * Plays the client's redirect URI (nothing listens on port 9): the browser's
 * arrival there is answered with a line, and its URL is what the client got.
 */
async function clientAnswersAt(page: Page): Promise<void> {
	await page.route(
		(url) => url.href.startsWith(LOOPBACK_REDIRECT),
		(route) => route.fulfill({ status: 200, contentType: "text/plain", body: "back at the app" }),
	);
}

/** The client's answer, once the browser is back at its redirect URI. */
async function answerAtClient(page: Page): Promise<URLSearchParams> {
	await page.waitForURL((url) => url.href.startsWith(LOOPBACK_REDIRECT));
	return new URL(page.url()).searchParams;
}

/** From the client's authorization URL through the provider's login as `login`, to the gateway's answer. */
async function signInThenConsent(page: Page, clientName: string, login: string): Promise<void> {
	const clientId = await registerClient(clientName, LOOPBACK_REDIRECT);
	await clientAnswersAt(page);
	await page.goto(authorizeUrl(clientId));
	await signInAtProvider(page, login);
	await page.waitForURL((url) => url.origin === GATEWAY);
}

describe("the consent page of the gateway's authorization server, after the sign-in", () => {
	const tab = useBrowser({ viewport: NARROW });

	beforeAll(async () => {
		// Nothing listens here: the page names these servers without reaching them.
		const nowhere = `http://${HOST}:${await freePort()}/mcp`;
		for (const name of [...GRANTED, NOT_GRANTED]) await admin("PUT", `/servers/${name}`, { url: nowhere });
		await admin("PUT", "/access-rules/pages-bob", { match: { subject: "bob" }, servers: GRANTED });
	});

	it("comes only after the sign-in at the identity provider, names bob and exactly the servers his rule grants, and Allow sends the code to the client", async () => {
		const { page } = tab();
		const clientId = await registerClient("Notes app", LOOPBACK_REDIRECT);
		await clientAnswersAt(page);
		await page.goto(authorizeUrl(clientId));
		// The first page the person sees is the provider's login, not a consent page.
		expect(new URL(page.url()).origin).toBe(IDP_ISSUER);
		await signInAtProvider(page, "bob");
		await page.waitForURL((url) => url.origin === GATEWAY);
		await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe(
			`Allow Notes app to use the MCP gateway at ${new URL(GATEWAY).host}?`,
		);
		expect(await page.getByText("Signed in as").textContent()).toBe("Signed in as Bob (bob@contractor.example).");
		expect(await page.getByRole("listitem").allTextContents()).toEqual(GRANTED);
		expect(await page.getByText(NOT_GRANTED).count()).toBe(0);
		// One primary button: Allow; Deny beside it.
		expect(await page.locator("button.primary").allTextContents()).toEqual(["Allow"]);
		await page.getByRole("button", { name: "Allow", exact: true }).click();
		const answer = await answerAtClient(page);
		expect(answer.get("code")).toBeTruthy();
		expect(answer.get("state")).toBe(CLIENT_STATE);
		expect(answer.get("iss")).toBe(GATEWAY);
	});

	it("Deny sends access_denied back to the client, with its state and no code", async () => {
		const { page } = tab();
		await signInThenConsent(page, "Notes app", "bob");
		await page.getByRole("button", { name: "Deny", exact: true }).click();
		const answer = await answerAtClient(page);
		expect(answer.get("error")).toBe("access_denied");
		expect(answer.get("state")).toBe(CLIENT_STATE);
		expect(answer.has("code")).toBe(false);
	});

	it("shows a client's name as text, never as markup: no script runs and the name reads literally", async () => {
		const { page, dialogs } = tab();
		await signInThenConsent(page, HOSTILE_NAME, "bob");
		await expect(page.title()).resolves.toBe(`Allow ${HOSTILE_NAME}?`);
		const heading = page.getByRole("heading", { level: 1 });
		expect(await heading.textContent()).toBe(
			`Allow ${HOSTILE_NAME} to use the MCP gateway at ${new URL(GATEWAY).host}?`,
		);
		// The page has no script of its own, so any <script> element would be the client's.
		expect(await page.locator("script").count()).toBe(0);
		expect(dialogs).toEqual([]);
		expect(await page.getByText("registered itself; its name is not verified").count()).toBe(1);
		await keepScreenshot(page, "consent");
	});

	it("is readable on a phone in light and dark: contrast, text size, no sideways scrolling, the loopback warning and both buttons in view", async () => {
		const { page } = tab();
		await signInThenConsent(page, "Notes app", "bob");
		for (const colorScheme of ["light", "dark"] as const) {
			await page.emulateMedia({ colorScheme });
			const background = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
			expect(background === "rgb(255, 255, 255)").toBe(colorScheme === "light");
			expect(await readabilityProblems(page)).toEqual([]);
			await expect(page.getByText("This sends access to an app on your computer.").isVisible()).resolves.toBe(true);
			for (const name of ["Allow", "Deny"]) {
				const button = page.getByRole("button", { name, exact: true });
				await button.scrollIntoViewIfNeeded();
				await expect(button.isVisible()).resolves.toBe(true);
				// A finger-sized target (WCAG 2.5.8's 24 px minimum).
				expect((await button.boundingBox())?.height ?? 0).toBeGreaterThanOrEqual(24);
			}
		}
		await keepScreenshot(page, "consent-dark");
	});

	it("is never shown to a person no rule admits: carol gets the refusal page, whose link tells the client access_denied", async () => {
		const { page } = tab();
		await signInThenConsent(page, "Notes app", "carol");
		await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe(
			"Your account may not use this gateway",
		);
		expect(await page.locator("form").count()).toBe(0);
		expect(await readabilityProblems(page)).toEqual([]);
		await keepScreenshot(page, "refusal");
		await page.getByRole("link", { name: "Return to the app" }).click();
		const answer = await answerAtClient(page);
		expect(answer.get("error")).toBe("access_denied");
		expect(answer.get("state")).toBe(CLIENT_STATE);
		expect(answer.has("code")).toBe(false);
	});
});

describe("the demo identity provider's login", () => {
	const tab = useBrowser({ viewport: NARROW });

	it("names the app it signs the person in to, in the gateway's style, readable on a phone", async () => {
		const { page } = tab();
		const clientId = await registerClient("Notes app", LOOPBACK_REDIRECT);
		await page.goto(authorizeUrl(clientId));
		await page.waitForURL((url) => url.origin === IDP_ISSUER);
		await expect(page.title()).resolves.toBe("Sign in to MCP gateway");
		await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Sign in to MCP gateway");
		expect(await page.locator("button.primary").allTextContents()).toEqual(["Sign in"]);
		expect(await readabilityProblems(page)).toEqual([]);
		await keepScreenshot(page, "idp-login");
	});
});
