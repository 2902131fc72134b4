import { describe, expect, it } from "vitest";
import { normalizeUri, unnormalizableUri } from "../src/mcp/uri-normalize.ts";
import { MAX_URI_LENGTH } from "../src/mcp/uri-template-match.ts";

/** The normal form, failing the test when there is none. */
function normal(value: string, form: "uri" | "template" | "glob" = "uri"): string {
	const result = normalizeUri(value, form);
	if (!("normal" in result)) throw new Error(`${value} did not normalise: ${result.refused}`);
	return result.normal;
}

function refusal(value: string, form: "uri" | "template" | "glob" = "uri"): string | undefined {
	const result = normalizeUri(value, form);
	return "refused" in result ? result.refused : undefined;
}

describe("RFC 3986 §6.2.2 syntax-based normalisation", () => {
	it("the two URIs §6.2.2 calls equivalent have one normal form", () => {
		expect(normal("example://a/b/c/%7Bfoo%7D")).toBe("example://a/b/c/%7Bfoo%7D");
		expect(normal("eXAMPLE://a/./b/../b/%63/%7bfoo%7d")).toBe("example://a/b/c/%7Bfoo%7D");
	});

	it("lower-cases the scheme and the host, not the path, query or fragment (§6.2.2.1)", () => {
		expect(normal("HTTP://www.EXAMPLE.com/")).toBe("http://www.example.com/");
		expect(normal("DEMO://Demo/ReadMe?Q=A#F")).toBe("demo://demo/ReadMe?Q=A#F");
		expect(normal("demo://User@HOST/x")).toBe("demo://User@host/x");
		expect(normal("http://[2001:DB8::7]/c")).toBe("http://[2001:db8::7]/c");
	});

	it("upper-cases the hex digits of percent-encodings that stay (§6.2.2.1)", () => {
		expect(normal("demo://x/a%3ab%2f")).toBe("demo://x/a%3Ab%2F");
		expect(normal("demo://x/?q=%e2%82%ac")).toBe("demo://x/?q=%E2%82%AC");
	});

	it("decodes percent-encoded unreserved characters, and only those (§6.2.2.2)", () => {
		expect(normal("demo://x/%41%5a%61%7a%30%39%2D%2E%5F%7E")).toBe("demo://x/AZaz09-._~");
		expect(normal("demo://%64%65%6D%6F/r")).toBe("demo://demo/r");
		// Reserved characters keep their encoding: %2F is not "/".
		expect(normal("demo://x/a%2Fb%3F%23%25")).toBe("demo://x/a%2Fb%3F%23%25");
	});

	it("removes dot segments from the path (§6.2.2.3), encoded dots included", () => {
		expect(normal("demo://demo/x/../readme")).toBe("demo://demo/readme");
		expect(normal("demo://demo/./readme")).toBe("demo://demo/readme");
		expect(normal("demo://demo/a/../notes/1")).toBe("demo://demo/notes/1");
		expect(normal("demo://demo/x/%2e%2E/readme")).toBe("demo://demo/readme");
		expect(normal("demo://demo/../../readme")).toBe("demo://demo/readme");
		// Dots that are not whole segments stay.
		expect(normal("demo://demo/.x/x./...")).toBe("demo://demo/.x/x./...");
	});

	it("is what §5.2.4's examples of remove_dot_segments give", () => {
		expect(normal("demo:/a/b/c/./../../g")).toBe("demo:/a/g");
		expect(normal("demo:mid/content=5/../6")).toBe("demo:mid/6");
	});

	it("leaves a URI that is already in normal form as it is", () => {
		for (const uri of ["demo://beta/readme", "file:///tmp/a.txt", "urn:isbn:0451450523", "mailto:a@example.com"]) {
			expect(normal(uri)).toBe(uri);
		}
	});
});

