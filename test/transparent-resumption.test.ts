import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { RESUME_RETRY_MS } from "../scripts/fixtures/fixture-names.ts";
import { relaySse } from "../src/mcp/sse-relay.ts";
import { chunkedBody } from "./support/bodies.ts";
import {
	admin,
	connectClient,
	createKey,
	gatewayFetch,
	mcpHeaders,
	messagesOf,
	openSession,
	readReply,
	rpc,
	uniqueName,
} from "./support/gateway.ts";
import { upstreamSessionId } from "./support/session-object.ts";
import { registerServer, upstreamGate, upstreamSessionLog, upstreamUrl } from "./support/upstreams.ts";

/** The resumable upstream's tool that closes its reply stream mid-call (scripts/fixtures/upstream-server.ts). */
const CLOSE_STREAM_TOOL = "close_stream_then_answer";
const ERROR_META = "mcp-edge-gateway/error";

type ToolResult = {
	isError?: boolean;
	content: Array<{ type: string; text?: string }>;
	_meta?: Record<string, { kind?: string; server?: string }>;
};

/** The resumable upstream registered under a fresh name, and a session on its transparent endpoint. */
async function resumableSession(options: { timeoutSeconds?: number } = {}) {
	const server = uniqueName("resumable");
	const response = await admin("PUT", `/servers/${server}`, { url: upstreamUrl("resumable"), ...options });
	expect(response.status).toBe(201);
	const path = `/mcp/${server}`;
	const { key } = await createKey();
	const sessionId = await openSession(path, key);
	return { server, path, key, sessionId };
}

describe("a transparent endpoint passes the upstream's resumable replies through", () => {
	it("a reply the upstream closes mid-call is its priming event, byte for byte, with no error after it; GET with Last-Event-ID brings the tool's result", async () => {
		const { server, path, key, sessionId } = await resumableSession();
		const gate = upstreamGate("resumable");
		const post = await rpc(path, key, sessionId, gate.call(7, CLOSE_STREAM_TOOL));
		expect(post.status).toBe(200);
		expect(post.headers.get("content-type")).toContain("text/event-stream");
		const text = await post.text();
		const eventId = /^id: (\S+)\n/.exec(text)?.[1];
		if (eventId === undefined) throw new Error(`no event id in the reply: ${JSON.stringify(text)}`);
		// The upstream's own id and retry, and nothing the gateway made up.
		expect(text).toBe(`id: ${eventId}\nretry: ${RESUME_RETRY_MS}\ndata: \n\n`);
		// The call is still running at the upstream: the reply ended, the call did not.
		expect((await gate.arrived()).waiting).toBe(1);

		const resumed = await gatewayFetch(path, {
			method: "GET",
			headers: mcpHeaders(key, sessionId, {
				accept: "text/event-stream",
				"mcp-protocol-version": LATEST_PROTOCOL_VERSION,
				"last-event-id": eventId,
			}),
		});
		expect(resumed.status).toBe(200);
		await gate.release();
		// The upstream ends the resumed stream once it has sent the response.
		const messages = messagesOf(await resumed.text(), resumed.headers.get("content-type") ?? "");
		expect(messages).toEqual([
			{ jsonrpc: "2.0", id: 7, result: { content: [{ type: "text", text: `answered after gate ${gate.name}` }] } },
		]);
		const upstreamLog = await upstreamSessionLog("resumable", await upstreamSessionId(sessionId, server));
		expect(upstreamLog.filter((entry) => entry.method === "GET").map((entry) => entry.lastEventId)).toEqual([eventId]);
		expect(upstreamLog.filter((entry) => entry.body?.method === "tools/call")).toHaveLength(1);
	});

	it("the SDK client calls a tool whose upstream closes the reply mid-call and gets the tool's real result, resuming through the gateway", async () => {
		const server = await registerServer("resumable");
		const { key } = await createKey();
		const { client, transport } = await connectClient(`/mcp/${server}`, key);
		const gate = upstreamGate("resumable");
		const calling = client.callTool({ name: CLOSE_STREAM_TOOL, arguments: { name: gate.name } });
		await gate.arrived();
		await gate.release();
		expect(await calling).toEqual({ content: [{ type: "text", text: `answered after gate ${gate.name}` }] });
		// The result came on the client's GET that resumed the call's reply, sent once.
		const sessionId = transport.sessionId;
		if (!sessionId) throw new Error("the client has no session id");
		const upstreamLog = await upstreamSessionLog("resumable", await upstreamSessionId(sessionId, server));
		const resumes = upstreamLog.filter((entry) => entry.method === "GET" && entry.lastEventId !== null);
		expect(resumes).toHaveLength(1);
		expect(upstreamLog.filter((entry) => entry.body?.method === "tools/call")).toHaveLength(1);
		await client.close();
	});
});

