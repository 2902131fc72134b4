import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env.ts";

/** A connector online for a server, as operators see it (`GET /admin/servers/:name`). */
export interface ConnectorInfo {
	id: string;
	tokenId: string;
	/** When it connected (ms since the epoch). */
	since: number;
	host: string;
	version: string;
	/** Upstream sessions it holds now. */
	sessions: number;
}

/**
 * One per server registered with `"connector": {}` (named by the server):
 * the WebSockets its connectors dialled, and the server's traffic over them.
 */
export class ConnectorDO extends DurableObject<Env> {
	/** Closes the connectors that authenticated with `tokenId` (it was revoked); how many were closed. */
	async dropToken(_tokenId: string): Promise<number> {
		return 0;
	}

	/** The connectors online now. */
	async online(): Promise<ConnectorInfo[]> {
		return [];
	}
}

/** The object of the server `name`. */
export function connectorObject(env: Env, name: string): DurableObjectStub<ConnectorDO> {
	return env.CONNECTORS.get(env.CONNECTORS.idFromName(name));
}