describe("RFC 3986 §5.4: the reference resolution examples, as the merged URIs they come to", () => {
	// Base "http://a/b/c/d;p?q": each relative reference of §5.4.1 and §5.4.2 merged with the base path
	// (§5.2.3) before dot segments are removed, and the target URI the RFC gives for it.
	const merged: Array<[reference: string, merged: string, target: string]> = [
		["./g", "http://a/b/c/./g", "http://a/b/c/g"],
		["g/", "http://a/b/c/g/", "http://a/b/c/g/"],
		[".", "http://a/b/c/.", "http://a/b/c/"],
		["./", "http://a/b/c/./", "http://a/b/c/"],
		["..", "http://a/b/c/..", "http://a/b/"],
		["../", "http://a/b/c/../", "http://a/b/"],
		["../g", "http://a/b/c/../g", "http://a/b/g"],
		["../..", "http://a/b/c/../..", "http://a/"],
		["../../", "http://a/b/c/../../", "http://a/"],
		["../../g", "http://a/b/c/../../g", "http://a/g"],
		["../../../g", "http://a/b/c/../../../g", "http://a/g"],
		["../../../../g", "http://a/b/c/../../../../g", "http://a/g"],
		["/./g", "http://a/./g", "http://a/g"],
		["/../g", "http://a/../g", "http://a/g"],
		["g.", "http://a/b/c/g.", "http://a/b/c/g."],
		[".g", "http://a/b/c/.g", "http://a/b/c/.g"],
		["g..", "http://a/b/c/g..", "http://a/b/c/g.."],
		["..g", "http://a/b/c/..g", "http://a/b/c/..g"],
		["./../g", "http://a/b/c/./../g", "http://a/b/g"],
		["./g/.", "http://a/b/c/./g/.", "http://a/b/c/g/"],
		["g/./h", "http://a/b/c/g/./h", "http://a/b/c/g/h"],
		["g/../h", "http://a/b/c/g/../h", "http://a/b/c/h"],
		["g;x=1/./y", "http://a/b/c/g;x=1/./y", "http://a/b/c/g;x=1/y"],
		["g;x=1/../y", "http://a/b/c/g;x=1/../y", "http://a/b/c/y"],
		["g?y/./x", "http://a/b/c/g?y/./x", "http://a/b/c/g?y/./x"],
		["g?y/../x", "http://a/b/c/g?y/../x", "http://a/b/c/g?y/../x"],
		["g#s/./x", "http://a/b/c/g#s/./x", "http://a/b/c/g#s/./x"],
		["g#s/../x", "http://a/b/c/g#s/../x", "http://a/b/c/g#s/../x"],
	];
	it.each(merged)("%s → %s normalises to %s", (_reference, uri, target) => {
		expect(normal(uri)).toBe(target);
	});
});

describe("RFC 3986 §6.2.3 scheme-based normalisation, where it is safe", () => {
	it("http URIs with an empty path, an empty port or the default port are the same URI", () => {
		for (const uri of ["http://example.com", "http://example.com/", "http://example.com:/", "http://example.com:80/"]) {
			expect(normal(uri)).toBe("http://example.com/");
		}
		expect(normal("https://example.com:443")).toBe("https://example.com/");
		expect(normal("https://example.com:0443/x")).toBe("https://example.com/x");
		expect(normal("https://example.com:8443/x")).toBe("https://example.com:8443/x");
	});

	it("any scheme loses an empty port, but keeps its ports and its empty path", () => {
		expect(normal("demo://demo:/readme")).toBe("demo://demo/readme");
		expect(normal("demo://demo:80/readme")).toBe("demo://demo:80/readme");
		expect(normal("demo://demo")).toBe("demo://demo");
	});
});

describe("characters outside RFC 3986", () => {
	it("are percent-encoded as UTF-8, as an IRI maps to a URI", () => {
		expect(normal("demo://x/a b")).toBe("demo://x/a%20b");
		expect(normal("demo://x/é")).toBe("demo://x/%C3%A9");
		expect(normal("demo://x/😀")).toBe("demo://x/%F0%9F%98%80");
		expect(normal("demo://x/{id}|^")).toBe("demo://x/%7Bid%7D%7C%5E");
	});
});

