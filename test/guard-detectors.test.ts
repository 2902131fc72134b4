import { describe, expect, it } from "vitest";
import { maxMatchLength, needsItsEnd } from "../scripts/secret-rules/match-length.ts";
import type { DetectorKind } from "../src/governance/guards/detector-kinds.ts";
import { detect, redact } from "../src/governance/guards/detectors.ts";
import { KeywordAutomaton } from "../src/governance/guards/keyword-automaton.ts";
import { luhnValid, mod97 } from "../src/governance/guards/number-scanners.ts";
import { SECRET_RULES } from "../src/governance/guards/secret-rules.generated.ts";
import { RULE_BUDGET } from "../src/governance/guards/secret-scanners.ts";

/** Made-up tokens in their issuers' formats (gitleaks' rules allow the documented examples such as `AKIAIOSFODNN7EXAMPLE`). */
const AWS_KEY = "AKIAZ52QW7XJ4RTGMN3H";
const GITHUB_TOKEN = "ghp_ZvQ7k2Lm9XpR4tYw8NcB3sFh6JdA1uEo5GiK";
const SLACK_TOKEN = "xoxb-1234567890123-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx";
const STRIPE_KEY = "sk_live_4eC39HqLyjWDarjtT1zdp7dc";
const PRIVATE_KEY = [
	"-----BEGIN RSA PRIVATE KEY-----",
	"MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0",
	"-----END RSA PRIVATE KEY-----",
].join("\n");

const ALL = new Set<DetectorKind>(["secrets", "card", "iban", "email", "phone"]);

function redacted(text: string, kinds: ReadonlySet<DetectorKind> = ALL): string {
	return redact(text, detect(text, kinds));
}

/** A generous bound for "well under a second" on a shared, loaded machine: a backtracking pattern takes minutes here. */
const LINEAR_BOUND_MS = 1_000;

