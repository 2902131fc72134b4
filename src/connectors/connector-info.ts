/** A connector online for a server, as operators see it (`GET /admin/servers/:name`, the server check). */
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
