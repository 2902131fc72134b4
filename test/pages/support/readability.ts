/**
 * What "readable" means for the gateway's pages, measured in the browser:
 * every piece of text at WCAG AA contrast against what is behind it (4.5:1)
 * and at least 14 px, and nothing wider than the window (no sideways
 * scrolling on a phone). `problems` lists each failure in a sentence.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { ROOT } from "../../../scripts/wrangler-dev.ts";

const MIN_CONTRAST = 4.5;
const MIN_FONT_PX = 14;
/** Every run's screenshots, kept as the run's artefacts (gitignored). */
const ARTIFACTS = join(ROOT, "test", "pages", "artifacts");
/** The ones the docs show, refreshed on request. */
const SCREENSHOTS = join(ROOT, "docs", "screenshots");

/** Every readability problem of the page as it is shown now; empty when there is none. */
export async function readabilityProblems(page: Page): Promise<string[]> {
	return page.evaluate(
		({ minContrast, minFontPx }) => {
			const problems: string[] = [];
			const rgba = (value: string): [number, number, number, number] => {
				const parts = value.match(/[\d.]+/g)?.map(Number) ?? [0, 0, 0, 0];
				return [parts[0] ?? 0, parts[1] ?? 0, parts[2] ?? 0, parts[3] ?? 1];
			};
			const luminance = ([r, g, b]: [number, number, number, number]) => {
				const channel = (c: number) => {
					const s = c / 255;
					return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
				};
				return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
			};
			// The first opaque background behind an element (the page's white when none is set).
			const backgroundOf = (element: Element | null): [number, number, number, number] => {
				for (let at = element; at; at = at.parentElement) {
					const colour = rgba(getComputedStyle(at).backgroundColor);
					if (colour[3] > 0.5) return colour;
				}
				return [255, 255, 255, 1];
			};
			for (const element of document.body.querySelectorAll("*")) {
				const ownText = [...element.childNodes].some(
					(node) => node.nodeType === Node.TEXT_NODE && (node.textContent ?? "").trim() !== "",
				);
				const style = getComputedStyle(element);
				if (!ownText || style.display === "none" || style.visibility === "hidden") continue;
				const text = (element.textContent ?? "").trim().slice(0, 40);
				const [fg, bg] = [luminance(rgba(style.color)), luminance(backgroundOf(element))];
				const contrast = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
				if (contrast < minContrast) {
					problems.push(
						`"${text}" (<${element.localName}>) has contrast ${contrast.toFixed(2)}:1, under ${minContrast}:1`,
					);
				}
				const size = Number.parseFloat(style.fontSize);
				if (size < minFontPx) problems.push(`"${text}" (<${element.localName}>) is ${size}px, under ${minFontPx}px`);
			}
			const width = document.documentElement.scrollWidth;
			if (width > window.innerWidth) {
				problems.push(`the page is ${width}px wide in a ${window.innerWidth}px window: it scrolls sideways`);
			}
			return problems;
		},
		{ minContrast: MIN_CONTRAST, minFontPx: MIN_FONT_PX },
	);
}

/**
 * Keeps a screenshot of the page (the viewport only: small files) as
 * test/pages/artifacts/<name>.png, and with PAGES_SCREENSHOTS=1 also as
 * docs/screenshots/<name>.png. The docs' copies are refreshed only on
 * request, so a test run leaves the tracked tree as it was (the pages name
 * the gateway's port, which changes every run).
 */
export async function keepScreenshot(page: Page, name: string): Promise<void> {
	const shot = await page.screenshot();
	const places = process.env.PAGES_SCREENSHOTS ? [ARTIFACTS, SCREENSHOTS] : [ARTIFACTS];
	for (const dir of places) {
		mkdirSync(dir, { recursive: true });
		writeFileSync(join(dir, `${name}.png`), shot);
	}
}
