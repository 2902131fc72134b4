import { LATEST_PROTOCOL_VERSION, type Tool } from "@modelcontextprotocol/sdk/types.js";
import { GATEWAY_SERVER_INFO } from "../mcp/aggregate.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import { INITIALIZE } from "../mcp/methods.ts";
import type { UpstreamProtocol } from "../mcp/upstream-protocol.ts";
import { type FetchLike, UpstreamConnection } from "./upstream-connection.ts";
import type { UpstreamTarget } from "./upstream-target.ts";

/** An operator waits for the listing: it answers within this, whatever the server's own timeout. */
const LISTING_TIMEOUT_MS = 10_000;

/**
 * The server's tools as it lists them now, for its operator (the admin API's
 * pinning view and approvals): a session of the gateway's own, opened in the
 * era the server speaks (the handshake, or `server/discover` for a
 * 2026-07-28 server), every page of tools/list, then closed. Throws the
 * GatewayError of the failure (unreachable, refusing, timing out).
 */
export async function listUpstreamTools(
	target: UpstreamTarget,
	protocol: UpstreamProtocol = "auto",
	fetcher?: FetchLike,
): Promise<Tool[]> {
	const bounded = { ...target, timeoutMs: Math.min(target.timeoutMs, LISTING_TIMEOUT_MS) };
	const connection = new UpstreamConnection(bounded, fetcher, () => protocol);
	const params = { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: GATEWAY_SERVER_INFO };
	const opened = await connection.initialize({
		message: { jsonrpc: "2.0", id: "gw-admin-tools", method: INITIALIZE, params },
		params,
	});
	if (!opened.session) {
		const reason = "error" in opened.reply ? opened.reply.error.message : "no result";
		throw new GatewayError("upstream_error", `Upstream server '${target.name}' refused initialize: ${reason}.`, {
			server: target.name,
		});
	}
	try {
		return await connection.listAll(opened.session, "tools");
	} finally {
		await connection.close(opened.session);
	}
}
