import { describe, expect, it } from "vitest";
import { memberUiUri, splitMemberUiUri, withMemberUiContents, withMemberUiMeta } from "../src/mcp/ui-uris.ts";

describe("a member's ui:// URI in an aggregate's form", () => {
	it("names the member in front of the URI's own text and splits back into the member and its URI", () => {
		for (const uri of ["ui://get-time/mcp-app.html", "ui:///root.html", "ui://a__b/c?d=e#f", "ui://x/{id}"]) {
			const form = memberUiUri("clock-a", uri);
			expect(form.startsWith("ui://clock-a__")).toBe(true);
			expect(splitMemberUiUri(form)).toEqual({ server: "clock-a", uri });
		}
	});

	it("leaves URIs of other schemes as they are, and reads no member out of them", () => {
		expect(memberUiUri("clock-a", "notes://x/1")).toBe("notes://x/1");
		expect(splitMemberUiUri("notes://clock-a__x/1")).toBeNull();
		expect(splitMemberUiUri("ui://no-member-here/x")).toBeNull();
		expect(splitMemberUiUri("ui://__x/y")).toBeNull();
	});

	it("rewrites a tool's View under both _meta keys and keeps the rest of its _meta", () => {
		const tool = {
			name: "show",
			inputSchema: { type: "object" as const },
			_meta: {
				ui: { resourceUri: "ui://v/app.html", visibility: ["model", "app"] },
				"ui/resourceUri": "ui://v/app.html",
				other: 1,
			},
		};
		expect(withMemberUiMeta("m", tool)._meta).toEqual({
			ui: { resourceUri: "ui://m__v/app.html", visibility: ["model", "app"] },
			"ui/resourceUri": "ui://m__v/app.html",
			other: 1,
		});
	});

	it("rewrites the uri of a read's ui:// contents and keeps each content's _meta", () => {
		const meta = { ui: { csp: { connectDomains: ["https://a.example"] }, prefersBorder: true } };
		expect(
			withMemberUiContents("m", {
				contents: [
					{ uri: "ui://v/app.html", text: "<p>", _meta: meta },
					{ uri: "notes://n", text: "n" },
				],
			}),
		).toEqual({
			contents: [
				{ uri: "ui://m__v/app.html", text: "<p>", _meta: meta },
				{ uri: "notes://n", text: "n" },
			],
		});
	});
});
