import type { ApiKeyRecord } from "./schemas.ts";

/** Whether a key may use a server: keys without a server list may use all. */
export function keyMayUseServer(key: Pick<ApiKeyRecord, "servers">, server: string): boolean {
	return key.servers === null || key.servers.includes(server);
}
