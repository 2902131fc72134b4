import { z } from "zod";
import type { ConnectorInfo } from "./connector-info.ts";

/*
 * What the object knows of each connector, kept in its WebSocket's attachment
 * (`serializeAttachment`, at most 2 KB) so it survives hibernation: the
 * socket is the connector's record, and closing it forgets the connector.
 */

const Awaiting = z.strictObject({
	phase: z.literal("awaiting-hello"),
	id: z.string(),
	tokenId: z.string(),
	server: z.string(),
	since: z.number(),
});

const Online = Awaiting.extend({
	phase: z.literal("online"),
	host: z.string(),
	version: z.string(),
	mode: z.enum(["stdio", "http"]),
	maxSessions: z.number().int(),
	/** Upstream sessions it holds (answered an initialize with a session id, not yet deleted). */
	sessions: z.number().int().nonnegative(),
	/** It said `draining`: no new sessions go to it. */
	draining: z.boolean(),
});

export const ConnectorStateSchema = z.discriminatedUnion("phase", [Awaiting, Online]);
export type ConnectorState = z.infer<typeof ConnectorStateSchema>;
export type OnlineConnector = z.infer<typeof Online>;

/** The state of the connector on `ws`, or null when its attachment is not one (a socket of nothing). */
export function stateOf(ws: WebSocket): ConnectorState | null {
	const parsed = ConnectorStateSchema.safeParse(ws.deserializeAttachment());
	return parsed.success ? parsed.data : null;
}

/** The connector on `ws` when it has said hello. */
export function onlineState(ws: WebSocket): OnlineConnector | null {
	const state = stateOf(ws);
	return state?.phase === "online" ? state : null;
}

export function saveState(ws: WebSocket, state: ConnectorState): void {
	ws.serializeAttachment(state);
}

/** How operators see a connector. */
export function infoOf(state: OnlineConnector): ConnectorInfo {
	const { id, tokenId, since, host, version, sessions } = state;
	return { id, tokenId, since, host, version, sessions };
}

/** A socket's tags: its connector id and its token id, so the object finds them after hibernation. */
export function connectorTag(id: string): string {
	return `connector:${id}`;
}
export function tokenTag(tokenId: string): string {
	return `token:${tokenId}`;
}
