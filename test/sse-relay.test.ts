import { describe, expect, it } from "vitest";
import { relaySse } from "../src/mcp/sse-relay.ts";
import { chunkedBody } from "./support/bodies.ts";

async function relay(chunks: string[], options: { fail?: boolean; max?: number } = {}) {
	let done = 0;
	const stream = relaySse(chunkedBody(chunks, options.fail), {
		requestId: 7,
		maxEventBytes: options.max ?? 1_000_000,
		onIncomplete: (error) => ({
			jsonrpc: "2.0",
			id: 7,
			error: { code: -1, message: error === null ? "ended" : "broke" },
		}),
		onOversize: () => ({ jsonrpc: "2.0", id: 7, error: { code: -2, message: "too large" } }),
		onDone: () => done++,
	});
	const text = await new Response(stream).text();
	return { text, done };
}

const progress =
	'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}\n\n';
const result = 'event: message\ndata: {"jsonrpc":"2.0","id":7,"result":{"ok":true}}\n\n';

describe("relaySse", () => {
	it("passes complete events on byte for byte, also when a blank line is split across chunks", async () => {
		const whole = progress + result;
		const split = [
			whole.slice(0, progress.length - 1),
			whole.slice(progress.length - 1, progress.length + 10),
			whole.slice(progress.length + 10),
		];
		const { text, done } = await relay(split);
		expect(text).toBe(whole);
		expect(done).toBe(1);
	});

	it("understands CRLF line endings", async () => {
		const crlf = result.replaceAll("\n", "\r\n");
		expect((await relay([crlf.slice(0, 20), crlf.slice(20)])).text).toBe(crlf);
	});

	it("ends a reply that closes before its response with the incomplete message", async () => {
		const { text } = await relay([progress]);
		expect(text).toBe(
			`${progress}event: message\ndata: {"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"ended"}}\n\n`,
		);
	});

	it("never hands on half an event when the reply breaks mid-event", async () => {
		const { text } = await relay([progress, result.slice(0, 30)], { fail: true });
		expect(text).toBe(
			`${progress}event: message\ndata: {"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"broke"}}\n\n`,
		);
	});

	it("replaces an over-size event with the oversize message", async () => {
		const big = `event: message\ndata: {"jsonrpc":"2.0","id":7,"result":{"text":"${"x".repeat(500)}"}}\n\n`;
		const { text } = await relay([progress, big.slice(0, 300), big.slice(300)], { max: 200 });
		expect(text).toBe(
			`${progress}event: message\ndata: {"jsonrpc":"2.0","id":7,"error":{"code":-2,"message":"too large"}}\n\n`,
		);
	});

	it("an event over the cap spread over many small lines and chunks still ends the reply as over-size", async () => {
		const lines = Array.from({ length: 200 }, () => "data: 0123456789\n");
		const { text } = await relay(["event: message\n", ...lines, "\n"], { max: 1_000 });
		expect(text).toContain('"too large"');
		expect(text).not.toContain("0123456789");
	});
});