describe("the gateway's own reasons still end a resumable reply with an error", () => {
	it("a call past the server's timeout ends with upstream_timeout after the upstream's priming event", async () => {
		const { server, path, key, sessionId } = await resumableSession({ timeoutSeconds: 1 });
		// The gate tool answers on its reply stream, which starts with a priming event; the gate is never released.
		const gate = upstreamGate("resumable");
		const response = await rpc(path, key, sessionId, gate.call(8));
		const text = await response.text();
		expect(text).toMatch(/^id: \S+\nretry: \d+\ndata: \n\n/);
		const reply = messagesOf(text, "text/event-stream").at(-1) as { id: number; result: ToolResult };
		expect(reply.id).toBe(8);
		expect(reply.result.isError).toBe(true);
		expect(reply.result._meta?.[ERROR_META]).toEqual({ kind: "upstream_timeout", server });
	});

	it("a session deleted while a resumable reply runs ends that reply with session_not_found", async () => {
		const { path, key, sessionId } = await resumableSession();
		const gate = upstreamGate("resumable");
		const response = await rpc(path, key, sessionId, gate.call(9));
		await gate.arrived();
		expect((await gatewayFetch(path, { method: "DELETE", headers: mcpHeaders(key, sessionId) })).status).toBe(204);
		const text = await response.text();
		expect(text).toMatch(/^id: \S+\nretry: \d+\ndata: \n\n/);
		const reply = await readReply(new Response(text, { headers: { "content-type": "text/event-stream" } }));
		expect((reply.result as ToolResult)._meta?.[ERROR_META]?.kind).toBe("session_not_found");
	});
});

/** Relays `chunks` with both ways of ending early told apart: "incomplete" or "resumable", and how it ended. */
async function relayEnding(chunks: string[], options: { fail?: boolean } = {}) {
	const endings: string[] = [];
	const stream = relaySse(chunkedBody(chunks, options.fail), {
		requestId: 7,
		maxEventBytes: 1_000_000,
		onIncomplete: (error) => {
			endings.push(`incomplete ${error === null ? "ended" : "broke"}`);
			return { jsonrpc: "2.0", id: 7, error: { code: -1, message: "incomplete" } };
		},
		onIncompleteResumable: (error) => {
			endings.push(`resumable ${error === null ? "ended" : "broke"}`);
			return null;
		},
		onOversize: () => ({ jsonrpc: "2.0", id: 7, error: { code: -2, message: "too large" } }),
		onDone: () => {},
	});
	return { text: await new Response(stream).text(), endings };
}

const priming = "id: s1::1\nretry: 500\ndata: \n\n";
const progress =
	'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}\n\n';

describe("relaySse tells a resumable reply from one that is not", () => {
	it("a transparent reply that carried an event id ends through onIncompleteResumable, cleanly or broken", async () => {
		expect(await relayEnding([priming, progress])).toEqual({ text: priming + progress, endings: ["resumable ended"] });
		expect(await relayEnding([priming], { fail: true })).toEqual({ text: priming, endings: ["resumable broke"] });
	});

	it("a reply without event ids ends through onIncomplete", async () => {
		expect((await relayEnding([progress])).endings).toEqual(["incomplete ended"]);
	});

	it("a resumable reply that breaks mid-event hands on no half event", async () => {
		const { text } = await relayEnding([priming, progress.slice(0, 30)], { fail: true });
		expect(text).toBe(priming);
	});
});
