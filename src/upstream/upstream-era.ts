import { DiscoverResultSchema } from "@modelcontextprotocol/core";
import { startDeadline } from "./deadline.ts";
import { fetchUpstream } from "./upstream-fetch.ts";
import type { UpstreamTarget } from "./upstream-target.ts";

export type UpstreamEra = "legacy" | "modern";

/** Provisional: probes `server/discover` every time (replaced by the cached, pinnable lookup). */
export async function upstreamEra(
	target: UpstreamTarget,
	_server: { name: string; generation: string },
): Promise<UpstreamEra> {
	const headers = new Headers(target.headers);
	headers.set("accept", "application/json, text/event-stream");
	headers.set("content-type", "application/json");
	headers.set("mcp-protocol-version", "2026-07-28");
	headers.set("mcp-method", "server/discover");
	const body = JSON.stringify({
		jsonrpc: "2.0",
		id: 1,
		method: "server/discover",
		params: {
			_meta: {
				"io.modelcontextprotocol/protocolVersion": "2026-07-28",
				"io.modelcontextprotocol/clientInfo": { name: "mcp-edge-gateway", version: "0.1.0" },
				"io.modelcontextprotocol/clientCapabilities": {},
			},
		},
	});
	const deadline = startDeadline(target.timeoutMs);
	try {
		const response = await fetchUpstream(target, { method: "POST", headers, body }, deadline);
		if (!response.ok || !(response.headers.get("content-type") ?? "").includes("json")) {
			await response.body?.cancel();
			return "legacy";
		}
		const reply: unknown = await response.json();
		const result = DiscoverResultSchema.safeParse((reply as { result?: unknown }).result);
		return result.success && result.data.supportedVersions.includes("2026-07-28") ? "modern" : "legacy";
	} finally {
		deadline.clear();
	}
}
