import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env.ts";
import { describeError } from "../mcp/gateway-error.ts";
import { randomToken, sha256Hex } from "../primitives/crypto.ts";
import { connectorServerOf } from "../registry/connector-tokens.ts";
import { registryStub } from "../registry/registry-stub.ts";
import { CarriedRequest } from "./carried-request.ts";
import { type Candidate, chooseConnector } from "./connector-choice.ts";
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
} from "./frames.ts";

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
			await this.wentAway(ws, "token revoked");
		}
		return sockets.length;
	}

	/** The connectors online now. */
	async online(): Promise<ConnectorInfo[]> {
		return this.connectors().map(({ state }) => infoOf(state));
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
		await this.wentAway(ws, `closed ${code}${reason ? ` (${reason})` : ""}`);
	}

	override async webSocketError(ws: WebSocket, error: unknown): Promise<void> {
		await this.wentAway(ws, `failed: ${error instanceof Error ? error.message : String(error)}`);
	}

	/** The upgrade: the socket is accepted for hibernation, tagged with its connector and token. */
	private accept(request: Request): Response {
		const tokenId = request.headers.get(TOKEN_ID_HEADER);
		const server = request.headers.get(SERVER_HEADER);
		if (!tokenId || !server) return new Response("a connector dials through the gateway's edge", { status: 400 });
		const { 0: client, 1: socket } = new WebSocketPair();
		const id = `cn_${randomToken(9)}`;
		this.ctx.acceptWebSocket(socket, [connectorTag(id), tokenTag(tokenId)]);
		saveState(socket, { phase: "awaiting-hello", id, tokenId, server, since: Date.now() });
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
		if (carried.done) this.carried.get(state.id)?.delete(frame.id);
	}

	/** Closes a connector that broke the protocol (1008, the sentence as reason). */
	private refuse(ws: WebSocket, sentence: string): void {
		const state = stateOf(ws);
		console.warn(`connector ${state?.id ?? "unknown"} of ${state?.server ?? "unknown"} refused: ${sentence}`);
		ws.close(CLOSE_CODES.policy, closeReason(sentence));
		void this.wentAway(ws, `refused: ${sentence}`);
	}

	/** A connector left: its calls in flight fail now (never sent again), and its sessions are forgotten. */
	private async wentAway(ws: WebSocket, why: string): Promise<void> {
		const state = stateOf(ws);
		if (!state || this.gone.has(state.id)) return;
		this.gone.add(state.id);
		const inFlight = this.carried.get(state.id);
		this.carried.delete(state.id);
		for (const carried of inFlight?.values() ?? []) carried.wentAway();
		if (state.phase !== "online") return;
		console.log(
			`connector disconnected: server ${state.server}, connector ${state.id}, token ${state.tokenId}, host ${state.host}: ${why}`,
		);
		const held = await this.ctx.storage.list<string>({ prefix: sessionKey("") });
		const forgotten = [...held].filter(([, connector]) => connector === state.id).map(([key]) => key);
		if (forgotten.length > 0) await this.ctx.storage.delete(forgotten);
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
		const server = connectorServerOf(request.url) ?? "unknown";
		const method = request.method;
		if (method !== "POST" && method !== "GET" && method !== "DELETE") {
			return refusal(405, `A connector carries POST, GET and DELETE, not ${method}.`, "not_carried");
		}
		const sessionId = request.headers.get("mcp-session-id");
		const digest = sessionId === null ? null : await sha256Hex(sessionId);
		const online = this.connectors();
		let chosen: { ws: WebSocket; state: OnlineConnector } | undefined;
		if (digest !== null) {
			const holder = await this.ctx.storage.get<string>(sessionKey(digest));
			chosen = online.find(({ state }) => state.id === holder);
			// Its connector is gone (or never held it): the session has expired, as an upstream's would.
			if (!chosen) return sessionExpired();
			if (this.inFlight(chosen.state.id) >= MAX_IN_FLIGHT_PER_CONNECTOR) {
				return refusal(
					503,
					`The connector holding this session of '${server}' has ${MAX_IN_FLIGHT_PER_CONNECTOR} requests in flight, its limit; retry shortly.`,
					"busy",
				);
			}
		} else {
			const candidates: Candidate[] = online.map(({ state }) => ({
				id: state.id,
				sessions: state.sessions,
				inFlight: this.inFlight(state.id),
				draining: state.draining,
			}));
			const choice = chooseConnector(candidates);
			if (typeof choice === "string") {
				return refusal(
					503,
					noChoiceSentence(server, choice),
					choice === "none-online" ? "no_connector_online" : "busy",
				);
			}
			chosen = online.find(({ state }) => state.id === choice.id);
			if (!chosen) return refusal(503, noConnector(server), "no_connector_online");
		}
		const body = method === "POST" ? await request.text() : undefined;
		const { ws, state } = chosen;
		const id = this.nextStream.get(state.id) ?? 0;
		this.nextStream.set(state.id, id + 1);
		const headers: Array<[string, string]> = [];
		for (const [name, value] of request.headers) {
			if (!NOT_CARRIED.has(name) && !name.startsWith("cf-")) headers.push([name, value]);
		}
		const frame = writeFrame({ type: "request", id, method, headers, ...(body === undefined ? {} : { body }) });
		if (frame.length > MAX_FRAME_BYTES && new TextEncoder().encode(frame).byteLength > MAX_FRAME_BYTES) {
			return refusal(
				413,
				`The request is larger than a connector frame (${MAX_FRAME_BYTES} bytes), so it was not sent to '${server}'.`,
				"too_large",
			);
		}
		const streams = this.carried.get(state.id) ?? new Map<number, CarriedRequest>();
		this.carried.set(state.id, streams);
		const cancel = () => {
			streams.delete(id);
			if (ws.readyState === WebSocket.OPEN) this.say(ws, { type: "cancel", id });
		};
		const carried = new CarriedRequest(cancel);
		streams.set(id, carried);
		request.signal.addEventListener("abort", () => {
			if (carried.done) return;
			carried.abandon();
			cancel();
		});
		ws.send(frame);
		const response = await carried.answer;
		if (carried.done) streams.delete(id);
		if (!response.headers.has(REFUSAL_HEADER)) await this.noteSession(ws, method, digest, response);
		return response;
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

	private inFlight(connectorId: string): number {
		return this.carried.get(connectorId)?.size ?? 0;
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

function noChoiceSentence(server: string, why: "none-online" | "all-draining" | "all-busy"): string {
	if (why === "none-online") return noConnector(server);
	if (why === "all-draining")
		return `Every connector of server '${server}' is shutting down and takes no new sessions; retry once one is back.`;
	return `Every connector of server '${server}' has ${MAX_IN_FLIGHT_PER_CONNECTOR} requests in flight, its limit; retry shortly.`;
}

/** The object of the server `name`. */
export function connectorObject(env: Pick<Env, "CONNECTORS">, name: string): DurableObjectStub<ConnectorDO> {
	return env.CONNECTORS.get(env.CONNECTORS.idFromName(name));
}
