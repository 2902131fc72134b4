/**
 * One WebSocket to the gateway, from dial to close: the upgrade with the
 * connector token (and no Origin: the gateway refuses browsers), `hello`,
 * `welcome`, heartbeats, and every frame parsed with the protocol's schemas.
 * It ends once, with what ended it, and the connector decides from that
 * whether to dial again.
 */
import type { IncomingMessage } from "node:http";
import WebSocket from "ws";
import {
	CLOSE_CODES,
	type ConnectorFrame,
	type GatewayFrame,
	GatewayFrameSchema,
	HEARTBEAT_PING,
	HEARTBEAT_PONG,
	MAX_FRAME_BYTES,
} from "../../../src/connectors/frames.ts";
import type { Timers } from "./timers.ts";

/** How long the gateway has to answer `hello` with `welcome`. */
const WELCOME_TIMEOUT_MS = 10_000;
/** How much of a refused upgrade's body is read for its sentence. */
const REFUSAL_BODY_BYTES = 4096;
/**
 * A body's next chunk waits while more than this many bytes wait to be written to the gateway
 * (the socket's `bufferedAmount`): a gateway that reads slowly holds the connector's memory at this
 * and one frame, and the connector reads its upstream no faster than the gateway reads it.
 */
export const MAX_BUFFERED_BYTES = 1024 * 1024;

export type LinkEnd =
	/** The upgrade was answered 401 or 403: the token is not one for this server. */
	| { kind: "refused"; status: number; message: string }
	/** The gateway ended this connector for good: the token revoked, or the server deleted. */
	| { kind: "revoked"; reason: string }
	/** Lost (a drop, a deploy, a dead heartbeat, an error): dial again. */
	| { kind: "dropped"; why: string; lastedMs: number }
	/** Closed by the connector itself. */
	| { kind: "closed" };

export interface LinkOptions {
	/** `ws(s)://<gateway>/connector/<server>`. */
	url: string;
	token: string;
	hello: Extract<ConnectorFrame, { type: "hello" }>;
	heartbeatMs: number;
	timers: Timers;
	/** The gateway accepted the connector, under `connectorId`. */
	welcomed(connectorId: string): void;
	/** A request, cancel or goodbye frame. */
	received(frame: Exclude<GatewayFrame, { type: "welcome" }>): void;
}

export class GatewayLink {
	readonly ended: Promise<LinkEnd>;
	readonly #socket: WebSocket;
	readonly #options: LinkOptions;
	#settle: (end: LinkEnd) => void = () => {};
	#opened: number | undefined;
	#lastPong = 0;
	#welcomed = false;
	#heartbeat: NodeJS.Timeout | undefined;
	#welcomeTimer: NodeJS.Timeout | undefined;
	/** Those waiting for the buffered bytes to fall to their bound (see `writable`). */
	#waiting: Array<{ bound: number; resolve: () => void }> = [];

