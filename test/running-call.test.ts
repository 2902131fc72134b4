import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { scopeOf } from "../src/session/binding.ts";
import { RunningCall } from "../src/session/running-call.ts";
import type { SessionDO } from "../src/session/session-do.ts";
import { eventually } from "./support/eventually.ts";
import { admin, createKey, openSession, readReply, rpc, uniqueName } from "./support/gateway.ts";
import { parsedMessage } from "./support/messages.ts";
import { ENVELOPE, modernPost } from "./support/modern.ts";
import { objectMadeBy, sessionObject } from "./support/session-object.ts";
import { eventReader } from "./support/sse-events.ts";
import { registerServer, type UpstreamName, upstreamGate, upstreamUrl } from "./support/upstreams.ts";

/*
 * A call ends itself (src/session/running-call.ts): however its reply ends —
 * read to its end, broken off upstream, cancelled by the client, or never
 * read at all — the session stops counting it as running, so expiry is held
 * off exactly while it runs (invariant "Alarm-driven expiry").
 */

type Kind = "transparent" | "aggregate";

/** A 2025 session on `which` (registered afresh, `timeoutSeconds` if given), with the count of its running calls. */
async function session(which: UpstreamName, kind: Kind, timeoutSeconds?: number) {
	const server = uniqueName(which);
	const headers = which === "alpha" ? { Authorization: "Bearer ${UPSTREAM_ALPHA_TOKEN}" } : {};
	const registered = await admin("PUT", `/servers/${server}`, { url: upstreamUrl(which), headers, timeoutSeconds });
	expect(registered.status).toBe(201);
	const path = kind === "transparent" ? `/mcp/${server}` : "/mcp";
	const { key } = await createKey({ servers: [server] });
	const sessionId = await openSession(path, key);
	const stub = await sessionObject(sessionId);
	const tool = kind === "transparent" ? "gate" : `${server}__gate`;
	return { server, path, key, sessionId, tool, inFlight: async () => (await stub.stats()).inFlight };
}

/** A gate call with a progress token: its reply stream opens (one progress event) while it waits at the gate. */
function streamingCall(gate: ReturnType<typeof upstreamGate>, id: number, tool: string) {
	return gate.call(id, tool, { progressToken: `p-${id}` });
}

/** A client's request posted straight into the session object, as the edge posts it (within `runInDurableObject`). */
async function postInto(instance: SessionDO, message: Record<string, unknown>): Promise<Response> {
	const binding = await instance.store.readBinding();
	if (!binding) throw new Error("no session in this object");
	return instance.post(scopeOf(binding), parsedMessage(message));
}

