/**
 * The gateway's side of the connector protocol, as a test drives it: a `ws`
 * server on loopback that admits one server's connector token, answers
 * `hello` and heartbeats, records every frame (parsed with frames.ts), and
 * sends `request` frames as the ConnectorDO would, gathering each answer.
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { type WebSocket, WebSocketServer } from "ws";
import {
	CONNECTOR_PATH,
	type ConnectorFrame,
	ConnectorFrameSchema,
	type GatewayFrame,
	HEARTBEAT_PING,
	HEARTBEAT_PONG,
} from "../../src/connectors/frames.ts";

/** A request frame's answer as it arrives: status and headers, the body so far, how it ended. */
export interface Answer {
	status: number | undefined;
	headers: Headers;
	body: string;
	/** "end", or the sentence of a `fail` frame. */
	ended: Promise<{ kind: "end" } | { kind: "fail"; message: string }>;
}

interface OpenAnswer extends Answer {
	settle(end: { kind: "end" } | { kind: "fail"; message: string }): void;
}

export interface Dial {
	headers: IncomingHttpHeaders;
	path: string;
}

export class FakeGateway {
	readonly url: string;
	/** Every upgrade request that reached it, admitted or not. */
	readonly dials: Dial[] = [];
	/** Every frame connectors sent, in order (heartbeats not included). */
	readonly frames: ConnectorFrame[] = [];
	/** Close codes the connectors' sockets ended with. */
	readonly closes: number[] = [];
	pings = 0;
	/** Off: heartbeats go unanswered, as on a connection that died without closing. */
	answerPings = true;
	/** While set, an upgrade is refused with this status. */
	refuseWith: number | undefined;
	#socket: WebSocket | undefined;
	#nextId = 1;
	#connections = 0;
	readonly #answers = new Map<number, OpenAnswer>();
	readonly #http: Server;
	readonly #wss: WebSocketServer;

	private constructor(http: Server, wss: WebSocketServer, url: string) {
		this.#http = http;
		this.#wss = wss;
		this.url = url;
	}

	static async start(server: string, token: string): Promise<FakeGateway> {
		const http = createServer((_req, res) => res.writeHead(404).end());
		const wss = new WebSocketServer({ noServer: true });
		await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
		const gateway = new FakeGateway(http, wss, `http://127.0.0.1:${(http.address() as AddressInfo).port}`);
		http.on("upgrade", (req, socket: Duplex, head) => {
			gateway.dials.push({ headers: req.headers, path: req.url ?? "" });
			const admitted = req.url === `${CONNECTOR_PATH}/${server}` && req.headers.authorization === `Bearer ${token}`;
			const status = gateway.refuseWith ?? (admitted ? undefined : 401);
			if (status !== undefined) {
				const body = JSON.stringify({ error: { message: "this connector token is not one of this server's" } });
				socket.end(
					`HTTP/1.1 ${status} Refused\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
				);
				return;
			}
			wss.handleUpgrade(req, socket, head, (ws) => gateway.#accept(ws));
		});
		return gateway;
	}

	/** How many connections said hello. */
	get connections(): number {
		return this.#connections;
	}

	framesOf<T extends ConnectorFrame["type"]>(type: T): Extract<ConnectorFrame, { type: T }>[] {
		return this.frames.filter((frame): frame is Extract<ConnectorFrame, { type: T }> => frame.type === type);
	}

	send(frame: GatewayFrame): void {
		if (!this.#socket) throw new Error("no connector is connected");
		this.#socket.send(JSON.stringify(frame));
	}

	/** Sends one request frame; its answer fills in as frames arrive. */
	request(method: "POST" | "GET" | "DELETE", headers: Record<string, string>, body?: unknown): Answer & { id: number } {
		const id = this.#nextId++;
		let settle: OpenAnswer["settle"] = () => {};
		const ended = new Promise<{ kind: "end" } | { kind: "fail"; message: string }>((resolve) => {
			settle = resolve;
		});
		const answer: OpenAnswer = { status: undefined, headers: new Headers(), body: "", ended, settle };
		this.#answers.set(id, answer);
		this.send({
			type: "request",
			id,
			method,
			headers: Object.entries(headers),
			...(body === undefined ? {} : { body: JSON.stringify(body) }),
		});
		return Object.assign(answer, { id });
	}

	/** Stops reading the connector's socket (a slow gateway): what it sends piles up on its side. */
	pauseReading(): void {
		this.#socket?.pause();
	}

	resumeReading(): void {
		this.#socket?.resume();
	}

	/** Closes the connector's socket from the gateway's side (a deploy: 1001; revoked: 4001). */
	closeConnector(code: number, reason = ""): void {
		this.#socket?.close(code, reason);
	}

	async close(): Promise<void> {
		for (const client of this.#wss.clients) client.terminate();
		await new Promise<void>((resolve) => this.#wss.close(() => resolve()));
		await new Promise<void>((resolve) => this.#http.close(() => resolve()));
	}

	#accept(ws: WebSocket): void {
		this.#socket = ws;
		ws.on("close", (code) => this.closes.push(code));
		ws.on("message", (data) => {
			const text = String(data);
			if (text === HEARTBEAT_PING) {
				this.pings += 1;
				if (this.answerPings) ws.send(HEARTBEAT_PONG);
				return;
			}
			const frame = ConnectorFrameSchema.parse(JSON.parse(text));
			this.frames.push(frame);
			if (frame.type === "hello") {
				this.#connections += 1;
				ws.send(JSON.stringify({ type: "welcome", connectorId: `conn-${this.#connections}` }));
				return;
			}
			if (frame.type === "draining") return;
			const answer = this.#answers.get(frame.id);
			if (!answer) return;
			if (frame.type === "response") {
				answer.status = frame.status;
				for (const [name, value] of frame.headers) answer.headers.append(name, value);
			} else if (frame.type === "chunk") {
				answer.body += frame.data;
			} else if (frame.type === "end") {
				answer.settle({ kind: "end" });
			} else {
				answer.settle({ kind: "fail", message: frame.message });
			}
		});
	}
}
