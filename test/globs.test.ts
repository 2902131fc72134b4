import { describe, expect, it } from "vitest";
import { chosen, globMatches } from "../src/governance/globs.ts";
import { seededRandom } from "./support/seeded-random.ts";

/** What a glob meant when it was a RegExp (`*` → `.*`, `?` → `.`), `s` so that both match any character. */
function byRegExp(glob: string, value: string): boolean {
	const source = glob
		.replace(/[.+^${}()|[\]\\]/g, "\\$&")
		.replace(/\*/g, ".*")
		.replace(/\?/g, ".");
	return new RegExp(`^${source}$`, "s").test(value);
}

describe("globs", () => {
	it("match * as any run (/ and the empty run included), ? as one character, anything else as itself", () => {
		const cases: Array<[string, string, boolean]> = [
			["github__*", "github__create_issue", true],
			["github__*", "github__", true],
			["github__*", "gitlab__create_issue", false],
			["*__get_?ssue", "tracker__get_issue", true],
			["*__get_?ssue", "tracker__get_ssue", false],
			["files/*", "files/a/b/c.txt", true],
			["*.md", "notes.md", true],
			["*.md", "notesxmd", false],
			["a*b*c", "abc", true],
			["a*b*c", "acb", false],
			["a*a", "a", false],
			["?", "", false],
			["", "", true],
			["*", "", true],
			["exact", "exact", true],
			["exact", "exact!", false],
			["(x)+[y]", "(x)+[y]", true],
		];
		for (const [glob, value, matches] of cases)
			expect([glob, value, globMatches(glob, value)]).toEqual([glob, value, matches]);
	});

	it("agree with the RegExp they used to be compiled to, on every glob and name of a small alphabet", () => {
		const next = seededRandom(11);
		const random = (n: number) => Math.floor(next() * n);
		const text = (alphabet: string, length: number) =>
			Array.from({ length }, () => alphabet[random(alphabet.length)]).join("");
		for (let i = 0; i < 5_000; i++) {
			const glob = text("ab*?/", random(8));
			const value = text("ab/", random(10));
			expect([glob, value, globMatches(glob, value)]).toEqual([glob, value, byRegExp(glob, value)]);
		}
	});

	it("answer at once for the costliest glob the schemas admit against a long name that almost matches", () => {
		// 128 characters (a tool glob's limit) and 1024 (a URI glob's), star after star, and a name of
		// 16k characters that matches every piece but the last: as a RegExp, four stars against a
		// hundred characters took seconds.
		const toolGlob = `${"*a".repeat(63)}*b`;
		const uriGlob = `${"*a?".repeat(340)}*b`;
		const questions = `*${"a?".repeat(511)}b`;
		const name = "a".repeat(16_384);
		const started = performance.now();
		expect(globMatches(toolGlob, name)).toBe(false);
		expect(globMatches(uriGlob, name)).toBe(false);
		expect(globMatches(questions, name)).toBe(false);
		expect(globMatches(toolGlob, `${name}b`)).toBe(true);
		expect(chosen({ include: ["*"], exclude: [toolGlob, uriGlob, questions] }, name)).toBe(true);
		// A generous bound: it takes a few milliseconds.
		expect(performance.now() - started).toBeLessThan(1000);
	});
});
