import { z } from "zod";

/*
 * The connector protocol: what a connector (`mcpgw connect`, next to the
 * servers it serves) and its server's ConnectorDO say to each other over one
 * WebSocket the connector dialled. The gateway sends the HTTP requests it
 * would send an upstream over streamable HTTP; the connector answers each
 * with a status, headers and a body streamed in chunks. Everything is a JSON
 * text frame, except the heartbeat: the literal texts "heartbeat" (connector)
 * and "heartbeat-ack" (gateway), which the object answers without waking from
 * hibernation (not JSON-RPC's `ping`: nothing of MCP travels outside a frame).
 *
 * Both sides parse every frame with these schemas and close the socket
 * (code 1008, with the schema's sentence) on one that does not parse.
 */

/** Version of this protocol; a connector says which it speaks in `hello`. */
export const CONNECTOR_PROTOCOL = 1;

/** The heartbeat texts. Not JSON: the runtime answers them without waking the object. */
export const HEARTBEAT_PING = "heartbeat";
export const HEARTBEAT_PONG = "heartbeat-ack";

/** A frame is at most this many bytes of UTF-8; a body is split into chunks that fit. */
export const MAX_FRAME_BYTES = 1024 * 1024;

/** The most requests one connector has in flight; the next waits (backpressure) or is refused. */
export const MAX_IN_FLIGHT_PER_CONNECTOR = 64;

/** The path a connector dials: `GET /connector/<server>` with `Upgrade: websocket`. */
export const CONNECTOR_PATH = "/connector";

/** A request's number on its socket, chosen by the gateway, unique while in flight. */
const StreamId = z.number().int().nonnegative();

/** Header name/value pairs, in order (several of one name allowed). */
const HeaderPairs = z.array(z.tuple([z.string().max(256), z.string().max(16 * 1024)])).max(128);

/** Connector → gateway, first frame after the upgrade: who it is. */
export const HelloFrameSchema = z.strictObject({
	type: z.literal("hello"),
	protocol: z.literal(CONNECTOR_PROTOCOL),
	/** The connector's version (`mcpgw --version`). */
	version: z.string().max(64),
	/** The machine's host name, shown to operators. */
	host: z.string().max(255),
	/** "stdio" (a command per session) or "http" (`--upstream`). */
	mode: z.enum(["stdio", "http"]),
	/** How many upstream sessions it will hold at once (stdio: children). */
	maxSessions: z.number().int().positive().max(10_000),
});

/** Gateway → connector, after `hello`: accepted, and under which id operators see it. */
export const WelcomeFrameSchema = z.strictObject({
	type: z.literal("welcome"),
	connectorId: z.string().max(64),
});

/**
 * The documents of a server a request may address beside its MCP endpoint: its RFC 9728 protected
 * resource metadata, which the gateway reads to connect a person's account (`auth: oauth`).
 */
export const WELL_KNOWN_PATHS = ["/.well-known/oauth-protected-resource"] as const;

/** Gateway → connector: one HTTP request of streamable HTTP (POST, GET or DELETE on the MCP endpoint). */
export const RequestFrameSchema = z.strictObject({
	type: z.literal("request"),
	id: StreamId,
	method: z.enum(["POST", "GET", "DELETE"]),
	/**
	 * Absent: the MCP endpoint. Present: a GET of that well-known document of the server, which an
	 * `--upstream` connector reads at its upstream's address (RFC 9728 path insertion) and a stdio
	 * connector answers 404 (a child publishes none).
	 */
	path: z.enum(WELL_KNOWN_PATHS).optional(),
	headers: HeaderPairs,
	/** The body as text (MCP bodies are JSON); absent for GET and DELETE. */
	body: z.string().optional(),
});

/** Gateway → connector: the request's caller went away (or its deadline passed); stop and answer nothing more. */
export const CancelFrameSchema = z.strictObject({
	type: z.literal("cancel"),
	id: StreamId,
});

/** Gateway → connector: stop taking new sessions and close (a revoked token, or the server deleted). */
export const GoodbyeFrameSchema = z.strictObject({
	type: z.literal("goodbye"),
	reason: z.string().max(1024),
});

/** Connector → gateway: a request's status and headers (sent once, before any chunk). */
export const ResponseFrameSchema = z.strictObject({
	type: z.literal("response"),
	id: StreamId,
	status: z.number().int().min(100).max(599),
	headers: HeaderPairs,
});

/** Connector → gateway: the next piece of a response's body, as text. */
export const ChunkFrameSchema = z.strictObject({
	type: z.literal("chunk"),
	id: StreamId,
	data: z.string(),
});

/** Connector → gateway: the response's body ended. */
export const EndFrameSchema = z.strictObject({
	type: z.literal("end"),
	id: StreamId,
});

/** Connector → gateway: the request failed before or during its response (its server crashed, refused, timed out). */
export const FailFrameSchema = z.strictObject({
	type: z.literal("fail"),
	id: StreamId,
	message: z.string().max(4096),
});

/** Connector → gateway: it stops taking new sessions (SIGTERM); calls in flight still finish. */
export const DrainingFrameSchema = z.strictObject({
	type: z.literal("draining"),
});

export const GatewayFrameSchema = z.discriminatedUnion("type", [
	WelcomeFrameSchema,
	RequestFrameSchema,
	CancelFrameSchema,
	GoodbyeFrameSchema,
]);
export type GatewayFrame = z.infer<typeof GatewayFrameSchema>;

export const ConnectorFrameSchema = z.discriminatedUnion("type", [
	HelloFrameSchema,
	ResponseFrameSchema,
	ChunkFrameSchema,
	EndFrameSchema,
	FailFrameSchema,
	DrainingFrameSchema,
]);
export type ConnectorFrame = z.infer<typeof ConnectorFrameSchema>;

/** WebSocket close codes the two sides use, beside 1000 (normal) and 1001 (going away). */
export const CLOSE_CODES = {
	/** A frame that does not parse, or one too large. */
	policy: 1008,
	/** The token was revoked or the server deleted. */
	revoked: 4001,
} as const;
