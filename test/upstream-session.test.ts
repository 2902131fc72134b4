import { describe, expect, it } from "vitest";
import { UpstreamSessionSchema } from "../src/session/binding.ts";

describe("a stored upstream session names its era", () => {
	it("keeps the era it was stored with", () => {
		const legacy = { era: "legacy", sessionId: "s-1", protocolVersion: "2025-11-25" };
		expect(UpstreamSessionSchema.parse(legacy)).toEqual(legacy);
	});

	it("reads a binding stored before sessions named their era: a client in it means a 2026-07-28 upstream", () => {
		const client = { info: { name: "c", version: "1" }, capabilities: {} };
		expect(UpstreamSessionSchema.parse({ sessionId: null, protocolVersion: "2026-07-28", client })).toEqual({
			era: "modern",
			sessionId: null,
			protocolVersion: "2026-07-28",
			client,
		});
		expect(UpstreamSessionSchema.parse({ sessionId: "s-2", protocolVersion: "2025-06-18" })).toEqual({
			era: "legacy",
			sessionId: "s-2",
			protocolVersion: "2025-06-18",
		});
	});

	it("refuses a modern session without the client it speaks for", () => {
		expect(
			UpstreamSessionSchema.safeParse({ era: "modern", sessionId: null, protocolVersion: "2026-07-28" }).success,
		).toBe(false);
	});
});
