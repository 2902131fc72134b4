import { type Inserted, sourceOffset } from "./loop-guard.ts";

/** A place in the program as the model wrote it: its line, and its column when it is known exactly (both from 1). */
export interface ProgramPosition {
	line: number;
	column?: number;
}

/** What `normalizeCode` puts before a function body, and before a body's last expression. */
const BODY_OPENING = "async () => {\n";
const RETURNED = "return (";

/**
 * Maps a place in the program as it ran (line and column from 1 in the
 * guarded text) back to the program as written (`code`): the step guard
 * adds no lines, only text within them (`inserted`), and `normalizeCode`
 * trims the program, may wrap it in a function (one line more before it)
 * and may put `return (` before its last expression. A column is given only
 * where the mapping is exact.
 */
export function writtenPosition(
	code: string,
	normalized: string,
	guarded: { code: string; inserted: readonly Inserted[] },
	at: { line: number; column: number },
): ProgramPosition | null {
	const { inserted } = guarded;
	const guardedOffset = offsetOf(guarded.code, at);
	if (guardedOffset === null) return null;
	const inNormalized = sourceOffset(guardedOffset, inserted);
	const source = sourceOf(code);
	const start = code.indexOf(source);
	if (start < 0) return null;
	let inSource: number | null;
	let exact = true;
	if (normalized === source) inSource = inNormalized;
	else if (normalized.startsWith(BODY_OPENING)) {
		const body = normalized.slice(BODY_OPENING.length);
		const q = inNormalized - BODY_OPENING.length;
		const common = commonPrefix(body, source);
		if (q < common) inSource = q;
		else if (body.startsWith(RETURNED, common)) inSource = Math.max(common, q - RETURNED.length);
		else {
			inSource = Math.min(q, source.length);
			exact = false;
		}
	} else inSource = null;
	if (inSource === null || inSource < 0) return null;
	const before = code.slice(0, start + inSource);
	const line = before.split("\n").length;
	return exact ? { line, column: before.length - before.lastIndexOf("\n") } : { line };
}

/** The program as `normalizeCode` reads it: trimmed, without the Markdown fence a model may wrap it in. */
function sourceOf(code: string): string {
	const trimmed = code.trim();
	const fenced = trimmed.match(/^```(?:js|javascript|typescript|ts|tsx|jsx)?\s*\n([\s\S]*?)```\s*$/);
	return (fenced?.[1] ?? trimmed).trim();
}

function offsetOf(text: string, at: { line: number; column: number }): number | null {
	let offset = 0;
	for (let line = 1; line < at.line; line++) {
		const next = text.indexOf("\n", offset);
		if (next < 0) return null;
		offset = next + 1;
	}
	return offset + at.column - 1;
}

function commonPrefix(a: string, b: string): number {
	let n = 0;
	while (n < a.length && n < b.length && a[n] === b[n]) n++;
	return n;
}
