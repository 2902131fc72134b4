import type { Settings } from "../config.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import { checkProtocolVersionHeader, unsupportedVersion } from "../mcp/protocol-version.ts";
import { readCapped } from "../mcp/read-capped.ts";
import { hostAllowed } from "../primitives/host-allowed.ts";

/**
 * Host validation against DNS rebinding: a page on an attacker's domain that
 * resolves to the gateway's address reaches it with the attacker's host name.
 * Only the gateway's own hosts (ALLOWED_HOSTS) are served; the port does not
 * matter. On Cloudflare the platform routes only the Worker's own hosts here;
 * locally (wrangler dev on loopback) this check is what keeps browsers out.
 */
export function checkHost(request: Request, settings: Pick<Settings, "allowedHosts">): void {
	const host = hostName(request.headers.get("host") ?? new URL(request.url).host);
	if (settings.allowedHosts.some((allowed) => hostAllowed(host, allowed))) return;
	throw new GatewayError(
		"forbidden_host",
		`Forbidden: '${host}' is not a host name of this gateway. Use the gateway's own address (ALLOWED_HOSTS).`,
	);
}

/** The host name of a Host header, lowercase, without the port (IPv6 keeps its brackets). */
function hostName(header: string): string {
	const host = header.trim().toLowerCase();
	if (host.startsWith("[")) return host.slice(0, host.indexOf("]") + 1);
	const colon = host.lastIndexOf(":");
	return colon === -1 ? host : host.slice(0, colon);
}

/**
 * Origin validation against DNS rebinding (spec, transport security): requests
 * without Origin come from non-browser clients and pass; a browser origin must
 * be the gateway's own or listed in ALLOWED_ORIGINS.
 */
export function checkOrigin(request: Request, settings: Settings): void {
	const origin = request.headers.get("origin");
	if (origin === null) return;
	// The gateway's own origin, as the client addressed it (the Host was validated first).
	const url = new URL(request.url);
	if (origin === `${url.protocol}//${request.headers.get("host") ?? url.host}`) return;
	if (settings.allowedOrigins.includes("*") || settings.allowedOrigins.includes(origin)) return;
	throw new GatewayError("forbidden_origin", `Forbidden: origin ${origin} is not allowed to use this gateway.`);
}

/** Rejects an unsupported `MCP-Protocol-Version` of a 2025 request before anything touches the session. */
export function checkProtocolVersion(request: Request): void {
	const check = checkProtocolVersionHeader(request.headers.get("mcp-protocol-version"));
	if (!check.ok) throw unsupportedVersion(check.version, null);
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
	if (!isJsonContentType(request.headers.get("content-type"))) {
		throw new GatewayError("unsupported_media_type", "Unsupported Media Type: the body must be application/json.");
	}
}

/** GET opens an event stream, so the client must accept one. */
export function checkGetHeaders(request: Request): void {
	if (!acceptsType(request.headers.get("accept") ?? "", "text/event-stream")) {
		throw new GatewayError("not_acceptable", "Not Acceptable: the client must accept text/event-stream.");
	}
}

/** Whether a Content-Type header names JSON (parameters such as charset allowed). */
export function isJsonContentType(type: string | null): boolean {
	return /^application\/json\s*(;|$)/i.test(type ?? "");
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
