/**
 * Screenshots kept as test artefacts: every run writes them under
 * test/pages/artifacts/ (gitignored; CI keeps the directory), so a person can
 * look at what the browser showed. `keepScreenshot` (readability.ts) is the
 * opt-in copy for docs/screenshots/.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { ROOT } from "../../../scripts/wrangler-dev.ts";

export const ARTIFACTS = join(ROOT, "test", "pages", "artifacts");

/** Writes the whole page as test/pages/artifacts/<name>.png. */
export async function artifactScreenshot(page: Page, name: string): Promise<string> {
	mkdirSync(ARTIFACTS, { recursive: true });
	const path = join(ARTIFACTS, `${name}.png`);
	await page.screenshot({ path, fullPage: true });
	return path;
}
