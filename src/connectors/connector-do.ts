import { DurableObject } from "cloudflare:workers";
import type { z } from "zod";
import type { Env } from "../env.ts";
import { describeError } from "../mcp/gateway-error.ts";
import { type Clock, systemClock, systemTimers, type Timers } from "../primitives/clock.ts";
import { randomToken, sha256Hex } from "../primitives/crypto.ts";
import { connectorAddressOf, RESOURCE_METADATA_PATH } from "../registry/connector-tokens.ts";
import { registryStub } from "../registry/registry-stub.ts";
import type { ConnectorEvent } from "../telemetry/instruments.ts";
import { CarriedRequest } from "./carried-request.ts";
import { countConnection } from "./connection-count.ts";
import { chooseConnector } from "./connector-choice.ts";
import type { ConnectorInfo } from "./connector-info.ts";
import { noConnector, REFUSAL_HEADER, refusal, SERVER_HEADER, TOKEN_ID_HEADER } from "./connector-refusal.ts";
import {
	connectorTag,
	infoOf,
	type OnlineConnector,
	onlineState,
	saveState,
	stateOf,
	tokenTag,
} from "./connector-state.ts";
import { closeReason, readFrame, writeFrame } from "./frame-reading.ts";
import {
	CLOSE_CODES,
	CONNECTOR_PROTOCOL,
	type ConnectorFrame,
	HEARTBEAT_PING,
	HEARTBEAT_PONG,
	MAX_FRAME_BYTES,
	MAX_IN_FLIGHT_PER_CONNECTOR,
	type RequestFrameSchema,
} from "./frames.ts";
import { SLOT_WAIT_MS, SlotQueue, type SlotWait } from "./slot-queue.ts";

export type { ConnectorInfo } from "./connector-info.ts";

/** Request headers never carried to a connector: the object's and the platform's own, and hop-by-hop ones. */
const NOT_CARRIED = new Set([
	"host",
	"content-length",
	"connection",
	"upgrade",
	REFUSAL_HEADER,
	TOKEN_ID_HEADER,
	SERVER_HEADER,
]);

/** The most keys one `storage.delete` takes. */
const MAX_KEYS_PER_DELETE = 128;

/** A connector that has not said hello this long after its upgrade is closed (the object's alarm). */
export const HELLO_TIMEOUT_MS = 10_000;

/** A stream id no socket reaches: the size of a request's frame is checked with it before a connector is chosen. */
const WIDEST_STREAM_ID = Number.MAX_SAFE_INTEGER;

/** The storage key of an upstream session's connector (by digest: the session id is the connector's bearer secret). */
const sessionKey = (digest: string) => `session/${digest}`;

/**
 * One per server registered with `"connector": {}` (named by the server):
 * the WebSockets its connectors dialled, and the server's traffic over them.
 * Sockets are accepted with the hibernation API and the heartbeat is answered
 * by the runtime, so an idle connector costs no object time; what the object
 * must know of a connector lives in its socket's attachment, and which
 * connector holds an upstream session in storage (one write per session).
 * Requests in flight live in memory: the object cannot hibernate while one runs.
 */
export class ConnectorDO extends DurableObject<Env> {
	/** Requests in flight, by connector id, then stream id. */
	private readonly carried = new Map<string, Map<number, CarriedRequest>>();
	/** The next stream id of each connector (unique while in flight; restarting at 0 after hibernation is fine). */
	private readonly nextStream = new Map<string, number>();
	/** Connectors whose going away was handled (a close can be seen twice: ours, then the runtime's event). */
	private readonly gone = new Set<string>();
	/** Swapped for controllable ones in tests: the hello deadline and the wait for a slot follow them. */
	clock: Clock = systemClock;
	timers: Timers = systemTimers;
	/** Requests waiting for a busy connector's slot. */
	readonly slots = new SlotQueue(() => this.timers);

