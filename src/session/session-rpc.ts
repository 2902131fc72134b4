import type { JSONRPCMessage, JSONRPCNotification, JSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";
import type { Envelope } from "../mcp/2026-07-28/modern-request.ts";
import type { OpenSessionInput } from "./session-open.ts";

/*
 * The shapes the SessionDO's RPC surface takes and gives, apart from the
 * class, so the session's rooms can name them without importing the Durable
 * Object (its cost figures: `session-stats.ts`).
 */

/** A 2026-07-28 client's request, with what opening its session needs. */
export interface ModernSessionInput extends Omit<OpenSessionInput, "request" | "params"> {
	envelope: Envelope;
	message: JSONRPCRequest;
	/** Live sessions the key may hold. */
	cap: number;
}

export interface OpenSessionResult {
	opened: boolean;
	reply: JSONRPCMessage;
}

/** Client messages forwarded into a live session. */
export type SessionMessage =
	| { kind: "request"; message: JSONRPCRequest }
	| { kind: "notification"; message: JSONRPCNotification }
	| { kind: "response"; message: JSONRPCMessage };
