import { describe, expect, it } from "vitest";
import { eventually } from "./support/eventually.ts";
import { createKey, gatewayFetch, mcpHeaders, openSession, readReply, rpc } from "./support/gateway.ts";
import { instrumentSession } from "./support/session-object.ts";
import { registerServer, upstreamGate } from "./support/upstreams.ts";

const SECOND = 1_000;
const MINUTE = 60 * SECOND;

/** A session on a test upstream whose Durable Object runs on a manual clock, with probes of its active time. */
async function meteredSession(upstream: "alpha" | "mutable", kind: "transparent" | "aggregate") {
	const server = await registerServer(upstream);
	const path = kind === "transparent" ? `/mcp/${server}` : "/mcp";
	const { key } = await createKey({ servers: [server] });
	const sessionId = await openSession(path, key);
	const { stub, clock } = await instrumentSession(sessionId);
	const activeMs = async () => (await stub.stats()).activeMs;
	/** Whether the object's active time still follows the clock: moves it a second and looks. */
	const accruing = async () => {
		const before = await activeMs();
		clock.advance(SECOND);
		return (await activeMs()) > before;
	};
	/** Waits until the active time no longer follows the clock; then ten more minutes add nothing. */
	const stopsAccruing = async (what: string) => {
		await eventually(async () => !(await accruing()), what);
		const stopped = await activeMs();
		clock.advance(10 * MINUTE);
		expect(await activeMs()).toBe(stopped);
	};
	return { path, key, sessionId, clock, activeMs, accruing, stopsAccruing };
}

/** Opens a client GET stream through the gateway. */
async function listen(path: string, key: string, sessionId: string): Promise<Response> {
	const response = await gatewayFetch(path, { headers: mcpHeaders(key, sessionId, { accept: "text/event-stream" }) });
	expect(response.status).toBe(200);
	return response;
}

describe("a session's active time (the wall time its Durable Object is billed for)", () => {
	it("a session with no request running and no stream open accrues none, however long it idles", async () => {
		const { clock, activeMs, accruing } = await meteredSession("alpha", "transparent");
		const before = await activeMs();
		clock.advance(10 * MINUTE);
		expect(await activeMs()).toBe(before);
		expect(await accruing()).toBe(false);
	});

	for (const kind of ["transparent", "aggregate"] as const) {
		it(`a client listening on the ${kind} endpoint keeps its session's object active for none of the time it listens`, async () => {
			const { path, key, sessionId, clock, activeMs, accruing } = await meteredSession("mutable", kind);
			const before = await activeMs();
			const stream = await listen(path, key, sessionId);
			// The edge Worker carries the stream: the object only planned the window.
			clock.advance(MINUTE);
			expect((await activeMs()) - before).toBe(0);
			expect(await accruing()).toBe(false);
			await stream.body?.cancel();
		});
	}

	it("a call keeps its session active until its streamed reply has ended", async () => {
		const { path, key, sessionId, clock, activeMs, stopsAccruing } = await meteredSession("alpha", "transparent");
		const gate = upstreamGate("alpha");
		const before = await activeMs();
		const reply = rpc(path, key, sessionId, gate.call(7));
		await gate.arrived();
		clock.advance(5 * SECOND);
		expect((await activeMs()) - before).toBe(5 * SECOND);
		await gate.release();
		expect((await readReply(await reply)).result).toBeDefined();
		await stopsAccruing("the reply's end reaching the session");
	});
});
