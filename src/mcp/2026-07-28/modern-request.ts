import {
	CLIENT_CAPABILITIES_META_KEY,
	CLIENT_INFO_META_KEY,
	type InboundModernRoute,
	type JSONRPCNotification,
	type JSONRPCRequest,
	LOG_LEVEL_META_KEY,
	PROTOCOL_VERSION_META_KEY,
} from "@modelcontextprotocol/server";
import { z } from "zod";
import type { SessionRequest } from "../client-message.ts";
import { GatewayError } from "../gateway-error.ts";
import { requestIdOf } from "../jsonrpc.ts";
import {
	INITIALIZE,
	LOGGING_SET_LEVEL,
	PING,
	PROMPTS_GET,
	RESOURCES_READ,
	RESOURCES_SUBSCRIBE,
	RESOURCES_UNSUBSCRIBE,
	TASKS_CANCEL,
	TASKS_GET,
	TASKS_LIST,
	TASKS_RESULT,
	TASKS_UPDATE,
	TOOLS_CALL,
} from "../methods.ts";
import { MODERN_PROTOCOL_VERSIONS, unsupportedVersion } from "../protocol-version.ts";
import { decodeHeaderValue } from "./header-value.ts";

/**
 * What a 2026-07-28 request says about its client, in place of a session:
 * the protocol version, the client's identity and capabilities, and an
 * optional per-request log level.
 */
export interface Envelope {
	protocolVersion: string;
	/** Optional since 2026-07-28 (a SHOULD): absent, the gateway names the client `unknown`. */
	clientInfo: { name: string; version: string; [key: string]: unknown };
	clientCapabilities: Record<string, unknown>;
	logLevel?: string;
}

const EnvelopeSchema = z.object({
	[PROTOCOL_VERSION_META_KEY]: z.string(),
	[CLIENT_INFO_META_KEY]: z.object({ name: z.string(), version: z.string() }).loose().optional(),
	[CLIENT_CAPABILITIES_META_KEY]: z.record(z.string(), z.unknown()),
	[LOG_LEVEL_META_KEY]: z.string().optional(),
});

const UNKNOWN_CLIENT = { name: "unknown", version: "0" };

/**
 * The body field `Mcp-Name` mirrors, by method (SEP-2243's standard headers,
 * and SEP-2663's for tasks): what a client must send and a server checks.
 * The SDK keeps its table (`MCP_NAME_HEADER_SOURCE`) internal; this is the
 * same table, for both the check here and the headers the gateway sends.
 */
const MCP_NAME_SOURCES: Readonly<Record<string, "name" | "uri" | "taskId">> = {
	[TOOLS_CALL]: "name",
	[PROMPTS_GET]: "name",
	[RESOURCES_READ]: "uri",
	[TASKS_GET]: "taskId",
	[TASKS_UPDATE]: "taskId",
	[TASKS_CANCEL]: "taskId",
};

/** A 2026-07-28 request or notification, checked as this era's transport asks. */
export type ModernPost =
	| { kind: "request"; message: JSONRPCRequest; envelope: Envelope }
	| { kind: "notification"; message: JSONRPCNotification };

/**
 * Client requests of 2025-11-25 that 2026-07-28 removed (SEP-2575): the
 * session's handshake and keep-alive, the log level (now the envelope's),
 * resource subscriptions (now `subscriptions/listen`), and the tasks
 * utility's list and result (the tasks extension has get, update and cancel).
 * Sent as 2026-07-28, each is a method this era does not have.
 */
const REMOVED_REQUESTS: ReadonlySet<string> = new Set([
	INITIALIZE,
	PING,
	LOGGING_SET_LEVEL,
	RESOURCES_SUBSCRIBE,
	RESOURCES_UNSUBSCRIBE,
	TASKS_LIST,
	TASKS_RESULT,
]);

/**
 * The checks a 2026-07-28 POST meets after the SDK's classifier called it
 * modern (`post-classification.ts`), as the SDK's server entry applies them
 * (its `validateStandardRequestHeaders`, which it does not export): the
 * version is one the gateway speaks (-32022 listing them); on a request,
 * `MCP-Protocol-Version` is present and equals the envelope, `Mcp-Method` is
 * present (the classifier compares it when it is), and `Mcp-Name` is present
 * and equals the field it mirrors (-32020); the envelope is well formed; the
 * method is one this era has (404 -32601 for one it removed, before its
 * params are read by the 2025 schema of the same name).
 */
