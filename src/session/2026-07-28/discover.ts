import { InitializeResultSchema, type JSONRPCMessage, type RequestId } from "@modelcontextprotocol/sdk/types.js";
import { SERVER_INFO_META_KEY } from "@modelcontextprotocol/server";
import { withTasksExtension } from "../../mcp/2026-07-28/tasks-extension.ts";
import { MODERN_PROTOCOL_VERSIONS } from "../../mcp/protocol-version.ts";
import type { SessionBinding } from "../binding.ts";

/** What a session's initialize reply says of its server, kept for `server/discover`. */
export function helloOf(reply: JSONRPCMessage): SessionBinding["server"] {
	if (!("result" in reply)) return undefined;
	const result = InitializeResultSchema.safeParse(reply.result);
	if (!result.success) return undefined;
	const { capabilities, serverInfo, instructions } = result.data;
	return instructions === undefined ? { capabilities, serverInfo } : { capabilities, serverInfo, instructions };
}

/**
 * `server/discover` answered from the session: the upstream's (or the
 * aggregate's merged) capabilities and identity, in the 2026-07-28 shape.
 * Private and not to be reused: it describes this principal's endpoint.
 */
export function discoverReply(binding: SessionBinding, id: RequestId): Response {
	const server = binding.server ?? { capabilities: {}, serverInfo: { name: "mcp-edge-gateway", version: "0" } };
	const result: Record<string, unknown> = {
		resultType: "complete",
		supportedVersions: MODERN_PROTOCOL_VERSIONS,
		// Tasks are the extension's in this era (never the 2025 `tasks` capability), and the session holds them.
		capabilities: withTasksExtension(withoutLegacyTasks(server.capabilities)),
		_meta: { [SERVER_INFO_META_KEY]: server.serverInfo },
		ttlMs: 0,
		cacheScope: "private",
	};
	if (server.instructions !== undefined) result.instructions = server.instructions;
	return Response.json({ jsonrpc: "2.0", id, result });
}

function withoutLegacyTasks(capabilities: Record<string, unknown>): Record<string, unknown> {
	const { tasks: _tasks, ...others } = capabilities;
	return others;
}