	constructor(ctx: DurableObjectState, env: Env) {
		super(ctx, env);
		ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair(HEARTBEAT_PING, HEARTBEAT_PONG));
	}

	/** A connector's upgrade (from the edge, which admitted its token), or a request to carry to a connector. */
	override async fetch(request: Request): Promise<Response> {
		if (request.headers.get("upgrade")?.toLowerCase() === "websocket") return this.accept(request);
		return this.carry(request);
	}

	/** Closes the connectors that authenticated with `tokenId` (it was revoked); how many were closed. */
	async dropToken(tokenId: string): Promise<number> {
		const sockets = this.ctx.getWebSockets(tokenTag(tokenId));
		for (const ws of sockets) {
			this.say(ws, { type: "goodbye", reason: "the connector token was revoked" });
			ws.close(CLOSE_CODES.revoked, "the connector token was revoked");
			await this.wentAway(ws, "revoked", "token revoked");
		}
		return sockets.length;
	}

	/** The connectors online now. */
	async online(): Promise<ConnectorInfo[]> {
		return this.connectors().map(({ state }) => infoOf(state));
	}

	/**
	 * The hello deadline: a socket still waiting for its hello HELLO_TIMEOUT_MS
	 * after its upgrade is closed; the alarm is set again for the next one due.
	 * No timer runs in between, so a quiet object can hibernate.
	 */
	override async alarm(): Promise<void> {
		const now = this.clock.now();
		let next: number | null = null;
		for (const ws of this.ctx.getWebSockets()) {
			const state = stateOf(ws);
			if (state?.phase !== "awaiting-hello" || ws.readyState !== WebSocket.OPEN) continue;
			const deadline = state.since + HELLO_TIMEOUT_MS;
			if (deadline <= now) this.refuse(ws, `no hello within ${HELLO_TIMEOUT_MS / 1000} s of connecting`);
			else next = Math.min(next ?? deadline, deadline);
		}
		if (next !== null) await this.ctx.storage.setAlarm(next);
	}

	override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
		if (message === HEARTBEAT_PING) {
			ws.send(HEARTBEAT_PONG);
			return;
		}
		const state = stateOf(ws);
		if (!state) {
			ws.close(1011, "the gateway lost this connection's record; reconnect");
			return;
		}
		const read = readFrame(message);
		if ("refused" in read) {
			this.refuse(ws, read.refused);
			return;
		}
		const { frame } = read;
		if (state.phase === "awaiting-hello") {
			if (frame.type !== "hello") {
				this.refuse(ws, `the first frame must be hello, not ${frame.type}`);
				return;
			}
			const online: OnlineConnector = {
				...state,
				phase: "online",
				host: frame.host,
				version: frame.version,
				mode: frame.mode,
				maxSessions: frame.maxSessions,
				sessions: 0,
				draining: false,
			};
			saveState(ws, online);
			this.say(ws, { type: "welcome", connectorId: state.id });
			countConnection(this.env, state.server, "connected", (promise) => this.ctx.waitUntil(promise));
			console.log(
				`connector connected: server ${state.server}, connector ${state.id}, token ${state.tokenId}, host ${frame.host}, version ${frame.version}, mode ${frame.mode} (protocol ${CONNECTOR_PROTOCOL})`,
			);
			// Once per connection, never per heartbeat: operators see when each token was last used.
			const { tokenId } = state;
			this.ctx.waitUntil(
				registryStub(this.env)
					.connectorTokenSeen(tokenId, Date.now())
					.then(
						() => undefined,
						(error: unknown) =>
							console.warn(`connector token ${tokenId} not recorded as seen: ${describeError(error)}`),
					),
			);
			return;
		}
		this.heard(ws, state, frame);
	}

	override async webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
		// Completes the closing handshake the connector started (1005/1006 carry no code to echo).
		if (ws.readyState !== WebSocket.CLOSED) ws.close(code === 1005 || code === 1006 ? 1000 : code, closeReason(reason));
		// 1006: the connection broke without a closing handshake; any other code, the connector closed it.
		await this.wentAway(ws, code === 1006 ? "dropped" : "closed", `closed ${code}${reason ? ` (${reason})` : ""}`);
	}

	override async webSocketError(ws: WebSocket, error: unknown): Promise<void> {
		await this.wentAway(ws, "dropped", `failed: ${error instanceof Error ? error.message : String(error)}`);
	}

	/** The upgrade: the socket is accepted for hibernation, tagged with its connector and token. */
	private async accept(request: Request): Promise<Response> {
		const tokenId = request.headers.get(TOKEN_ID_HEADER);
		const server = request.headers.get(SERVER_HEADER);
		if (!tokenId || !server) return new Response("a connector dials through the gateway's edge", { status: 400 });
		const { 0: client, 1: socket } = new WebSocketPair();
		const id = `cn_${randomToken(9)}`;
		this.ctx.acceptWebSocket(socket, [connectorTag(id), tokenTag(tokenId)]);
		const since = this.clock.now();
		saveState(socket, { phase: "awaiting-hello", id, tokenId, server, since });
		// One alarm for the earliest hello due; a connector that says hello in time leaves it to find nothing.
		const deadline = since + HELLO_TIMEOUT_MS;
		const alarm = await this.ctx.storage.getAlarm();
		if (alarm === null || alarm > deadline) await this.ctx.storage.setAlarm(deadline);
		return new Response(null, { status: 101, webSocket: client });
	}

	/** A frame of a connector that said hello. */
	private heard(ws: WebSocket, state: OnlineConnector, frame: ConnectorFrame): void {
		if (frame.type === "hello") {
			this.refuse(ws, "hello is sent once, first");
			return;
		}
		if (frame.type === "draining") {
			saveState(ws, { ...state, draining: true });
			return;
		}
		const carried = this.carried.get(state.id)?.get(frame.id);
		// A stream the gateway cancelled, or one it never opened: nothing waits for it.
		if (!carried) return;
		if (frame.type === "response") carried.respond(frame.status, frame.headers);
		else if (frame.type === "chunk") carried.chunk(frame.data);
		else if (frame.type === "end") carried.end();
		else carried.fail(`the connector failed the request: ${frame.message}`);
		if (carried.done) this.finish(state.id, frame.id);
	}

	/** Closes a connector that broke the protocol (1008, the sentence as reason). */
	private refuse(ws: WebSocket, sentence: string): void {
		const state = stateOf(ws);
		console.warn(`connector ${state?.id ?? "unknown"} of ${state?.server ?? "unknown"} refused: ${sentence}`);
		ws.close(CLOSE_CODES.policy, closeReason(sentence));
		void this.wentAway(ws, "dropped", `refused: ${sentence}`);
	}

	/** A connector left: its calls in flight fail now (never sent again), and its sessions are forgotten. */
	private async wentAway(ws: WebSocket, event: Exclude<ConnectorEvent, "connected">, why: string): Promise<void> {
		const state = stateOf(ws);
		if (!state || this.gone.has(state.id)) return;
		this.gone.add(state.id);
		const inFlight = this.carried.get(state.id);
		this.carried.delete(state.id);
		for (const carried of inFlight?.values() ?? []) carried.wentAway();
		this.slots.gone(state.id);
		if (state.phase !== "online") return;
		countConnection(this.env, state.server, event, (promise) => this.ctx.waitUntil(promise));
		console.log(
			`connector disconnected: server ${state.server}, connector ${state.id}, token ${state.tokenId}, host ${state.host}: ${why}`,
		);
		const held = await this.ctx.storage.list({ prefix: sessionKey("") });
		const forgotten = [...held].filter(([, connector]) => connector === state.id).map(([key]) => key);
		// One delete takes at most 128 keys; a connector may have held more sessions than that.
		for (let at = 0; at < forgotten.length; at += MAX_KEYS_PER_DELETE) {
			await this.ctx.storage.delete(forgotten.slice(at, at + MAX_KEYS_PER_DELETE));
		}
	}

	/** The connectors that said hello and are still open. */
	private connectors(): Array<{ ws: WebSocket; state: OnlineConnector }> {
		const found: Array<{ ws: WebSocket; state: OnlineConnector }> = [];
		for (const ws of this.ctx.getWebSockets()) {
			const state = onlineState(ws);
			if (state && !this.gone.has(state.id) && ws.readyState === WebSocket.OPEN) found.push({ ws, state });
		}
		return found;
	}

	/** One upstream request, carried to the connector that holds its session (or the least busy, for a new one). */
	private async carry(request: Request): Promise<Response> {
		const address = connectorAddressOf(request.url);
		const server = address?.server ?? "unknown";
		const method = request.method;
		if (method !== "POST" && method !== "GET" && method !== "DELETE") {
			return refusal(405, `A connector carries POST, GET and DELETE, not ${method}.`, "not_carried");
		}
		const metadata = address?.part === "resource-metadata";
		if (metadata && method !== "GET") {
			return refusal(405, `A server's protected resource metadata is read with GET, not ${method}.`, "not_carried");
		}
		const body = method === "POST" ? await request.text() : undefined;
		const headers: Array<[string, string]> = [];
		for (const [name, value] of request.headers) {
			if (!NOT_CARRIED.has(name) && !name.startsWith("cf-")) headers.push([name, value]);
		}
		const carriedParts: Omit<RequestFrame, "type" | "id"> = {
			method,
			...(metadata ? { path: RESOURCE_METADATA_PATH } : {}),
			headers,
			...(body === undefined ? {} : { body }),
		};
		// Before a connector is chosen or waited for: a request that cannot fit a frame is never sent.
		if (frameTooLarge(writeFrame({ type: "request", id: WIDEST_STREAM_ID, ...carriedParts }))) {
			return refusal(
				413,
				`The request is larger than a connector frame (${MAX_FRAME_BYTES} bytes), so it was not sent to '${server}'.`,
				"too_large",
			);
		}
		const sessionId = request.headers.get("mcp-session-id");
		const digest = sessionId === null ? null : await sha256Hex(sessionId);
		const picked =
			digest === null
				? await this.pickForNewSession(server, request.signal)
				: await this.holderOf(digest, server, request.signal);
		if (picked instanceof Response) return picked;
		const { ws, state } = picked;
		const id = this.nextStream.get(state.id) ?? 0;
		this.nextStream.set(state.id, id + 1);
		const streams = this.carried.get(state.id) ?? new Map<number, CarriedRequest>();
		this.carried.set(state.id, streams);
		const cancel = () => {
			this.finish(state.id, id);
			if (ws.readyState === WebSocket.OPEN) this.say(ws, { type: "cancel", id });
		};
		const carried = new CarriedRequest(cancel);
		streams.set(id, carried);
		request.signal.addEventListener("abort", () => {
			if (carried.done) return;
			carried.abandon();
			cancel();
		});
		ws.send(writeFrame({ type: "request", id, ...carriedParts }));
		const response = await carried.answer;
		if (carried.done) this.finish(state.id, id);
		if (!response.headers.has(REFUSAL_HEADER)) await this.noteSession(ws, method, digest, response);
		return response;
	}

	/**
	 * The connector holding the session of `digest`, with a slot for one more
	 * request: when all its slots are taken the request waits for one (up to
	 * SLOT_WAIT_MS, in arrival order). Its connector gone, the session has
	 * expired, as an upstream's would.
	 */
	private async holderOf(digest: string, server: string, signal: AbortSignal): Promise<Chosen | Response> {
		// Storage is a boundary too: what is not a connector id holds no session.
		const stored: unknown = await this.ctx.storage.get(sessionKey(digest));
		const holder = typeof stored === "string" ? stored : null;
		const chosen = this.connectors().find(({ state }) => state.id === holder);
		if (!chosen) return sessionExpired();
		if (this.inFlight(chosen.state.id) < MAX_IN_FLIGHT_PER_CONNECTOR) return chosen;
		const waited = await this.waitForSlot(chosen.state.id, signal);
		if (waited === "ready") return chosen;
		if (waited === "gone") return sessionExpired();
		return this.notWaited(waited, `The connector holding this session of '${server}'`);
	}

	/**
	 * The least busy connector for a new session. When every open one is at its
	 * cap, the request waits for a slot of the one with the fewest waiting (then
	 * sessions); if that one goes away meanwhile, nothing was sent, so the choice
	 * is made again.
	 */
	private async pickForNewSession(server: string, signal: AbortSignal): Promise<Chosen | Response> {
		for (;;) {
			const online = this.connectors();
			const choice = chooseConnector(
				online.map(({ state }) => ({
					id: state.id,
					sessions: state.sessions,
					inFlight: this.inFlight(state.id),
					draining: state.draining,
				})),
			);
			if (choice === "none-online") return refusal(503, noConnector(server), "no_connector_online");
			if (choice === "all-draining") return refusal(503, allDraining(server), "busy");
			if (choice !== "all-busy") {
				const chosen = online.find(({ state }) => state.id === choice.id);
				if (chosen) return chosen;
				return refusal(503, noConnector(server), "no_connector_online");
			}
			const queued = online
				.filter(({ state }) => !state.draining)
				.sort(
					(a, b) =>
						this.slots.waitersOf(a.state.id) - this.slots.waitersOf(b.state.id) || a.state.sessions - b.state.sessions,
				)[0];
			if (!queued) return refusal(503, noConnector(server), "no_connector_online");
			const waited = await this.waitForSlot(queued.state.id, signal);
			if (waited === "ready") return queued;
			if (waited !== "gone") return this.notWaited(waited, `Every connector of server '${server}'`);
		}
	}

	/** Waits for a slot of `connectorId`; `ready` means the slot is this request's (taken here). */
	private async waitForSlot(connectorId: string, signal: AbortSignal): Promise<SlotWait> {
		const waited = await this.slots.wait(connectorId, signal);
		if (waited !== "ready") return waited;
		this.slots.take(connectorId);
		// The slot was handed over as the connector left: nothing waits on that socket any more.
		return this.gone.has(connectorId) ? "gone" : "ready";
	}

	/** The refusal of a request that waited for a slot and got none. */
	private notWaited(waited: "timeout" | "aborted", who: string): Response {
		if (waited === "aborted") return refusal(499, "the caller went away", "failed");
		return refusal(
			503,
			`${who} had ${MAX_IN_FLIGHT_PER_CONNECTOR} requests in flight, its limit, for ${SLOT_WAIT_MS / 1000} s; the request was not sent. Retry shortly.`,
			"busy",
		);
	}

	/** A request of `connectorId` ended: its slot goes to the first request waiting for one. */
	private finish(connectorId: string, id: number): void {
		if (this.carried.get(connectorId)?.delete(id)) this.slots.freed(connectorId);
	}

	/** Session affinity: an initialize answered with a session id binds it to the connector; a DELETE answered unbinds it. */
	private async noteSession(ws: WebSocket, method: string, digest: string | null, response: Response): Promise<void> {
		const state = onlineState(ws);
		if (!state) return;
		const opened = response.headers.get("mcp-session-id");
		if (digest === null && opened !== null && response.ok) {
			await this.ctx.storage.put(sessionKey(await sha256Hex(opened)), state.id);
			saveState(ws, { ...state, sessions: state.sessions + 1 });
		} else if (digest !== null && method === "DELETE" && response.status < 500) {
			await this.ctx.storage.delete(sessionKey(digest));
			saveState(ws, { ...state, sessions: Math.max(0, state.sessions - 1) });
		}
	}

	/** Requests in flight on `connectorId`, counting slots handed to waiters about to send. */
	private inFlight(connectorId: string): number {
		return (this.carried.get(connectorId)?.size ?? 0) + this.slots.reservedFor(connectorId);
	}

	private say(ws: WebSocket, frame: Parameters<typeof writeFrame>[0]): void {
		ws.send(writeFrame(frame));
	}
}

