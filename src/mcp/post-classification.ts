import { classifyInboundRequest } from "@modelcontextprotocol/server";
import { type Envelope, HEADER_MISMATCH, modernPostOf } from "./2026-07-28/modern-request.ts";
import { type ClientMessage, clientMessageOf, type SessionRequest } from "./client-message.ts";
import { GatewayError } from "./gateway-error.ts";
import { requestIdOf } from "./jsonrpc.ts";
import { INITIALIZE } from "./methods.ts";
import { checkProtocolVersionHeader, MODERN_PROTOCOL_VERSIONS, unsupportedVersion } from "./protocol-version.ts";

/** A POST of either era, classified and its message parsed once. */
export type ClassifiedPost =
	| { era: "legacy"; message: ClientMessage }
	| { era: "modern"; kind: "request"; request: SessionRequest; envelope: Envelope }
	| { era: "modern"; kind: "notification" };

/** Told a POST's era and the protocol version it speaks as soon as they are known (the request's telemetry). */
export type EraObserver = (era: "legacy" | "modern", protocolVersion: string | null) => void;

/**
 * Classifies a POST by era with the SDK's own classifier (the rules every
 * dual-era server uses), then parses its message once into the union of
 * client messages (`client-message.ts`), whichever its era:
 *
 * - 2025: the `MCP-Protocol-Version` header names a version the gateway
 *   speaks (400 -32022 otherwise), then the message; a refusal of its params
 *   answers its request (HTTP 200).
 * - 2026-07-28: that era's own checks (`2026-07-28/modern-request.ts`: the
 *   version, the routing headers, the envelope), then the message; a refusal
 *   of its params is that era's 400.
 *
 * The classifier's refusals keep the SDK's status, code and words. A refused
 * request reaches nothing: no cache, no Durable Object, no upstream.
 * `observe` hears the era and version before the message is parsed, but for a
 * 2025 `initialize` without a version header, which names its version in its params.
 */
export function classifyPost(request: Request, body: unknown, observe?: EraObserver): ClassifiedPost {
	const headers = request.headers;
	const versionHeader = headers.get("mcp-protocol-version");
	const outcome = classifyInboundRequest({
		httpMethod: "POST",
		protocolVersionHeader: versionHeader ?? undefined,
		mcpMethodHeader: headers.get("mcp-method") ?? undefined,
		mcpNameHeader: headers.get("mcp-name") ?? undefined,
		body,
	});
	if (outcome.kind === "legacy") {
		const version = checkProtocolVersionHeader(versionHeader);
		if (!version.ok) throw unsupportedVersion(version.version, null);
		// The version is the header's, known before the message is parsed (a refused one is accounted to it),
		// or, at initialize without one, the version it asks for.
		if (versionHeader) observe?.("legacy", versionHeader);
		const message = clientMessageOf(body);
		if (!versionHeader) {
			observe?.(
				"legacy",
				message.kind === "request" && message.method === INITIALIZE ? message.params.protocolVersion : null,
			);
		}
		return { era: "legacy", message };
	}
	const id = requestIdOf(body);
	if (outcome.kind === "reject") {
		if (outcome.cell === "modern-header-without-claim") {
			// A 2025 body under a version header the gateway does not know at all ("banana"):
			// the version is what is wrong, so that is what the client is told.
			const header = versionHeader?.trim() ?? "";
			if (!MODERN_PROTOCOL_VERSIONS.includes(header)) throw unsupportedVersion(header, id);
		}
		throw new GatewayError(outcome.code === HEADER_MISMATCH ? "header_mismatch" : "invalid_params", outcome.message, {
			status: outcome.httpStatus,
			code: outcome.code,
			id,
		});
	}
	const modern = modernPostOf(headers, outcome);
	observe?.("modern", modern.kind === "request" ? modern.envelope.protocolVersion : null);
	if (modern.kind === "notification") return { era: "modern", kind: "notification" };
	// This era's transport refuses a request's bad params with 400.
	const parsed = clientMessageOf(modern.message, 400);
	if (parsed.kind !== "request" || parsed.method === INITIALIZE) {
		// A request is a request; `initialize` was refused as a removed method already, and is excluded here for the type.
		throw new GatewayError("invalid_request", "Invalid request: a 2026-07-28 request must be a request.", { id });
	}
	return { era: "modern", kind: "request", request: parsed, envelope: modern.envelope };
}
