import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionDO } from "../src/session/session-do.ts";
import { createKey, gatewayFetch, mcpHeaders, openSession, readReply, rpc } from "./support/gateway.ts";
import { sessionObject } from "./support/session-object.ts";
import { registerServer, upstreamLog } from "./support/upstreams.ts";

/** Reads SSE events from a client GET stream as they arrive. */
function eventReader(body: ReadableStream<Uint8Array>) {
	const reader = body.pipeThrough(new TextDecoderStream()).getReader();
	let buffer = "";
	return {
		async next(): Promise<{ method?: string }> {
			for (;;) {
				const end = buffer.indexOf("\n\n");
				if (end >= 0) {
					const block = buffer.slice(0, end);
					buffer = buffer.slice(end + 2);
					const data = block
						.split("\n")
						.filter((line) => line.startsWith("data:"))
						.map((line) => line.slice(5).trim())
						.join("\n");
					if (data) return JSON.parse(data) as { method?: string };
					continue;
				}
				const chunk = await reader.read();
				if (chunk.done) throw new Error("stream ended");
				buffer += chunk.value;
			}
		},
		cancel: () => reader.cancel(),
	};
}

async function until(check: () => Promise<boolean>): Promise<void> {
	for (let i = 0; i < 100; i++) {
		if (await check()) return;
		await new Promise((resolve) => setTimeout(resolve, 20));
	}
	throw new Error("condition not reached");
}

async function setup() {
	const mutable = await registerServer("mutable");
	const beta = await registerServer("beta");
	const { key } = await createKey({ servers: [mutable, beta] });
	const sessionId = await openSession("/mcp", key);
	const call = async (id: number, method: string, params?: unknown) =>
		readReply(await rpc("/mcp", key, sessionId, { jsonrpc: "2.0", id, method, params }));
	const stub = await sessionObject(sessionId);
	const binding = await runInDurableObject(stub, (instance: SessionDO) => instance.store.readBinding());
	const memberSession = binding?.upstreams[mutable]?.sessionId;
	const response = await gatewayFetch("/mcp", {
		method: "GET",
		headers: mcpHeaders(key, sessionId, { accept: "text/event-stream" }),
	});
	expect(response.status).toBe(200);
	const events = eventReader(response.body as ReadableStream<Uint8Array>);
	// The gateway listens on the member's own GET stream while the client listens on its.
	await until(async () =>
		(await upstreamLog("mutable")).some((entry) => entry.method === "GET" && entry.sessionId === memberSession),
	);
	const settled = () => runInDurableObject(stub, (instance: SessionDO) => instance.settled());
	const listCalls = async () =>
		(await upstreamLog("mutable")).filter((e) => e.sessionId === memberSession && e.body?.method === "tools/list")
			.length;
	return { mutable, key, sessionId, call, events, settled, listCalls };
}

describe("aggregate list_changed", () => {
	it("the client gets notifications/tools/list_changed only when its effective catalog really changed", async () => {
		const { mutable, call, events, settled } = await setup();
		const before = await call(1, "tools/list");
		expect(((before.result?.tools ?? []) as unknown[]).length).toBe(9);

		await call(2, "tools/call", { name: `${mutable}__poke`, arguments: { times: 1 } });
		await settled();
		await call(3, "tools/call", { name: `${mutable}__grow`, arguments: {} });

		const first = await events.next();
		expect(first.method).toBe("notifications/tools/list_changed");
		await settled();
		const after = await call(4, "tools/list");
		const names = ((after.result?.tools ?? []) as Array<{ name: string }>).map((tool) => tool.name);
		expect(names).toContain(`${mutable}__grown_1`);

		// Nothing else was sent: the next event is the one a later real change causes.
		await call(5, "tools/call", { name: `${mutable}__grow`, arguments: {} });
		expect((await events.next()).method).toBe("notifications/tools/list_changed");
		await events.cancel();
	});

	it("a burst of list_changed notifications causes one refresh, not many", async () => {
		const { mutable, call, events, settled, listCalls } = await setup();
		await call(1, "tools/list");
		const lists = await listCalls();
		await call(2, "tools/call", { name: `${mutable}__poke`, arguments: { times: 20 } });
		await until(async () => (await listCalls()) > lists);
		await settled();
		expect((await listCalls()) - lists).toBe(1);
		await events.cancel();
	});

	it("an unchanged catalog sends the client nothing", async () => {
		const { mutable, call, events, settled, listCalls } = await setup();
		await call(1, "tools/list");
		const lists = await listCalls();
		await call(2, "tools/call", { name: `${mutable}__poke`, arguments: { times: 3 } });
		await until(async () => (await listCalls()) > lists);
		await settled();
		// A real change now must be the first event the client sees.
		await call(3, "tools/call", { name: `${mutable}__grow`, arguments: {} });
		expect((await events.next()).method).toBe("notifications/tools/list_changed");
		await settled();
		const tools = await call(4, "tools/list");
		expect(((tools.result?.tools ?? []) as unknown[]).length).toBe(10);
		await events.cancel();
	});
});
