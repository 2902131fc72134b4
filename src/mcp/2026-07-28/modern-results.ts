import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { isJsonObject } from "../../primitives/json-object.ts";
import type { ClientRequest } from "../client-message.ts";
import { calledTool, resourceUri } from "../message-accessors.ts";
import {
	PROMPTS_GET,
	PROMPTS_LIST,
	RESOURCES_LIST,
	RESOURCES_READ,
	RESOURCES_TEMPLATES_LIST,
	SERVER_DISCOVER,
	TOOLS_LIST,
} from "../methods.ts";
import { connectInputRequired } from "./connect-input.ts";

/** Results a 2026-07-28 client may cache, which must say for how long and for whom. */
export const CACHEABLE_METHODS: ReadonlySet<string> = new Set([
	SERVER_DISCOVER,
	TOOLS_LIST,
	PROMPTS_LIST,
	RESOURCES_LIST,
	RESOURCES_TEMPLATES_LIST,
	RESOURCES_READ,
]);

/**
 * A 2025 peer's result as a 2026-07-28 result: `resultType` is required, and
 * cacheable results carry `ttlMs` and `cacheScope`. A 2025 peer says nothing
 * about caching, so the gateway claims nothing: stale at once, and private
 * (never shared across principals).
 */
export function modernResult(method: string, result: Record<string, unknown>): Record<string, unknown> {
	const modern: Record<string, unknown> = { resultType: "complete", ...result };
	if (CACHEABLE_METHODS.has(method)) {
		modern.ttlMs ??= 0;
		modern.cacheScope ??= "private";
	}
	return modern;
}

/** 2025's code for an unknown resource; 2026-07-28 answers that with Invalid params naming the URI. */
const RESOURCE_NOT_FOUND_2025 = -32002;
const INVALID_PARAMS = -32602;

/**
 * A 2025 peer's reply message as a 2026-07-28 one: results gain what that era
 * requires; errors keep their code, except an unknown resource, which
 * 2026-07-28 reports as -32602 with the URI in `data.uri`, and a connection
 * to make (-32042), which becomes an `input_required` result.
 */
export function modernReply(method: string, message: JSONRPCMessage, params?: Record<string, unknown>): JSONRPCMessage {
	if ("result" in message) return { ...message, result: modernResult(method, message.result) };
	// A connection the person must make is asked for as input in this era (the error's URL elicitation).
	const connect = "error" in message ? connectInputRequired(message.error) : null;
	if (connect && "id" in message && message.id !== undefined)
		return { jsonrpc: "2.0", id: message.id, result: connect };
	if (!("error" in message) || message.error.code !== RESOURCE_NOT_FOUND_2025) return message;
	const data = isJsonObject(message.error.data) ? message.error.data : {};
	const uri = data.uri ?? params?.uri;
	return { ...message, error: { ...message.error, code: INVALID_PARAMS, data: { ...data, uri } } };
}

/**
 * What a request names: the tool it calls or the prompt it gets, else the
 * resource it reads ("" for neither). A 2025 peer's unknown resource, made
 * modern, carries it in `data.uri` when its own data has none (see `modernReply`).
 */
export function requestName(request: ClientRequest): string {
	if (request.method === PROMPTS_GET) return request.message.params.name;
	return calledTool(request) ?? resourceUri(request) ?? "";
}
