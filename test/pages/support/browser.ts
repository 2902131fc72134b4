/**
 * Debian's Chromium, driven by playwright-core: one browser per test file,
 * a fresh context (no cookies, no storage) per test, and every dialog a page
 * opens recorded, so a test can say that none fired.
 */
import { existsSync } from "node:fs";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, beforeEach } from "vitest";

/** Where Debian's `chromium` package installs it (CI installs it in .ci/run). */
export const CHROMIUM_PATH = "/usr/bin/chromium";

const CHROMIUM_ARGS = [
	"--headless",
	"--no-sandbox",
	"--disable-gpu",
	"--disable-quic",
	"--no-first-run",
	// Nothing but the pages under test: no update checks, no sync, no background requests.
	"--disable-background-networking",
	"--disable-component-update",
	"--disable-sync",
];

/** How long one step (a click, a navigation, an element to appear) may take. */
const STEP_TIMEOUT_MS = 8_000;
/** How much of the page's text a failure prints. */
const PAGE_TEXT_CHARS = 600;

/** A narrow phone's width and a laptop's: the pages must read at both. */
export const NARROW = { width: 375, height: 740 };
export const WIDE = { width: 800, height: 560 };
/** A common phone's width (390 px), where the tables must still read without splitting a word. */
export const PHONE = { width: 390, height: 844 };

export interface BrowserTab {
	page: Page;
	context: BrowserContext;
	/** The messages of the dialogs (alert, confirm, prompt) the pages opened, each dismissed. */
	dialogs: string[];
}

export async function launchChromium(): Promise<Browser> {
	if (!existsSync(CHROMIUM_PATH)) {
		throw new Error(
			`The page tests drive Debian's Chromium at ${CHROMIUM_PATH}, which is not installed: install it with \`apt-get install -y chromium\`.`,
		);
	}
	return chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS });
}

/**
 * Registers the hooks of a test file: Chromium launched before its tests,
 * a fresh context and page before each (its `tab()`), closed after it.
 */
export function useBrowser(options: { viewport?: { width: number; height: number } } = {}): () => BrowserTab {
	let browser: Browser | undefined;
	let current: BrowserTab | undefined;
	beforeAll(async () => {
		browser = await launchChromium();
	});
	afterAll(async () => {
		await browser?.close();
	});
	beforeEach(async ({ onTestFinished }) => {
		if (!browser) throw new Error("Chromium did not start");
		const context = await browser.newContext({ viewport: options.viewport ?? WIDE });
		// A step that waits fails well within the test's own timeout, naming what it waited for.
		context.setDefaultTimeout(STEP_TIMEOUT_MS);
		const page = await context.newPage();
		onTestFinished(async ({ task }) => {
			// Where the browser was, and what it showed, when a test failed; then the context goes.
			if (task.result?.state === "fail") {
				const text = await page
					.locator("body")
					// biome-ignore lint/performance/useDomNodeTextContent: the text as laid out, as the person saw it.
					.innerText({ timeout: 1_000 })
					.catch((error: unknown) => `(its text could not be read: ${String(error)})`);
				console.error(`the page at failure: ${page.url()}\n${text.replace(/\s+/g, " ").slice(0, PAGE_TEXT_CHARS)}`);
			}
			await context.close();
			current = undefined;
		});
		const dialogs: string[] = [];
		page.on("dialog", (dialog) => {
			dialogs.push(dialog.message());
			void dialog.dismiss();
		});
		current = { page, context, dialogs };
	});
	return () => {
		if (!current) throw new Error("tab() is only available inside a test");
		return current;
	};
}