describe("what cannot be normalised is refused, with the reason", () => {
	const NO_SCHEME = 'has no scheme (such as "https:" or "file:"), so it is not an absolute URI';
	const BAD_PERCENT = 'has a "%" that is not followed by two hexadecimal digits';
	it.each([
		["no scheme, a path that looks like one", "demo//x/readme", NO_SCHEME],
		["no scheme, a network-path reference", "//demo/readme", NO_SCHEME],
		["no scheme, a bare name", "readme", NO_SCHEME],
		["nothing at all", "", NO_SCHEME],
		["a scheme that starts with a digit", "1demo://x", NO_SCHEME],
		["a scheme with a percent-encoded letter", "de%6Do://x", NO_SCHEME],
		["a % without hex digits", "demo://x/%zz", BAD_PERCENT],
		["a % with one hex digit", "demo://x/%4", BAD_PERCENT],
		["a NUL", "demo://x/a\u0000b", "contains a control character"],
		["a line feed", "demo://x/a\nb", "contains a control character"],
		["a DEL", "demo://x/a\u007fb", "contains a control character"],
		["a backslash", "file:///pub\\..\\secret", 'contains a backslash, which some servers read as "/"'],
		["a lone surrogate", "demo://x/\ud800", "contains a lone UTF-16 surrogate"],
		["non-ASCII in the host", "demo://bücher/x", "has non-ASCII characters in its host"],
		[
			"one character over the bound",
			`demo://x/${"a".repeat(MAX_URI_LENGTH - 8)}`,
			`is longer than ${MAX_URI_LENGTH} characters`,
		],
	])("%s", (_what, uri, reason) => {
		expect(refusal(uri)).toBe(reason);
	});

	it("a URI of exactly the bound's length is normalised", () => {
		const uri = `demo://x/${"a".repeat(MAX_URI_LENGTH - 9)}`;
		expect(normal(uri)).toBe(uri);
	});

	it("the refusal is -32602 with a sentence that names the URI and the reason", () => {
		const error = unnormalizableUri("demo//x", "has no scheme");
		expect(error.toJsonRpcError()).toMatchObject({
			code: -32602,
			message:
				'Invalid params: the resource URI "demo//x" has no scheme; the gateway cannot compare it with the resources this endpoint offers.',
		});
	});

	it("a long URI is shown shortened in the sentence", () => {
		const message = unnormalizableUri(`demo://x/${"a".repeat(5_000)}`, "is too long").message;
		expect(message.length).toBeLessThan(400);
	});
});

describe("templates and globs: their expressions and wildcards are kept as written", () => {
	it("a template's expressions stay, its literal parts are normalised", () => {
		expect(normal("DEMO://Beta/x/../notes/{id}", "template")).toBe("demo://beta/notes/{id}");
		expect(normal("file:///{+path}", "template")).toBe("file:///{+path}");
		expect(normal("demo://x/search{?q,lang}", "template")).toBe("demo://x/search{?q,lang}");
		// A template's expression is never a dot segment.
		expect(normal("demo://x/{a}/../b", "template")).toBe("demo://x/b");
		expect(refusal("demo://x/{id", "template")).toBe('has a "{" that no "}" closes');
	});

	it("a template without expressions normalises as the URI it is", () => {
		expect(normal("DEMO://beta/a/../readme", "template")).toBe(normal("DEMO://beta/a/../readme"));
	});

	it("a glob's wildcards stay, its literal parts are normalised", () => {
		expect(normal("DEMO://Demo/a/../notes/*", "glob")).toBe("demo://demo/notes/*");
		expect(normal("demo://demo/%6eotes/?", "glob")).toBe("demo://demo/notes/?");
		expect(normal("*://BETA/readme", "glob")).toBe("*://beta/readme");
		expect(normal("demo://beta/notes/{id}", "glob")).toBe("demo://beta/notes/{id}");
	});

	it("a glob without a scheme (`*/readme`) is normalised as to percent-encoding only", () => {
		expect(normal("*/readme", "glob")).toBe("*/readme");
		expect(normal("*/%72eadme", "glob")).toBe("*/readme");
	});

	it("a glob's `%` must be followed by two hex digits, not a wildcard", () => {
		expect(refusal("demo://x/%*", "glob")).toBe('has a "%" that is not followed by two hexadecimal digits');
	});
});
