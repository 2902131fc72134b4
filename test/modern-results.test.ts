import { describe, expect, it } from "vitest";
import { modernReply } from "../src/mcp/2026-07-28/modern-results.ts";

describe("2025 replies made 2026-07-28", () => {
	it("a result gains resultType, and a cacheable one ttlMs 0 and cacheScope private", () => {
		expect(modernReply("tools/list", { jsonrpc: "2.0", id: 1, result: { tools: [] } })).toEqual({
			jsonrpc: "2.0",
			id: 1,
			result: { resultType: "complete", tools: [], ttlMs: 0, cacheScope: "private" },
		});
		expect(modernReply("tools/call", { jsonrpc: "2.0", id: 2, result: { content: [] } })).toEqual({
			jsonrpc: "2.0",
			id: 2,
			result: { resultType: "complete", content: [] },
		});
	});

	it("2025's resource-not-found (-32002) becomes -32602 with the URI in data; other errors keep their code", () => {
		const unknown = { jsonrpc: "2.0" as const, id: 3, error: { code: -32002, message: "Resource not found" } };
		expect(modernReply("resources/read", unknown, { uri: "file:///nope" })).toEqual({
			jsonrpc: "2.0",
			id: 3,
			error: { code: -32602, message: "Resource not found", data: { uri: "file:///nope" } },
		});
		const other = { jsonrpc: "2.0" as const, id: 4, error: { code: -32601, message: "Method not found" } };
		expect(modernReply("prompts/get", other)).toEqual(other);
	});
});
