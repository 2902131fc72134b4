import { sha256Hex } from "../primitives/crypto.ts";
import type { ServerRecord } from "./schemas.ts";
import { DEFAULT_PINNING } from "./tool-pins.ts";

/**
 * What identifies a server's configuration: a change of URL, headers, timeout,
 * protocol or auth changes it. "auto" and "operator" add nothing, so servers
 * registered before those fields existed keep their digest, and their live
 * sessions are not told of a change that did not happen.
 */
export function configDigest(
	server: Pick<ServerRecord, "url" | "headers" | "timeoutSeconds" | "protocol"> & {
		auth?: ServerRecord["auth"] | undefined;
		tools?: ServerRecord["tools"] | undefined;
		prompts?: ServerRecord["prompts"] | undefined;
		resources?: ServerRecord["resources"] | undefined;
		pinning?: ServerRecord["pinning"] | undefined;
	},
): Promise<string> {
	const parts: unknown[] = [server.url, server.headers, server.timeoutSeconds];
	if (server.protocol !== "auto") parts.push(server.protocol);
	if (server.auth !== undefined && server.auth.type !== "operator") parts.push({ auth: server.auth });
	if (server.tools !== undefined && server.tools !== null) parts.push({ tools: server.tools });
	if (server.prompts !== undefined && server.prompts !== null) parts.push({ prompts: server.prompts });
	if (server.resources !== undefined && server.resources !== null) parts.push({ resources: server.resources });
	if (server.pinning !== undefined && server.pinning !== DEFAULT_PINNING) parts.push({ pinning: server.pinning });
	return sha256Hex(JSON.stringify(parts));
}
