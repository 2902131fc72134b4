import { describe, expect, it } from "vitest";
import { closestName, editDistance } from "../src/primitives/closest-name.ts";
import { unknownFieldsMessage } from "../src/registry/unknown-fields.ts";

const SERVER_FIELDS = ["url", "headers", "timeoutSeconds", "protocol", "auth", "pinning"];

describe("the closest known name", () => {
	it("suggests the name one edit away: demoo → demo, not demo-math", () => {
		expect(closestName("demoo", ["demo-math", "demo", "notes"])).toBe("demo");
	});

	it("suggests the longer name a mistyped one starts: timeout → timeoutSeconds", () => {
		expect(closestName("timeout", SERVER_FIELDS)).toBe("timeoutSeconds");
	});

	it("case, dashes and underscores make no difference: user_path → userPath, Max-Sessions → maxSessions", () => {
		expect(closestName("user_path", ["name", "userPath", "servers"])).toBe("userPath");
		expect(closestName("Max-Sessions", ["maxSessions", "rateClass"])).toBe("maxSessions");
	});

	it("two swapped neighbours are one edit: pinnign → pinning", () => {
		expect(editDistance("pinnign", "pinning", 3)).toBe(1);
		expect(closestName("pinnign", SERVER_FIELDS)).toBe("pinning");
	});

	it("a close edit wins over a prefix, and the earlier of equal candidates wins", () => {
		expect(closestName("serve", ["servers", "server"])).toBe("server");
		expect(closestName("demo-b", ["demo-a", "demo-c"])).toBe("demo-a");
	});

	it("suggests nothing when nothing is close, and never the name itself", () => {
		expect(closestName("colour", SERVER_FIELDS)).toBeUndefined();
		expect(closestName("ab", ["xy", "abcdef"])).toBeUndefined();
		expect(closestName("demo", ["demo"])).toBeUndefined();
		expect(closestName("", ["demo"])).toBeUndefined();
	});

	it("is bounded: no suggestion for a name over 64 characters or among more than 2,000 candidates", () => {
		const long = "a".repeat(65);
		expect(closestName(long, [`${long}b`])).toBeUndefined();
		const many = Array.from({ length: 2_001 }, (_, index) => `server-${index}`);
		expect(closestName("server-12x", many)).toBeUndefined();
		expect(closestName("server-12x", many.slice(0, 2_000))).toBe("server-12");
	});

	it("stops counting at the limit", () => {
		expect(editDistance("abcdefgh", "stuvwxyz", 2)).toBe(3);
		expect(editDistance("short", "a much longer name", 2)).toBe(3);
	});
});

describe("the words for unknown fields", () => {
	it("names the field most likely meant, or the fields there are when none is close", () => {
		expect(unknownFieldsMessage(["timeout"], SERVER_FIELDS)).toBe(
			'unknown field "timeout" (did you mean "timeoutSeconds"?)',
		);
		expect(unknownFieldsMessage(["timeout", "colour"], SERVER_FIELDS)).toBe(
			'unknown fields "timeout" (did you mean "timeoutSeconds"?), "colour"',
		);
		expect(unknownFieldsMessage(["colour"], SERVER_FIELDS)).toBe(
			'unknown field "colour"; the fields are url, headers, timeoutSeconds, protocol, auth, pinning',
		);
	});
});
