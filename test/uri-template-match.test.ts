import { UriTemplate } from "@modelcontextprotocol/sdk/shared/uriTemplate.js";
import { describe, expect, it } from "vitest";
import {
	compileUriTemplate,
	MAX_TEMPLATE_EXPRESSIONS,
	MAX_TEMPLATE_LENGTH,
	MAX_URI_LENGTH,
} from "../src/mcp/uri-template-match.ts";

/** The reference behaviour: whether the SDK's backtracking RegExp accepts the URI. */
function sdkMatches(template: string, uri: string): boolean {
	return new UriTemplate(template).match(uri) !== null;
}

function compiled(template: string) {
	const result = compileUriTemplate(template);
	if (result === null) throw new Error(`template did not compile: ${template}`);
	return result;
}

/** Each template with URIs it should accept and URIs it should refuse, as the SDK does. */
const table: { template: string; accept: string[]; refuse: string[] }[] = [
	{
		template: "demo://x/notes/{id}",
		accept: ["demo://x/notes/1", "demo://x/notes/a b", "demo://x/notes/é?x=1"],
		refuse: ["demo://x/notes/", "demo://x/notes/1/2", "demo://x/notes/1,2", "demo://x/note/1", "demo://x/notes"],
	},
	{
		template: "file:///{+path}",
		accept: ["file:///a", "file:///a/b/c.txt", "file:///a,b", "file:////"],
		refuse: ["file:///", "file://a", "file:///a\nb", "file:///a\u2028"],
	},
	{
		template: "{+u}",
		accept: ["x", "https://example.com/a?b=c#d", "\t"],
		refuse: ["", "a\rb", "\n"],
	},
	{
		template: "frag{#f}",
		accept: ["fragx", "frag#x", "frag/a,b"],
		refuse: ["frag", "frag\n"],
	},
	{
		template: "api{?q,lang}",
		accept: ["api?q=1&lang=en", "api?q=a/b?c=d&lang=x=y", "api?q=1&lang=en/fr"],
		refuse: ["api?q=1", "api?lang=en&q=1", "api?q=&lang=en", "api?q=1&lang=", "api?q=1&lang=en&x=2", "api&q=1&lang=en"],
	},
	{
		template: "api?q={q}{&page}",
		accept: ["api?q=a&page=2"],
		refuse: ["api?q=a", "api?q=a?page=2", "api?q=a&page=2&x"],
	},
	{
		template: "x{/seg*}",
		accept: ["x/a", "x/a,b", "x/a,b,c"],
		refuse: ["x", "x/", "x/a/b", "x/a,", "x/,a", "x/a,,b"],
	},
	{
		template: "x{/seg}",
		accept: ["x/a"],
		refuse: ["x/a,b", "x/a/b", "x/"],
	},
	{
		template: "list:{items*}",
		accept: ["list:a", "list:a,b", "list:a b,c"],
		refuse: ["list:", "list:a,", "list:,", "list:a/b"],
	},
	{
		template: "{a}.{b}",
		accept: ["x.y", "x.y.z", "a..b"],
		refuse: ["x.", ".y", "x/y.z", "x,y.z", "xy"],
	},
	{
		template: "host{.dom*}",
		accept: ["host.a", "host.a.b"],
		refuse: ["host.a,b", "host.", "host"],
	},
	{
		template: "pair/{a,b}",
		accept: ["pair/x"],
		refuse: ["pair/x,y", "pair/"],
	},
	{
		template: "odd/{;x}",
		accept: ["odd/v"],
		refuse: ["odd/;x=v/w"],
	},
	{
		template: "re.gex+(lit)[x]*$^|\\}/{id}",
		accept: ["re.gex+(lit)[x]*$^|\\}/1"],
		refuse: ["reXgex+(lit)[x]*$^|\\}/1", "re.gexx(lit)[x]*$^|\\}/1"],
	},
	{
		template: "",
		accept: [""],
		refuse: ["a"],
	},
];

