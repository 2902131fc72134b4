import type { JSONRPCMessage, JSONRPCNotification, JSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";
import type { Envelope } from "../mcp/2026-07-28/modern-request.ts";
import type { OpenSessionInput } from "./session-open.ts";

/*
 * The shapes the SessionDO's RPC surface takes and gives, apart from the
 * class (which needs the Workers runtime), so the session's rooms and
 * Node-side programs can name them without importing the Durable Object.
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

export interface SessionStats {
	storageReads: number;
	storageWrites: number;
	/** Rechecks made (each reads the registry's read path). */
	registryReads: number;
	/** Workers KV reads those rechecks made. */
	kvReads: number;
	upstreamRequests: number;
	inFlight: number;
	/** Storage writes of the event buffer (stream events kept for resumption, and their pruning). */
	eventBufferWrites: number;
	/** Wall time this object was kept active (an RPC running, or a call's reply being read). */
	activeMs: number;
}
