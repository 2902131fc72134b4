import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { Envelope } from "../mcp/2026-07-28/modern-request.ts";
import type { SessionRequest } from "../mcp/client-message.ts";
import type { OpenSessionInput } from "./session-open.ts";

/*
 * The shapes the SessionDO's RPC surface takes and gives, apart from the
 * class, so the session's rooms can name them without importing the Durable
 * Object (its cost figures: `session-stats.ts`).
 */

/** A 2026-07-28 client's request, with what opening its session needs. */
export interface ModernSessionInput extends Omit<OpenSessionInput, "request" | "params"> {
	envelope: Envelope;
	/** Parsed once at the edge; structured clone brings it here as it is. */
	request: SessionRequest;
	/** Live sessions the key may hold. */
	cap: number;
}

export interface OpenSessionResult {
	opened: boolean;
	reply: JSONRPCMessage;
}

/** Client messages forwarded into a live session, parsed once at the edge (`client-message.ts`). */
export type { SessionMessage } from "../mcp/client-message.ts";
