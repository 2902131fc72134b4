import { exports } from "cloudflare:workers";
import { onTestFinished } from "vitest";
import type { z } from "zod";
import {
	CONNECTOR_PATH,
	type GatewayFrame,
	GatewayFrameSchema,
	HEARTBEAT_PONG,
	type RequestFrameSchema,
} from "../../src/connectors/frames.ts";
import { eventually } from "./eventually.ts";
import { admin, BASE } from "./gateway.ts";

/*
 * A connector played inside the test: it dials the gateway's connector route
 * as `mcpgw connect` does, says hello, and answers each request frame by
 * sending that request to a real loopback upstream and streaming its answer
 * back as response/chunk/end frames. It keeps every frame the gateway sent.
 */

/** A connector token of `server`, made through the admin API as an operator makes one. */
export async function connectorToken(server: string): Promise<{ id: string; token: string }> {
	const response = await admin("POST", `/servers/${server}/connector-tokens`);
	if (response.status !== 201)
		throw new Error(`making a token for ${server}: ${response.status} ${await response.text()}`);
	const { id, token } = (await response.json()) as { id: string; token: string };
	return { id, token };
}

/** Dials the connector route; the raw answer (101 with a socket, or a refusal). */
export function dial(server: string, headers: Record<string, string>): Promise<Response> {
	return exports.default.fetch(
		new Request(`${BASE}${CONNECTOR_PATH}/${server}`, { headers: { upgrade: "websocket", ...headers } }),
	);
}

type RequestFrame = z.infer<typeof RequestFrameSchema>;

export interface FakeConnector {
	/** Its id, from the gateway's welcome. */
	readonly id: string;
	readonly ws: WebSocket;
	/** Every frame the gateway sent, as text, in order. */
	readonly received: string[];
	/** The request frames it was sent. */
	requests(): RequestFrame[];
	/** Resolves with the close code and reason once the socket closed. */
	readonly closed: Promise<{ code: number; reason: string }>;
	/** Closes it as a connector that stops (1000). */
	close(): void;
	/** Request frames it holds unanswered (see `hold`), oldest first. */
	held(): RequestFrame[];
	/** Answers the oldest held request: 200, `text/plain`, the body `released <its stream id>`. */
	releaseOne(): void;
}

export interface FakeConnectorOptions {
	/** The upstream it serves (http://127.0.0.1:<port>/mcp). */
	upstream: string;
	host?: string;
	/** For a request it matches: forward it, read the upstream's whole answer, then close instead of relaying it. */
	dieAfterForwarding?: (frame: RequestFrame) => boolean;
	/** For a request it matches: keep it unanswered until `releaseOne` (a connector whose server is slow). */
	hold?: (frame: RequestFrame) => boolean;
	/** Connect without saying hello (a connector that never finishes its handshake); resolves at once. */
	silent?: boolean;
}

/** A connector online for `server` with `token`: resolves once the gateway welcomed it. */
export async function startConnector(
	server: string,
	token: string,
	options: FakeConnectorOptions,
): Promise<FakeConnector> {
	const response = await dial(server, { authorization: `Bearer ${token}` });
	const socket = response.webSocket;
	if (response.status !== 101 || !socket) throw new Error(`dial refused: ${response.status} ${await response.text()}`);
	const ws: WebSocket = socket;
	ws.accept();
	const received: string[] = [];
	const aborts = new Map<number, AbortController>();
	const held: RequestFrame[] = [];
	let welcomed: string | undefined;
	const closed = new Promise<{ code: number; reason: string }>((resolve) => {
		ws.addEventListener("close", (event) => resolve({ code: event.code, reason: event.reason }));
	});
	ws.addEventListener("message", (event) => {
		const text = typeof event.data === "string" ? event.data : new TextDecoder().decode(event.data);
		received.push(text);
		if (text === HEARTBEAT_PONG) return;
		const frame: GatewayFrame = GatewayFrameSchema.parse(JSON.parse(text));
		if (frame.type === "welcome") welcomed = frame.connectorId;
		else if (frame.type === "cancel") aborts.get(frame.id)?.abort();
		else if (frame.type === "request" && options.hold?.(frame)) held.push(frame);
		else if (frame.type === "request") void answer(frame);
	});
	const send = (frame: Record<string, unknown>) => {
		if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(frame));
	};
	async function answer(frame: RequestFrame): Promise<void> {
		const abort = new AbortController();
		aborts.set(frame.id, abort);
		try {
			const upstream = await fetch(options.upstream, {
				method: frame.method,
				headers: frame.headers,
				...(frame.body === undefined ? {} : { body: frame.body }),
				signal: abort.signal,
			});
			if (options.dieAfterForwarding?.(frame)) {
				await upstream.text();
				ws.close(1001, "connector stopped");
				return;
			}
			send({ type: "response", id: frame.id, status: upstream.status, headers: [...upstream.headers] });
			if (upstream.body) {
				const decoder = new TextDecoder();
				for await (const bytes of upstream.body) {
					send({ type: "chunk", id: frame.id, data: decoder.decode(bytes, { stream: true }) });
				}
			}
			send({ type: "end", id: frame.id });
		} catch (error) {
			send({ type: "fail", id: frame.id, message: error instanceof Error ? error.message : String(error) });
		} finally {
			aborts.delete(frame.id);
		}
	}
	const releaseOne = () => {
		const frame = held.shift();
		if (!frame) throw new Error("no request is held");
		send({ type: "response", id: frame.id, status: 200, headers: [["content-type", "text/plain"]] });
		send({ type: "chunk", id: frame.id, data: `released ${frame.id}` });
		send({ type: "end", id: frame.id });
	};
	const requests = () =>
		received
			.filter((text) => text !== HEARTBEAT_PONG)
			.map((text) => GatewayFrameSchema.parse(JSON.parse(text)))
			.filter((frame): frame is RequestFrame => frame.type === "request");
	onTestFinished(() => {
		if (ws.readyState === WebSocket.OPEN) ws.close(1000, "test finished");
	});
	const close = () => ws.close(1000, "connector stopped");
	if (options.silent) return { id: "", ws, received, requests, closed, close, held: () => [...held], releaseOne };
	ws.send(
		JSON.stringify({
			type: "hello",
			protocol: 1,
			version: "test",
			host: options.host ?? "test-host",
			mode: "http",
			maxSessions: 16,
		}),
	);
	const id = await eventually(() => welcomed, "the gateway's welcome");
	return { id, ws, received, requests, closed, close, held: () => [...held], releaseOne };
}