describe("a call ends itself, however its reply ends", () => {
	for (const kind of ["transparent", "aggregate"] as const) {
		it(`${kind}: a call read to its end is counted while it runs and not after`, async () => {
			const { path, key, sessionId, tool, inFlight } = await session("alpha", kind);
			const gate = upstreamGate("alpha");
			const reply = rpc(path, key, sessionId, gate.call(1, tool));
			await gate.arrived();
			expect(await inFlight()).toBe(1);
			await gate.release();
			expect((await readReply(await reply)).result).toBeDefined();
			await eventually(async () => (await inFlight()) === 0, "the call's end");
		});

		it(`${kind}: a call whose upstream reply breaks off (its deadline passed mid-stream) ends`, async () => {
			const { path, key, sessionId, tool, inFlight } = await session("alpha", kind, 1);
			// Never released: the upstream's SSE reply is open when the deadline cuts it.
			const gate = upstreamGate("alpha");
			const reply = await readReply(await rpc(path, key, sessionId, streamingCall(gate, 2, tool)));
			expect(reply.result?._meta).toMatchObject({ "mcp-edge-gateway/error": { kind: "upstream_timeout" } });
			await eventually(async () => (await inFlight()) === 0, "the call's end after its reply broke off");
		});

		it(`${kind}: a call whose reply is never read ends once its upstream has answered`, async () => {
			const { path, key, sessionId, tool, inFlight } = await session("alpha", kind);
			const gate = upstreamGate("alpha");
			const response = await rpc(path, key, sessionId, streamingCall(gate, 3, tool));
			expect(response.status).toBe(200);
			await gate.arrived();
			expect(await inFlight()).toBe(1);
			await gate.release();
			await eventually(async () => (await inFlight()) === 0, "the call's end, its reply unread");
			await response.body?.cancel();
		});
	}

	/*
	 * A client's cancel reaches the session's reply at once only in the object itself: across the edge, the
	 * runtime hands a cancel on with the next chunk. So these two post into the object directly.
	 */
	it("transparent: a call whose client cancels the reply mid-stream ends at once, the upstream still holding it", async () => {
		const { sessionId, tool, inFlight } = await session("alpha", "transparent");
		const gate = upstreamGate("alpha");
		const counted = await runInDurableObject(await sessionObject(sessionId), async (instance: SessionDO) => {
			const response = await postInto(instance, streamingCall(gate, 4, tool));
			const events = eventReader(response.body as ReadableStream<Uint8Array>);
			const first = await events.next();
			const before = instance.stats().inFlight;
			await events.cancel();
			return { first: first.method, before, after: instance.stats().inFlight };
		});
		expect(counted).toEqual({ first: "notifications/progress", before: 1, after: 0 });
		expect(await inFlight()).toBe(0);
		expect((await gate.status()).passed).toBe(0);
	});

	it("aggregate: a call whose client cancels the reply runs on to its member's answer, and ends then", async () => {
		const { sessionId, tool, inFlight } = await session("alpha", "aggregate");
		const gate = upstreamGate("alpha");
		const counted = await runInDurableObject(await sessionObject(sessionId), async (instance: SessionDO) => {
			const response = await postInto(instance, streamingCall(gate, 5, tool));
			const events = eventReader(response.body as ReadableStream<Uint8Array>);
			const first = await events.next();
			await events.cancel();
			return { first: first.method, after: instance.stats().inFlight };
		});
		// The member's reply is read onto a resumable stream of the session's: the call goes on without the client.
		expect(counted).toEqual({ first: "notifications/progress", after: 1 });
		await gate.release();
		await eventually(async () => (await inFlight()) === 0, "the call's end at its member's answer");
	});

	it("a 2025 client's call to a 2026-07-28 upstream ends with its exchange, its reply unread", async () => {
		const { path, key, sessionId, inFlight } = await session("modern", "transparent");
		const gate = upstreamGate("modern");
		// The upstream answers in JSON: the reply's headers come only once the gate opens.
		const reply = rpc(path, key, sessionId, gate.call(6));
		await gate.arrived();
		expect(await inFlight()).toBe(1);
		await gate.release();
		const response = await reply;
		expect(response.status).toBe(200);
		await eventually(async () => (await inFlight()) === 0, "the bridged call's end, its reply unread");
		await response.body?.cancel();
	});

	it("a 2026-07-28 client's call through a 2025 session ends once its upstream answered, its reply unread", async () => {
		const server = await registerServer("alpha");
		const path = `/mcp/${server}`;
		const { key } = await createKey({ servers: [server] });
		const gate = upstreamGate("alpha");
		const call = {
			id: 7,
			method: "tools/call",
			params: { name: "gate", arguments: { name: gate.name }, _meta: ENVELOPE },
		};
		const { made, stub } = await objectMadeBy(async () => {
			// The reply is not awaited here: it comes only once the gate opens.
			const reply = modernPost(path, key, call);
			await gate.arrived();
			return { reply };
		});
		expect((await stub.stats()).inFlight).toBe(1);
		await gate.release();
		await eventually(async () => (await stub.stats()).inFlight === 0, "the call's end in the session");
		const response = await made.reply;
		expect(response.status).toBe(200);
		await response.body?.cancel();
	});
});

describe("the one place a reply leaves the session (RunningCall.leave)", () => {
	/** A call counted by nothing, whose ends are counted here. */
	function call() {
		const running = RunningCall.within();
		const ends = { count: 0 };
		running.onEnd(() => ends.count++);
		return { running, ends };
	}
	const chunks = (...parts: string[]) =>
		new ReadableStream<Uint8Array>({
			start(controller) {
				for (const part of parts) controller.enqueue(new TextEncoder().encode(part));
				controller.close();
			},
		});

	it("a body nothing hooked is wrapped: the call ends once, when the body has been read to its end", async () => {
		const { running, ends } = call();
		const left = running.leave(new Response(chunks("a", "b"), { status: 201, headers: { "x-kept": "yes" } }));
		expect(ends.count).toBe(0);
		expect({ status: left.status, kept: left.headers.get("x-kept") }).toEqual({ status: 201, kept: "yes" });
		expect(await left.text()).toBe("ab");
		expect(ends.count).toBe(1);
		running.end();
		expect(ends.count).toBe(1);
	});

	it("a wrapped body that fails, or that its reader cancels, ends the call", async () => {
		const failing = call();
		const broken = new ReadableStream<Uint8Array>({
			pull(controller) {
				controller.error(new Error("the upstream went away"));
			},
		});
		await expect(failing.running.leave(new Response(broken)).text()).rejects.toThrow("the upstream went away");
		expect(failing.ends.count).toBe(1);
		const cancelled = call();
		await cancelled.running.leave(new Response(chunks("a"))).body?.cancel();
		expect(cancelled.ends.count).toBe(1);
	});

	it("a reply without a body ends the call at once; one whose body ends the call itself leaves unwrapped", () => {
		const empty = call();
		empty.running.leave(new Response(null, { status: 202 }));
		expect(empty.ends.count).toBe(1);
		const hooked = call();
		const body = hooked.running.endsWith(chunks("a"));
		const reply = new Response(body);
		const left = hooked.running.leave(reply);
		expect(left).toBe(reply);
		expect(hooked.ends.count).toBe(0);
	});
});