describe("compileUriTemplate matches exactly the URIs the SDK's UriTemplate.match accepts", () => {
	for (const { template, accept, refuse } of table) {
		it(`${JSON.stringify(template)} accepts and refuses like the SDK`, () => {
			const t = compiled(template);
			for (const uri of accept) {
				expect({ uri, sdk: sdkMatches(template, uri) }).toEqual({ uri, sdk: true });
				expect({ uri, ours: t.matches(uri) }).toEqual({ uri, ours: true });
			}
			for (const uri of refuse) {
				expect({ uri, sdk: sdkMatches(template, uri) }).toEqual({ uri, sdk: false });
				expect({ uri, ours: t.matches(uri) }).toEqual({ uri, ours: false });
			}
		});
	}

	it("agrees with the SDK on pseudo-random short URIs built from separators and query fragments", () => {
		// Short URIs and few expressions keep the SDK's backtracking RegExp fast enough to use as the oracle.
		const templates = [
			"{a}",
			"{a*}",
			"{+a}",
			"{#a}",
			"{.a}",
			"{/a}",
			"{/a*}",
			"{?a}",
			"{&a,b}",
			"{a}{b}",
			"{a*}{b}",
			"{a*},{b*}",
			"{+a}/{b}",
			"{a}.{+b}",
			"x{/a*}{/b}",
			"{?a,b}",
		];
		// Separators plus whole query fragments, so that every template sees both matches and misses.
		const alphabet = ["x", "/", ",", ".", "&", "?", "=", "#", "\n", "?a=", "&a=", "&b=", "x/", "?a=x", "&b=x"];
		let seed = 12345;
		const next = (bound: number): number => {
			seed = (seed * 1103515245 + 12345) % 2147483648;
			return seed % bound;
		};
		for (const template of templates) {
			const t = compiled(template);
			for (let n = 0; n < 1000; n++) {
				let uri = "";
				const length = next(7);
				for (let k = 0; k < length; k++) uri += alphabet[next(alphabet.length)];
				expect({ template, uri, matches: t.matches(uri) }).toEqual({
					template,
					uri,
					matches: sdkMatches(template, uri),
				});
			}
		}
	});
});

describe("literalLength counts literal characters outside expressions", () => {
	it("is 0 for the catch-all {+u}", () => {
		expect(compiled("{+u}").literalLength).toBe(0);
	});

	it("counts the text around expressions but not their names or operators", () => {
		expect(compiled("demo://x/notes/{id}").literalLength).toBe("demo://x/notes/".length);
		expect(compiled("file:///{+path}").literalLength).toBe("file:///".length);
		expect(compiled("api{?q,lang}").literalLength).toBe(3);
		expect(compiled("{a}.{b}").literalLength).toBe(1);
		expect(compiled("a}b{c}").literalLength).toBe(3);
	});

	it("keeps the template text as given", () => {
		expect(compiled("x{/seg*}").template).toBe("x{/seg*}");
	});
});

describe("compileUriTemplate refuses malformed or oversized templates", () => {
	it("returns null for an unclosed expression", () => {
		expect(compileUriTemplate("demo://{id")).toBeNull();
		expect(compileUriTemplate("{a}{")).toBeNull();
	});

	it("returns null for an expression without a name", () => {
		for (const template of ["{}", "x/{}", "{+}", "{?}", "{ , }", "{*}"]) {
			expect({ template, compiled: compileUriTemplate(template) }).toEqual({ template, compiled: null });
		}
	});

	it("accepts a stray closing brace as literal text, like the SDK", () => {
		const t = compiled("a}{b}");
		expect(t.matches("a}x")).toBe(true);
		expect(sdkMatches("a}{b}", "a}x")).toBe(true);
	});

	it("returns null for a template longer than MAX_TEMPLATE_LENGTH", () => {
		expect(compileUriTemplate("a".repeat(MAX_TEMPLATE_LENGTH))).not.toBeNull();
		expect(compileUriTemplate("a".repeat(MAX_TEMPLATE_LENGTH + 1))).toBeNull();
	});

	it("returns null for more than MAX_TEMPLATE_EXPRESSIONS expressions", () => {
		expect(compileUriTemplate("{a}".repeat(MAX_TEMPLATE_EXPRESSIONS))).not.toBeNull();
		expect(compileUriTemplate("{a}".repeat(MAX_TEMPLATE_EXPRESSIONS + 1))).toBeNull();
	});
});

describe("matching stays linear on hostile templates", () => {
	// Each URI fails only on its last character: a backtracking RegExp would try every
	// way to split the prefix among the expressions before giving up.
	const almost = "a".repeat(15_999);

	it("refuses a 16,000-character near-match against 30 adjacent simple expressions", () => {
		const names = Array.from({ length: 30 }, (_, k) => `{v${k}}`).join("");
		const t = compiled(names);
		expect(t.matches(`${almost}/`)).toBe(false);
		expect(t.matches(`${almost}b`)).toBe(true);
	});

	it("refuses a 16,000-character near-match against 30 adjacent {+x} expressions", () => {
		const t = compiled("{+x}".repeat(30));
		expect(t.matches(`${almost}\n`)).toBe(false);
		expect(t.matches(`${almost}/`)).toBe(true);
	});

	it("refuses a URI longer than MAX_URI_LENGTH even when the template would match it", () => {
		const t = compiled("{+u}");
		expect(t.matches("a".repeat(MAX_URI_LENGTH))).toBe(true);
		expect(t.matches("a".repeat(MAX_URI_LENGTH + 1))).toBe(false);
	});
});
