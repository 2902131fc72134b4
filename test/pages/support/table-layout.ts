/**
 * Whether a page's tables read on a narrow screen, measured in the browser:
 * no word in a table cell is split across lines (a word's Range laid out as
 * more than one box is split), and no table reaches past the window unless it
 * sits in a box that scrolls sideways (`overflow-x: auto | scroll`) and that
 * box itself fits. `tableProblems` lists each failure in a sentence.
 */
import type { Page } from "playwright-core";

/** Every table problem of the page as it is laid out now; empty when there is none. */
export async function tableProblems(page: Page): Promise<string[]> {
	return page.evaluate(() => {
		const problems: string[] = [];
		const width = window.innerWidth;
		// A rounding margin: sub-pixel positions are not overflow.
		const fits = (right: number) => right <= width + 0.5;
		for (const cell of document.querySelectorAll("td, th")) {
			const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
			for (let node = walker.nextNode(); node; node = walker.nextNode()) {
				const text = node.textContent ?? "";
				for (const word of text.matchAll(/\S+/g)) {
					const range = document.createRange();
					range.setStart(node, word.index);
					range.setEnd(node, word.index + word[0].length);
					// One box per line the word is laid out on (empty boxes are not lines).
					const lines = new Set(
						[...range.getClientRects()]
							.filter((rect) => rect.width > 0 && rect.height > 0)
							.map((rect) => Math.round(rect.top)),
					);
					if (lines.size > 1) {
						const where = cell.closest("section")?.id || cell.closest("table")?.id || "a table";
						problems.push(`"${word[0]}" in ${where} is split over ${lines.size} lines`);
					}
				}
			}
		}
		for (const table of document.querySelectorAll("table")) {
			let scroller: Element | null = null;
			for (let at = table.parentElement; at && at !== document.body; at = at.parentElement) {
				if (["auto", "scroll"].includes(getComputedStyle(at).overflowX)) {
					scroller = at;
					break;
				}
			}
			const box = (scroller ?? table).getBoundingClientRect();
			if (!fits(box.right)) {
				const where = table.closest("section")?.id || "a table";
				problems.push(
					scroller
						? `the scrolling box of ${where} reaches ${Math.round(box.right)}px in a ${width}px window`
						: `${where} reaches ${Math.round(box.right)}px in a ${width}px window and does not scroll in a box of its own`,
				);
			}
		}
		return problems;
	});
}
