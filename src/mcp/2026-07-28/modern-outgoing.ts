import type { JSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";
import {
	CLIENT_CAPABILITIES_META_KEY,
	CLIENT_INFO_META_KEY,
	LOG_LEVEL_META_KEY,
	PROTOCOL_VERSION_META_KEY,
} from "@modelcontextprotocol/server";
import { z } from "zod";
import { FIRST_MODERN_VERSION } from "../protocol-version.ts";
import { headerValue } from "./header-value.ts";
import { mcpNameOf } from "./modern-request.ts";

/**
 * Who the client of a 2025 session is, as a 2026-07-28 upstream is told with
 * every request (there is no session on that side); stored with the session.
 */
export const ModernClientSchema = z.object({
	info: z.record(z.string(), z.unknown()),
	capabilities: z.record(z.string(), z.unknown()),
	/** The level the client set with logging/setLevel, which 2026-07-28 carries per request. */
	logLevel: z.string().optional(),
	/** Resources the client subscribed to: the upstream's listen filter names them. */
	subscriptions: z.array(z.string()).optional(),
});
export type ModernClient = z.infer<typeof ModernClientSchema>;

/** A request of a 2025 session as a 2026-07-28 request: the client's envelope in `_meta`. */
export function withEnvelope(message: JSONRPCRequest, client: ModernClient): JSONRPCRequest {
	const params = message.params ?? {};
	const _meta: Record<string, unknown> = {
		...params._meta,
		[PROTOCOL_VERSION_META_KEY]: FIRST_MODERN_VERSION,
		[CLIENT_INFO_META_KEY]: client.info,
		[CLIENT_CAPABILITIES_META_KEY]: client.capabilities,
	};
	// The level a 2025 client set with logging/setLevel, which 2026-07-28 carries per request.
	if (client.logLevel !== undefined) _meta[LOG_LEVEL_META_KEY] = client.logLevel;
	return { ...message, params: { ...params, _meta } };
}

/** The headers of a 2026-07-28 POST: the configured ones, content negotiation, and the routing headers the body implies. */
export function modernHeaders(configured: Record<string, string>, message: JSONRPCRequest): Headers {
	const headers = new Headers(configured);
	headers.set("accept", "application/json, text/event-stream");
	headers.set("content-type", "application/json");
	headers.set("mcp-protocol-version", FIRST_MODERN_VERSION);
	headers.set("mcp-method", message.method);
	const name = mcpNameOf(message.method, message.params)?.value;
	if (name !== undefined) headers.set("mcp-name", headerValue(name));
	return headers;
}
