import type { JSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";
import {
	CLIENT_CAPABILITIES_META_KEY,
	CLIENT_INFO_META_KEY,
	LOG_LEVEL_META_KEY,
	PROTOCOL_VERSION_META_KEY,
} from "@modelcontextprotocol/server";
import { FIRST_MODERN_VERSION } from "../protocol-version.ts";
import { headerValue } from "./header-value.ts";
import { mcpNameOf } from "./modern-request.ts";

/** A request of a 2025 session as a 2026-07-28 request: the client's envelope in `_meta`. */
export function withEnvelope(
	message: JSONRPCRequest,
	client: { info: Record<string, unknown>; capabilities: Record<string, unknown>; logLevel?: string | undefined },
): JSONRPCRequest {
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
