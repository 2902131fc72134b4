import { describe, expect, it } from "vitest";
import { paramHeadersOf, paramHeaderValues } from "../src/mcp/2026-07-28/param-headers.ts";

describe("x-mcp-header mirroring", () => {
	const schema = {
		type: "object",
		properties: {
			region: { type: "string", "x-mcp-header": "Region" },
			limit: { type: "integer", "x-mcp-header": "Limit" },
			dry: { type: "boolean", "x-mcp-header": "Dry-Run" },
			nested: { type: "object", properties: { tenant: { type: "string", "x-mcp-header": "Tenant" } } },
			list: { type: "array", items: { type: "object", properties: { no: { type: "string", "x-mcp-header": "No" } } } },
			bad: { type: "string", "x-mcp-header": "Bad Header" },
		},
	};

	it("finds declarations reachable through properties only, and skips names that are not header tokens", () => {
		expect(paramHeadersOf(schema).map((declaration) => declaration.header)).toEqual([
			"Region",
			"Limit",
			"Dry-Run",
			"Tenant",
		]);
	});

	it("encodes strings, integers and booleans; non-ASCII and sentinel-looking values in Base64; absent and null values give no header", () => {
		const values = paramHeaderValues(paramHeadersOf(schema), {
			region: "Hello, 世界",
			limit: 42,
			dry: false,
			nested: { tenant: "=?base64?x?=" },
		});
		expect(values).toEqual([
			["mcp-param-Region", "=?base64?SGVsbG8sIOS4lueVjA==?="],
			["mcp-param-Limit", "42"],
			["mcp-param-Dry-Run", "false"],
			["mcp-param-Tenant", "=?base64?PT9iYXNlNjQ/eD89?="],
		]);
		expect(paramHeaderValues(paramHeadersOf(schema), { region: null })).toEqual([]);
	});
});
