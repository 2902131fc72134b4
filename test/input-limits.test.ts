import { exports } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { MAX_JSON_DEPTH, nestsDeeperThan } from "../src/mcp/json-depth.ts";
import { stableJson } from "../src/mcp/stable-json.ts";
import {
	admin,
	createKey,
	gatewayFetch,
	mcpHeaders,
	openSession,
	readReply,
	rpc,
	uniqueName,
} from "./support/gateway.ts";
import { registerHostile } from "./support/hostile.ts";
import { ENVELOPE, modernRequest } from "./support/modern.ts";
import { seededRandom } from "./support/seeded-random.ts";
import { registerServer, upstreamLog } from "./support/upstreams.ts";

/**
 * Inputs whose cost grows faster than their size are bounded where they enter
 * (issue 33; docs/behaviour.md, "Input limits"). Here: how deeply JSON from a
 * client or an upstream nests. The search query, globs, policy expressions and
 * URI templates are tested with their own code.
 */

/** `levels` arrays, one inside the other, around a number. */
function nested(levels: number): string {
	return `${"[".repeat(levels)}1${"]".repeat(levels)}`;
}

/** A tools/call of echo whose body nests `levels + 3` deep: the message, params, arguments, then `deep`. */
function deepCall(id: number | string, text: string, levels: number, meta = ""): string {
	return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"method":"tools/call","params":{${meta}"name":"echo","arguments":{"text":${JSON.stringify(text)},"deep":${nested(levels)}}}}`;
}

const REFUSAL = `Invalid Request: the request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels, which the gateway does not read.`;

/** Whether any request that reached the upstream carried `text` as its `text` argument. */
async function reached(which: "beta" | "modern", text: string): Promise<boolean> {
	return (await upstreamLog(which)).some((entry) => JSON.stringify(entry.body?.params ?? {}).includes(text));
}

afterEach(() => {
	vi.restoreAllMocks();
});

describe("nesting of JSON", () => {
	it("is read from the text in one pass, brackets inside strings not counted", () => {
		expect(nestsDeeperThan('{"a":[[1]]}', 3)).toBe(false);
		expect(nestsDeeperThan('{"a":[[1]]}', 2)).toBe(true);
		expect(nestsDeeperThan(`{"a":"${"[".repeat(500)}\\"{{{"}`, 1)).toBe(false);
		expect(nestsDeeperThan(nested(1_000_000), MAX_JSON_DEPTH)).toBe(true);
	});

	it(`a client's request nested deeper than ${MAX_JSON_DEPTH} levels is refused with 400, -32600 and a sentence under its id; nothing reaches the upstream`, async () => {
		const beta = await registerServer("beta");
		const { key } = await createKey({ servers: [beta] });
		const sessionId = await openSession(`/mcp/${beta}`, key);
		const text = uniqueName("deep");
		const post = (body: string) =>
			gatewayFetch(`/mcp/${beta}`, {
				method: "POST",
				headers: mcpHeaders(key, sessionId, { "mcp-protocol-version": "2025-11-25" }),
				body,
			});
		// A million levels ended as an internal error, the gateway out of stack.
		for (const levels of [MAX_JSON_DEPTH, 1_000_000]) {
			const response = await post(deepCall(7, text, levels));
			expect(response.status).toBe(400);
			expect(await response.json()).toEqual({
				jsonrpc: "2.0",
				id: 7,
				error: { code: -32600, message: REFUSAL, data: { kind: "invalid_request" } },
			});
		}
		expect(await reached("beta", text)).toBe(false);
		// Within the limit, the call is made as any other.
		const within = await readReply(await post(deepCall(8, text, MAX_JSON_DEPTH - 3)));
		expect(within.result).toMatchObject({ content: [{ type: "text", text }] });
		// The session was not disturbed.
		const ping = await readReply(await rpc(`/mcp/${beta}`, key, sessionId, { jsonrpc: "2.0", id: 9, method: "ping" }));
		expect(ping.result).toEqual({});
	});

	it("a 2026-07-28 request nested too deeply is refused the same way, before it is forwarded", async () => {
		const modern = await registerServer("modern");
		const { key } = await createKey({ servers: [modern] });
		const text = uniqueName("deep");
		const meta = `"_meta":${JSON.stringify(ENVELOPE)},`;
		const request = modernRequest(`/mcp/${modern}`, key, { id: "m", method: "tools/call", params: { name: "echo" } });
		const post = (body: string) => exports.default.fetch(new Request(request, { body }));
		const response = await post(deepCall("m", text, 1_000, meta));
		expect(response.status).toBe(400);
		expect(await response.json()).toMatchObject({ id: "m", error: { code: -32600, message: REFUSAL } });
		expect(await reached("modern", text)).toBe(false);
	});

	it(`an aggregate leaves out a member whose tools/list nests deeper than ${MAX_JSON_DEPTH} levels, saying why in the log; a schema a few dozen levels deep is listed`, async () => {
		const warnings: string[] = [];
		vi.spyOn(console, "warn").mockImplementation((line: unknown) => {
			warnings.push(String(line));
		});
		const deep = await registerHostile("deep-schema", { depth: "1000" });
		const shallow = await registerHostile("deep-schema", { depth: "40" });
		const name = uniqueName("vs");
		expect((await admin("PUT", `/virtual-servers/${name}`, { servers: [deep.name, shallow.name] })).status).toBe(201);
		const { key } = await createKey({ servers: [name] });
		const sessionId = await openSession(`/mcp/${name}`, key);
		const reply = await readReply(
			await rpc(`/mcp/${name}`, key, sessionId, { jsonrpc: "2.0", id: 1, method: "tools/list" }),
		);
		const tools = (reply.result?.tools ?? []) as Array<{ name: string }>;
		expect(tools.map((tool) => tool.name)).toEqual([`${shallow.name}__deep`, `${shallow.name}__ok`]);
		expect(warnings).toContain(
			`member ${deep.name} left out of tools: Upstream server '${deep.name}' sent a body that is not a JSON-RPC message (or nests deeper than ${MAX_JSON_DEPTH} levels)`,
		);
	});
});

/** What stableJson was before it wrote into one list: each level's text joined from its children's. */
function stableJsonByLevels(value: unknown): string {
	if (Array.isArray(value)) return `[${value.map(stableJsonByLevels).join(",")}]`;
	if (typeof value === "object" && value !== null) {
		const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
		return `{${entries.map(([key, entry]) => `${JSON.stringify(key)}:${stableJsonByLevels(entry)}`).join(",")}}`;
	}
	return JSON.stringify(value) ?? "null";
}

describe("canonical JSON (what pinning digests)", () => {
	it("is the text it always was, byte for byte, so digests pinned before still match", () => {
		const next = seededRandom(3);
		const random = (n: number) => Math.floor(next() * n);
		const value = (depth: number): unknown => {
			const kind = depth > 5 ? random(5) : random(7);
			if (kind === 0) return random(1000) - 500;
			if (kind === 1) return ["é", 'a"b', "", "\u2028", "💡"][random(5)];
			if (kind === 2) return [true, false, null, undefined, 1.5e300][random(5)];
			if (kind === 3) return "text";
			if (kind === 4) return random(2) === 0;
			if (kind === 5) return Array.from({ length: random(4) }, () => value(depth + 1));
			return Object.fromEntries(
				Array.from({ length: random(4) }, () => [["b", "a", "é", "_", "10", "9"][random(6)], value(depth + 1)]),
			);
		};
		for (let i = 0; i < 2_000; i++) {
			const sample = value(0);
			expect(stableJson(sample)).toBe(stableJsonByLevels(sample));
		}
		const holed = new Array<unknown>(3);
		holed[0] = 1;
		holed[2] = 2;
		expect(stableJson(holed)).toBe(stableJsonByLevels(holed));
	});

	it(`writes an upstream's schema of 8 MiB nested ${MAX_JSON_DEPTH} levels deep in well under a second`, () => {
		let schema: unknown = "x".repeat(8 * 1024 * 1024);
		for (let level = 0; level < MAX_JSON_DEPTH; level++) schema = { type: "object", properties: { x: schema } };
		const started = performance.now();
		expect(stableJson(schema).length).toBeGreaterThan(8 * 1024 * 1024);
		// A generous bound: it takes a few tens of milliseconds (joined level by level, about a second).
		expect(performance.now() - started).toBeLessThan(1000);
	});
});
