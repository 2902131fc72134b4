import { phonesIn, scanDigitRuns, scanEmails } from "./contact-scanners.ts";
import type { DetectorKind, Found } from "./detector-kinds.ts";
import { cardsIn, scanIbans } from "./number-scanners.ts";
import { scanSecrets } from "./secret-scanners.ts";

/**
 * The built-in detectors over one string: each kind asked for scans once, and
 * where two matches overlap the earlier one is kept (the longer, when they
 * start together), so a card number is not also a phone number. Kinds in the
 * order they win a tie: a secret before a card before an IBAN before an
 * address before a phone number.
 */

const PRECEDENCE: Record<DetectorKind, number> = { secrets: 0, card: 1, iban: 2, email: 3, phone: 4 };

/** Every match of `kinds` in `text`, in order, none overlapping. */
export function detect(text: string, kinds: ReadonlySet<DetectorKind>): Found[] {
	const all: Found[] = [];
	if (kinds.has("secrets")) all.push(...scanSecrets(text));
	if (kinds.has("iban")) all.push(...scanIbans(text));
	if (kinds.has("email")) all.push(...scanEmails(text));
	if (kinds.has("card") || kinds.has("phone")) {
		const runs = scanDigitRuns(text);
		if (kinds.has("card")) all.push(...cardsIn(runs));
		if (kinds.has("phone")) all.push(...phonesIn(runs));
	}
	all.sort((a, b) => a.start - b.start || b.end - a.end || PRECEDENCE[a.kind] - PRECEDENCE[b.kind]);
	const kept: Found[] = [];
	let reached = 0;
	for (const found of all) {
		if (found.start < reached) continue;
		kept.push(found);
		reached = found.end;
	}
	return kept;
}

/** `text` with every match replaced by `[redacted:<kind>]`. */
export function redact(text: string, found: readonly Found[]): string {
	let out = "";
	let from = 0;
	for (const match of found) {
		out += `${text.slice(from, match.start)}[redacted:${match.kind}]`;
		from = match.end;
	}
	return out + text.slice(from);
}