/** What an upstream answers for a session it does not know: the gateway re-initializes (reads only) elsewhere. */
function sessionExpired(): Response {
	return Response.json(
		{ jsonrpc: "2.0", id: null, error: { code: -32001, message: "Session not found: its connector went away" } },
		{ status: 404 },
	);
}

function allDraining(server: string): string {
	return `Every connector of server '${server}' is shutting down and takes no new sessions; retry once one is back.`;
}

/**
 * Whether a frame's text exceeds MAX_FRAME_BYTES of UTF-8. A UTF-16 unit takes 1 to 3 bytes, so
 * only a frame between a third of the cap and the cap in length needs encoding to tell.
 */
function frameTooLarge(frame: string): boolean {
	if (frame.length > MAX_FRAME_BYTES) return true;
	if (frame.length * 3 <= MAX_FRAME_BYTES) return false;
	return new TextEncoder().encode(frame).byteLength > MAX_FRAME_BYTES;
}

type RequestFrame = z.infer<typeof RequestFrameSchema>;
type Chosen = { ws: WebSocket; state: OnlineConnector };

/** The object of the server `name`. */
export function connectorObject(env: Pick<Env, "CONNECTORS">, name: string): DurableObjectStub<ConnectorDO> {
	return env.CONNECTORS.get(env.CONNECTORS.idFromName(name));
}