	constructor(options: LinkOptions) {
		this.#options = options;
		this.ended = new Promise((resolve) => {
			this.#settle = resolve;
		});
		this.#socket = new WebSocket(options.url, {
			headers: { Authorization: `Bearer ${options.token}` },
			maxPayload: MAX_FRAME_BYTES,
			handshakeTimeout: WELCOME_TIMEOUT_MS,
		});
		this.#socket.on("unexpected-response", (_request, response) => void this.#refusedUpgrade(response));
		this.#socket.on("open", () => this.#open());
		this.#socket.on("message", (data, isBinary) => this.#message(data, isBinary));
		this.#socket.on("close", (code, reason) => this.#closed(code, reason.toString()));
		this.#socket.on("error", (error) => this.#end({ kind: "dropped", why: error.message, lastedMs: this.#lasted() }));
	}

	/** Sends a frame if the socket is open; a frame for a connection already lost has no one to read it. */
	send(frame: ConnectorFrame): void {
		if (this.#socket.readyState !== WebSocket.OPEN) return;
		// Called once the frame is written out (or the socket failed): the buffer may have fallen under a bound.
		this.#socket.send(JSON.stringify(frame), () => this.#wake());
	}

	/** Bytes sent and not yet written out to the network (the socket's `bufferedAmount`). */
	get bufferedAmount(): number {
		return this.#socket.bufferedAmount;
	}

	/**
	 * Resolves once at most `bound` bytes wait to be written (at once when so
	 * already), or the connection has ended (a frame then goes nowhere).
	 */
	writable(bound: number = MAX_BUFFERED_BYTES): Promise<void> {
		if (this.#socket.readyState !== WebSocket.OPEN || this.bufferedAmount <= bound) return Promise.resolve();
		return new Promise((resolve) => this.#waiting.push({ bound, resolve }));
	}

	#wake(): void {
		const open = this.#socket.readyState === WebSocket.OPEN;
		const still: Array<{ bound: number; resolve: () => void }> = [];
		for (const waiter of this.#waiting) {
			if (!open || this.bufferedAmount <= waiter.bound) waiter.resolve();
			else still.push(waiter);
		}
		this.#waiting = still;
	}

	/** Closes the connection (1000 when the connector stops). */
	close(code: number = 1000, reason = "connector stopped"): void {
		this.#end({ kind: "closed" });
		this.#socket.close(code, reason);
	}

	#open(): void {
		const { timers, heartbeatMs } = this.#options;
		this.#opened = timers.now();
		this.#lastPong = this.#opened;
		this.send(this.#options.hello);
		this.#welcomeTimer = timers.setTimeout(() => {
			this.#drop(`the gateway did not answer hello within ${WELCOME_TIMEOUT_MS / 1000} s`);
		}, WELCOME_TIMEOUT_MS);
		this.#heartbeat = timers.setInterval(() => {
			// Two intervals without a pong: the connection is dead even if TCP has not noticed yet.
			if (timers.now() - this.#lastPong > 2 * heartbeatMs) {
				this.#drop("no heartbeat answer from the gateway");
				return;
			}
			this.#socket.send(HEARTBEAT_PING);
		}, heartbeatMs);
	}

	#message(data: WebSocket.RawData, isBinary: boolean): void {
		const text = isBinary ? "" : data.toString();
		if (text === HEARTBEAT_PONG) {
			this.#lastPong = this.#options.timers.now();
			return;
		}
		const parsed = parseFrame(text);
		if (!parsed.success) {
			this.#end({
				kind: "dropped",
				why: `the gateway sent a frame that does not parse: ${parsed.error}`,
				lastedMs: this.#lasted(),
			});
			this.#socket.close(CLOSE_CODES.policy, parsed.error.slice(0, 120));
			return;
		}
		const frame = parsed.frame;
		if (frame.type === "welcome") {
			this.#welcomed = true;
			if (this.#welcomeTimer) this.#options.timers.clearTimeout(this.#welcomeTimer);
			this.#options.welcomed(frame.connectorId);
			return;
		}
		if (frame.type === "goodbye") {
			this.#end({ kind: "revoked", reason: frame.reason });
			this.#socket.close(1000, "goodbye");
			return;
		}
		this.#options.received(frame);
	}

	#closed(code: number, reason: string): void {
		if (code === CLOSE_CODES.revoked) {
			this.#end({ kind: "revoked", reason: reason || "the token was revoked or the server deleted" });
			return;
		}
		const why = `closed by the gateway (${code}${reason ? `: ${reason}` : ""})`;
		this.#end({
			kind: "dropped",
			why: this.#welcomed || code !== 1006 ? why : "the connection was lost",
			lastedMs: this.#lasted(),
		});
	}

	async #refusedUpgrade(response: IncomingMessage): Promise<void> {
		const status = response.statusCode ?? 0;
		const body = await readSome(response);
		const message = refusalSentence(status, body);
		if (status === 401 || status === 403) this.#end({ kind: "refused", status, message });
		else this.#end({ kind: "dropped", why: `the gateway answered the upgrade with ${message}`, lastedMs: 0 });
		this.#socket.terminate();
	}

	#drop(why: string): void {
		this.#end({ kind: "dropped", why, lastedMs: this.#lasted() });
		this.#socket.terminate();
	}

	#lasted(): number {
		return this.#opened === undefined ? 0 : this.#options.timers.now() - this.#opened;
	}

	#end(end: LinkEnd): void {
		const { timers } = this.#options;
		if (this.#heartbeat) timers.clearInterval(this.#heartbeat);
		if (this.#welcomeTimer) timers.clearTimeout(this.#welcomeTimer);
		// Nothing more will be written: a body waiting for room goes on (and its frames nowhere).
		for (const waiter of this.#waiting.splice(0)) waiter.resolve();
		this.#settle(end);
	}
}

function parseFrame(text: string): { success: true; frame: GatewayFrame } | { success: false; error: string } {
	let json: unknown;
	try {
		json = JSON.parse(text);
	} catch (error) {
		return { success: false, error: `not JSON (${error instanceof Error ? error.message : String(error)})` };
	}
	const parsed = GatewayFrameSchema.safeParse(json);
	return parsed.success ? { success: true, frame: parsed.data } : { success: false, error: parsed.error.message };
}

async function readSome(response: IncomingMessage): Promise<string> {
	let text = "";
	for await (const chunk of response) {
		text += String(chunk);
		if (text.length >= REFUSAL_BODY_BYTES) {
			response.destroy();
			break;
		}
	}
	return text.slice(0, REFUSAL_BODY_BYTES);
}

/** "HTTP 401: <the gateway's sentence>", from a JSON error body or plain text. */
function refusalSentence(status: number, body: string): string {
	let message = body.trim();
	try {
		const parsed: unknown = JSON.parse(body);
		const nested = (parsed as { error?: { message?: unknown } | string } | null)?.error;
		if (typeof nested === "string") message = nested;
		else if (typeof nested?.message === "string") message = nested.message;
	} catch (error) {
		// Not JSON: the body's text is the sentence.
		void error;
	}
	return `HTTP ${status}${message ? `: ${message}` : ""}`;
}
