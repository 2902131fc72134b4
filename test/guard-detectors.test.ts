import { describe, expect, it } from "vitest";
import type { DetectorKind } from "../src/governance/guards/detector-kinds.ts";
import { detect, redact } from "../src/governance/guards/detectors.ts";
import { luhnValid, mod97 } from "../src/governance/guards/number-scanners.ts";

const ALL = new Set<DetectorKind>(["secrets", "card", "iban", "email", "phone"]);

function redacted(text: string, kinds: ReadonlySet<DetectorKind> = ALL): string {
	return redact(text, detect(text, kinds));
}

/** A generous bound for "well under a second" on a shared, loaded machine: a backtracking pattern takes minutes here. */
const LINEAR_BOUND_MS = 1_000;

describe("built-in detectors", () => {
	it("find an AWS access key id, GitHub and Slack tokens and a private key block, and nothing like them", () => {
		const key = ["-----BEGIN RSA PRIVATE KEY-----", "MIIEowIBAAKCAQEA", "-----END RSA PRIVATE KEY-----"].join("\n");
		const text = `aws AKIAIOSFODNN7EXAMPLE gh ghp_${"a".repeat(36)} slack xoxb-1234567890-abc ${key} done`;
		expect(redacted(text, new Set(["secrets"]))).toBe(
			"aws [redacted:secrets] gh [redacted:secrets] slack [redacted:secrets] [redacted:secrets] done",
		);
		// Too short, inside a word, or the wrong alphabet: left alone.
		const lookalikes = "AKIAIOSFODNN7EXAMPL xAKIAIOSFODNN7EXAMPLE AKIAiosfodnn7example ghp_short";
		expect(redacted(lookalikes, new Set(["secrets"]))).toBe(lookalikes);
	});

	it("find e-mail addresses but not an @ without a dotted domain", () => {
		expect(redacted("write to ada.lovelace+x@example.co.uk. or @handle, a@b, x@y.z1")).toBe(
			"write to [redacted:email]. or @handle, a@b, x@y.z1",
		);
	});

	it("take card numbers only when their Luhn digit checks, and IBANs only when mod-97 holds", () => {
		expect(luhnValid("4111111111111111")).toBe(true);
		expect(luhnValid("4111111111111112")).toBe(false);
		expect(mod97("GB82WEST12345698765432")).toBe(1);
		const text =
			"card 4111 1111 1111 1111, not 4111 1111 1111 1112; iban GB82 WEST 1234 5698 7654 32 or GB82WEST12345698765433.";
		expect(redacted(text, new Set(["card", "iban"]))).toBe(
			"card [redacted:card], not 4111 1111 1111 1112; iban [redacted:iban] or GB82WEST12345698765433.",
		);
	});

	it("find phone numbers written with separators or a '+', not bare ids or short numbers", () => {
		expect(redacted("call +44 20 7946 0958 or (555) 123-4567, order 20240917123 or 555-1234", new Set(["phone"]))).toBe(
			"call [redacted:phone] or [redacted:phone], order 20240917123 or 555-1234",
		);
	});

	it("keep the first of two overlapping matches, so a card number is not also a phone number", () => {
		expect(redacted("4111-1111-1111-111")).toBe("[redacted:phone]");
		expect(redacted("4111-1111-1111-1111")).toBe("[redacted:card]");
	});
});

describe("detectors on hostile input", () => {
	const MB = 1024 * 1024;
	const hostile: Array<[string, string]> = [
		["a@a@a@…", "a@".repeat(MB / 2)],
		["a.a.a…@a.a.a…", `${"a.".repeat(MB / 4)}@${"a.".repeat(MB / 4)}`],
		["a long run of digits", "1".repeat(MB)],
		["digits with single separators", "1 ".repeat(MB / 2)],
		["+1+1+1…", "+1".repeat(MB / 2)],
		["IBAN starts", "GB82 ".repeat(MB / 5)],
		["AWS prefixes", "AKIA".repeat(MB / 4)],
		["AWS prefixes at word starts", "AKIA ".repeat(MB / 5)],
		["GitHub prefixes", "ghp_ ".repeat(MB / 5)],
		["private key BEGINs without an END", "-----BEGIN RSA PRIVATE KEY-----".repeat(MB / 32)],
		["BEGINs far from a label", `${"-----BEGIN ".repeat(MB / 11)}PRIVATE KEY-----`],
	];
	for (const [name, text] of hostile) {
		it(`answer 1 MB of ${name} well under a second`, () => {
			const started = performance.now();
			detect(text, ALL);
			expect(performance.now() - started).toBeLessThan(LINEAR_BOUND_MS);
		});
	}
});