export function modernPostOf(headers: Headers, route: InboundModernRoute): ModernPost {
	const id = requestIdOf(route.message);
	const version = route.classification.revision;
	if (version === undefined || !MODERN_PROTOCOL_VERSIONS.includes(version)) {
		throw unsupportedVersion(version ?? "(none)", id, MODERN_PROTOCOL_VERSIONS);
	}
	if (route.messageKind === "notification") return { kind: "notification", message: route.message };
	const message = route.message;
	const header = headers.get("mcp-protocol-version");
	if (header === null || header.trim() !== version) {
		throw mismatch(
			header === null
				? `the MCP-Protocol-Version header is missing; it must be ${version}, as the request's _meta says`
				: `the MCP-Protocol-Version header says ${header.trim()} but the request's _meta says ${version}`,
			id,
		);
	}
	if (headers.get("mcp-method") === null) {
		throw mismatch(`the body names method ${message.method} but the required Mcp-Method header is absent`, id);
	}
	checkName(message, headers.get("mcp-name"), id);
	const parsed = EnvelopeSchema.safeParse(message.params?._meta);
	if (!parsed.success) {
		throw new GatewayError("invalid_params", "Invalid params: the request's _meta envelope is malformed.", { id });
	}
	const meta = parsed.data;
	const envelope: Envelope = {
		protocolVersion: version,
		clientInfo: meta[CLIENT_INFO_META_KEY] ?? UNKNOWN_CLIENT,
		clientCapabilities: meta[CLIENT_CAPABILITIES_META_KEY],
	};
	const logLevel = meta[LOG_LEVEL_META_KEY];
	if (logLevel !== undefined) envelope.logLevel = logLevel;
	if (REMOVED_REQUESTS.has(message.method)) {
		throw new GatewayError(
			"method_not_found",
			`Method not found: ${message.method} is not a method of MCP ${version}.`,
			{ id },
		);
	}
	return { kind: "request", message, envelope };
}

/** JSON-RPC's HeaderMismatch code (2026-07-28 transport). */
export const HEADER_MISMATCH = -32020;

/** The body field `Mcp-Name` mirrors for this request, and its value when it is a string; undefined off the table. */
export function mcpNameOf(
	method: string,
	params: Record<string, unknown> | undefined,
): { field: string; value: string | undefined } | undefined {
	const field = Object.hasOwn(MCP_NAME_SOURCES, method) ? MCP_NAME_SOURCES[method] : undefined;
	if (field === undefined) return undefined;
	const value = params?.[field];
	return { field, value: typeof value === "string" ? value : undefined };
}

/** `Mcp-Name` must be sent, and name what the body names, for the methods that carry a name. */
function checkName(message: JSONRPCRequest, header: string | null, id: string | number | null): void {
	const source = mcpNameOf(message.method, message.params);
	if (source === undefined) return;
	const { field, value } = source;
	if (header === null) {
		if (value === undefined) return;
		throw mismatch(`the body names ${field} '${value}' but the required Mcp-Name header is absent`, id);
	}
	const named = decodeHeaderValue(header.trim());
	if (named === undefined) throw mismatch("the Mcp-Name header carries an invalid Base64 sentinel value", id);
	if (value !== undefined && named !== value) {
		throw mismatch(`the Mcp-Name header names '${named}' but the body names ${field} '${value}'`, id);
	}
}

function mismatch(detail: string, id: string | number | null): GatewayError {
	return new GatewayError("header_mismatch", `Bad Request: the request headers and body disagree: ${detail}.`, { id });
}

/** The request without its envelope keys: what a 2025 peer is sent (its session carries them). */
export function withoutEnvelope<R extends SessionRequest>(request: R): R {
	const message = withoutEnvelopeKeys(request.message);
	return message === request.message ? request : { ...request, message };
}

function withoutEnvelopeKeys<T extends JSONRPCRequest>(message: T): T {
	const params = message.params;
	const meta = params?._meta;
	if (!params || !meta) return message;
	const {
		[PROTOCOL_VERSION_META_KEY]: _version,
		[CLIENT_INFO_META_KEY]: _info,
		[CLIENT_CAPABILITIES_META_KEY]: _capabilities,
		[LOG_LEVEL_META_KEY]: _level,
		...rest
	} = meta;
	const { _meta: _envelope, ...others } = params;
	return { ...message, params: Object.keys(rest).length > 0 ? { ...others, _meta: rest } : others };
}