describe("built-in detectors", () => {
	it("find an AWS access key id, GitHub, Slack and Stripe tokens and a private key block, and nothing like them", () => {
		const text = `aws ${AWS_KEY} gh ${GITHUB_TOKEN} slack ${SLACK_TOKEN} stripe ${STRIPE_KEY} ${PRIVATE_KEY} done`;
		expect(redacted(text, new Set(["secrets"]))).toBe(
			"aws [redacted:secrets] gh [redacted:secrets] slack [redacted:secrets] stripe [redacted:secrets] [redacted:secrets] done",
		);
		// Too short, inside a word, or the wrong alphabet: left alone.
		const lookalikes = `${AWS_KEY.slice(0, -1)} x${AWS_KEY} ${AWS_KEY.toLowerCase()} ghp_short`;
		expect(redacted(lookalikes, new Set(["secrets"]))).toBe(lookalikes);
	});

	it("find a private key block longer than a keyword's first window whole", () => {
		const body = Array.from({ length: 50 }, (_, line) =>
			`${line}`.padEnd(64, "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgO"),
		).join("\n");
		const block = `-----BEGIN OPENSSH PRIVATE KEY-----\n${body}\n-----END OPENSSH PRIVATE KEY-----`;
		expect(block.length).toBeGreaterThan(3000);
		expect(redacted(`key file:\n${block}\nend`, new Set(["secrets"]))).toBe("key file:\n[redacted:secrets]\nend");
	});

	it("redact the secret of an assignment and keep the name and quotes around it", () => {
		expect(redacted('config: api_key = "Zx9Qw3Er7Ty1Ui5Op2As"; next', new Set(["secrets"]))).toBe(
			'config: api_key = "[redacted:secrets]"; next',
		);
	});

	it("find secrets whatever the case of the keyword that lets a rule run", () => {
		expect(redacted('API_KEY = "Zx9Qw3Er7Ty1Ui5Op2As"', new Set(["secrets"]))).toBe('API_KEY = "[redacted:secrets]"');
	});

	it("leave what gitleaks' allowlists and entropy thresholds allow: AWS's example key, a placeholder, a repetitive token", () => {
		const allowed = `AKIAIOSFODNN7EXAMPLE api_key = "\${API_KEY}" ghp_${"ab".repeat(18)}`;
		expect(redacted(allowed, new Set(["secrets"]))).toBe(allowed);
	});

	it("read a 64 KiB JSON result dense with keywords whole: each record's key and token found, nothing reported unread", () => {
		const records = Array.from({ length: 400 }, (_, id) => ({
			id,
			api_key: `Zx9Qw3Er7Ty1Ui5Op2As${id}`,
			token: GITHUB_TOKEN,
		}));
		const text = JSON.stringify(records);
		expect(text.length).toBeGreaterThan(RULE_BUDGET / 2);
		expect(text.length).toBeLessThan(RULE_BUDGET);
		const found = detect(text, new Set(["secrets"]));
		expect(found.map((match) => text.slice(match.start, match.end))).toEqual(
			records.flatMap((record) => [record.api_key, GITHUB_TOKEN]),
		);
	});

	it("apply gitleaks' allowlists to the secret (stopwords), the match and the match's line, and only there", () => {
		const secrets = new Set<DetectorKind>(["secrets"]);
		// A stopword in the secret; a name the match allowlist knows (a public key); a Dockerfile's secret mount on its line.
		const allowed = [
			'api_key = "Zx9Qw3Er7Tyadmin1Ui5"',
			'public_key = "Zx9Qw3Er7Ty1Ui5Op2As"',
			'RUN --mount=type=secret,id=api_key = "Zx9Qw3Er7Ty1Ui5Op2As"',
		];
		for (const text of allowed) expect(redacted(text, secrets)).toBe(text);
		// The same secret on the line after the mount is not allowed.
		expect(redacted('RUN --mount=type=secret,id=x\napi_key = "Zx9Qw3Er7Ty1Ui5Op2As"', secrets)).toBe(
			'RUN --mount=type=secret,id=x\napi_key = "[redacted:secrets]"',
		);
	});

	it("redact at the right place in text with characters outside the Basic Multilingual Plane", () => {
		const text = `🔑😀 ${AWS_KEY} é 𝒜 api_key = "Zx9Qw3Er7Ty1Ui5Op2As" 😀`;
		expect(redacted(text, new Set(["secrets"]))).toBe('🔑😀 [redacted:secrets] é 𝒜 api_key = "[redacted:secrets]" 😀');
	});

	it("report the rest of a string a rule cannot read within its budget as a secret, unread", () => {
		const padding = "key=".repeat(RULE_BUDGET / 2);
		const found = detect(`${padding} ${AWS_KEY}`, new Set(["secrets"]));
		const last = found.at(-1);
		expect(last?.kind).toBe("secrets");
		expect(last?.end).toBe(padding.length + 1 + AWS_KEY.length);
		expect(last?.start).toBeLessThan(padding.length);
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

describe("the rule set's generated reading of match lengths", () => {
	it("bounds a match by its repetitions' upper bounds and longest alternatives, and calls a repetition without one unbounded", () => {
		expect(maxMatchLength("\\b((?:A3T[A-Z0-9]|AKIA|ASIA)[A-Z2-7]{16})\\b")).toBe(20);
		expect(maxMatchLength("(?i)x{0,50}?(?:ab|c)[ \\t]{0,3}(?:=|\\\\[nr]|$)")).toBe(50 + 2 + 3 + 2);
		expect(maxMatchLength("ghp_[0-9a-zA-Z]{36}")).toBe(40);
		expect(maxMatchLength("a{3,}")).toBeUndefined();
		expect(maxMatchLength("xoxb-[0-9]+")).toBeUndefined();
		expect(maxMatchLength("[a-z+*]{2}")).toBe(2);
	});

	it("names the rules a cut-short match escapes, and the generated rules carry it", () => {
		expect(needsItsEnd("-----BEGIN[ A-Z]{0,9}-----[\\s\\S-]{64,}?KEY-----")).toBe(true);
		expect(needsItsEnd("ey[a-z]{17,}(?:\\s|$)")).toBe(false);
		expect(needsItsEnd("xoxb-[0-9]+")).toBe(false);
		expect(SECRET_RULES.find((rule) => rule.id === "private-key")?.needsItsEnd).toBe(true);
		expect(SECRET_RULES.find((rule) => rule.id === "aws-access-token")?.maxLength).toBe(20);
	});
});

describe("the keyword prefilter", () => {
	it("finds every occurrence of every keyword, overlapping ones too, ignoring ASCII case", () => {
		const KEYWORDS = ["he", "she", "hers", "his"];
		const seen: string[] = [];
		new KeywordAutomaton(KEYWORDS).occurrences("uSHErs his", (index, start, end) =>
			seen.push(`${KEYWORDS[index]}@${start}-${end}`),
		);
		expect(seen).toEqual(["she@1-4", "he@2-4", "hers@2-6", "his@7-10"]);
	});
});

/** `length` characters of every rule's keywords one after another, each followed by `=`, again and again. */
function everyKeyword(length: number): string {
	const round = `${[...new Set(SECRET_RULES.flatMap((rule) => rule.keywords))].join("= ")}= `;
	return round.repeat(Math.ceil(length / round.length)).slice(0, length);
}

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
		["GitHub prefixes without spaces", "ghp_".repeat(MB / 4)],
		["secret assignments", "aws_secret=".repeat(MB / 11)],
		["key assignments", "key=".repeat(MB / 4)],
		["every rule's keywords", everyKeyword(MB)],
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
