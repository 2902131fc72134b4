import type { Settings } from "../config.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import { checkProtocolVersionHeader } from "../mcp/protocol-version.ts";
import { readCapped } from "../mcp/read-capped.ts";

/**
 * Origin validation against DNS rebinding (spec, transport security): requests
 * without Origin come from non-browser clients and pass; a browser origin must
 * be the gateway's own or listed in ALLOWED_ORIGINS.
 */
export function checkOrigin(request: Request, settings: Settings): void {
	const origin = request.headers.get("origin");
	if (origin === null) return;
	if (origin === new URL(request.url).origin) return;
	if (settings.allowedOrigins.includes("*") || settings.allowedOrigins.includes(origin)) return;
	throw new GatewayError("forbidden_origin", `Forbidden: origin ${origin} is not allowed to use this gateway.`);
}

/** Rejects an unsupported `MCP-Protocol-Version` before anything touches the session. */
export function checkProtocolVersion(request: Request): void {
	const check = checkProtocolVersionHeader(request.headers.get("mcp-protocol-version"));
	if (!check.ok) {
		throw new GatewayError(
			"unsupported_protocol_version",
			`Bad Request: unsupported MCP-Protocol-Version '${check.version}'.`,
		);
	}
}

/** POST must accept both JSON and SSE, and send JSON. */
export function checkPostHeaders(request: Request): void {
	const accept = request.headers.get("accept") ?? "";
	if (!acceptsType(accept, "application/json") || !acceptsType(accept, "text/event-stream")) {
		throw new GatewayError(
			"not_acceptable",
			"Not Acceptable: the client must accept both application/json and text/event-stream.",
		);
	}
	const type = request.headers.get("content-type") ?? "";
	if (!/^application\/json\s*(;|$)/i.test(type)) {
		throw new GatewayError("unsupported_media_type", "Unsupported Media Type: the body must be application/json.");
	}
}

/** GET opens an event stream, so the client must accept one. */
export function checkGetHeaders(request: Request): void {
	if (!acceptsType(request.headers.get("accept") ?? "", "text/event-stream")) {
		throw new GatewayError("not_acceptable", "Not Acceptable: the client must accept text/event-stream.");
	}
}

function acceptsType(accept: string, type: string): boolean {
	const [major] = type.split("/");
	return accept
		.split(",")
		.map((part) => part.split(";")[0]?.trim().toLowerCase())
		.some((range) => range === type || range === "*/*" || range === `${major}/*`);
}

/** Reads the body as text, refusing more than `limit` bytes without reading them all. */
export async function readBodyWithin(request: Request, limit: number): Promise<string> {
	const tooLarge = () =>
		new GatewayError("payload_too_large", `Payload Too Large: the request body exceeds ${limit} bytes.`);
	const declared = Number(request.headers.get("content-length") ?? "0");
	if (declared > limit) throw tooLarge();
	if (!request.body) return "";
	const bytes = await readCapped(request.body, limit);
	if (bytes === null) throw tooLarge();
	return new TextDecoder().decode(bytes);
}
