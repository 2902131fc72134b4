import {
	CLIENT_CAPABILITIES_META_KEY,
	CLIENT_INFO_META_KEY,
	classifyInboundRequest,
	type JSONRPCNotification,
	type JSONRPCRequest,
	LOG_LEVEL_META_KEY,
	PROTOCOL_VERSION_META_KEY,
} from "@modelcontextprotocol/server";
import { z } from "zod";
import { GatewayError } from "../gateway-error.ts";
import { MODERN_PROTOCOL_VERSIONS, SUPPORTED_VERSIONS_OF_BOTH_ERAS } from "../protocol-version.ts";
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

/** A request of either era, as the edge classified it. */
export type ClassifiedRequest =
	| { era: "legacy" }
	| { era: "modern"; kind: "request"; message: JSONRPCRequest; envelope: Envelope }
	| { era: "modern"; kind: "notification"; message: JSONRPCNotification };

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
	"tools/call": "name",
	"prompts/get": "name",
	"resources/read": "uri",
	"tasks/get": "taskId",
	"tasks/update": "taskId",
	"tasks/cancel": "taskId",
};

/**
 * Classifies a POST by era with the SDK's own classifier (the rules every
 * dual-era server uses), then applies the checks the classifier leaves to the
 * transport, as the SDK's server entry does (its `validateStandardRequestHeaders`,
 * which it does not export): the version is one the gateway speaks (-32022
 * listing them); on a request, `MCP-Protocol-Version` is present and equals the
 * envelope, `Mcp-Method` is present (the classifier compares it when it is),
 * and `Mcp-Name` is present and equals the field it mirrors (-32020). Ladder
 * refusals keep the SDK's status, code and words. A refused request reaches
 * nothing: no cache, no Durable Object, no upstream.
 */
export function classifyPost(request: Request, body: unknown): ClassifiedRequest {
	const headers = request.headers;
	const outcome = classifyInboundRequest({
		httpMethod: "POST",
		protocolVersionHeader: headers.get("mcp-protocol-version") ?? undefined,
		mcpMethodHeader: headers.get("mcp-method") ?? undefined,
		mcpNameHeader: headers.get("mcp-name") ?? undefined,
		body,
	});
	if (outcome.kind === "legacy") return { era: "legacy" };
	const id = requestIdOf(body);
	if (outcome.kind === "reject" && outcome.cell === "modern-header-without-claim") {
		// A 2025 body under a version header the gateway does not know at all ("banana"):
		// the version is what is wrong, so that is what the client is told.
		const header = headers.get("mcp-protocol-version")?.trim() ?? "";
		if (!MODERN_PROTOCOL_VERSIONS.includes(header)) throw unsupportedVersion(header, id);
	}
	if (outcome.kind === "reject") {
		throw new GatewayError(outcome.code === HEADER_MISMATCH ? "header_mismatch" : "invalid_params", outcome.message, {
			status: outcome.httpStatus,
			code: outcome.code,
			id,
		});
	}
	const version = outcome.classification.revision;
	if (version === undefined || !MODERN_PROTOCOL_VERSIONS.includes(version)) {
		throw unsupportedVersion(version ?? "(none)", id, MODERN_PROTOCOL_VERSIONS);
	}
	if (outcome.messageKind === "notification") return { era: "modern", kind: "notification", message: outcome.message };
	const message = outcome.message;
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
	return { era: "modern", kind: "request", message, envelope };
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

/**
 * -32022 with the versions a client can pick (2026-07-28 versioning): for a
 * request of the modern era, that era's versions (what `server/discover`
 * offers); for a 2025 request, every version the gateway speaks.
 */
export function unsupportedVersion(
	requested: string,
	id: string | number | null,
	supported: readonly string[] = SUPPORTED_VERSIONS_OF_BOTH_ERAS,
): GatewayError {
	return new GatewayError(
		"unsupported_protocol_version",
		`Unsupported protocol version '${requested}': use one of ${supported.join(", ")}.`,
		{ id, data: { supported, requested } },
	);
}

/** The id of a JSON-RPC request body, when it has a usable one (errors carry it). */
export function requestIdOf(body: unknown): string | number | null {
	if (typeof body !== "object" || body === null || !("id" in body)) return null;
	const id = body.id;
	return typeof id === "string" || (typeof id === "number" && Number.isFinite(id)) ? id : null;
}

/** The request without its envelope keys: what a 2025 peer is sent (its session carries them). */
export function withoutEnvelope(message: JSONRPCRequest): JSONRPCRequest {
	const meta = message.params?._meta;
	if (!meta) return message;
	const {
		[PROTOCOL_VERSION_META_KEY]: _version,
		[CLIENT_INFO_META_KEY]: _info,
		[CLIENT_CAPABILITIES_META_KEY]: _capabilities,
		[LOG_LEVEL_META_KEY]: _level,
		...rest
	} = meta;
	const params = { ...message.params };
	if (Object.keys(rest).length > 0) params._meta = rest;
	else delete params._meta;
	return { ...message, params };
}
