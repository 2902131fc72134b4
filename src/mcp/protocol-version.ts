import { DEFAULT_NEGOTIATED_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { GatewayError } from "./gateway-error.ts";

/**
 * The two protocol eras, in the SDK v2's words and the gateway's everywhere:
 * `legacy` for 2025-11-25 and earlier (a session opened by `initialize`),
 * `modern` for 2026-07-28 on (no session; every request carries its envelope).
 */
export type { ProtocolEra } from "@modelcontextprotocol/server";

/**
 * From this version on, MCP negotiates the version per request instead of per
 * session, so the header check lets these through, as the reference SDK does.
 */
export const FIRST_MODERN_VERSION = "2026-07-28";

/** The modern revisions the gateway speaks (2026-07-28 era: no session, `_meta` envelope). */
export const MODERN_PROTOCOL_VERSIONS: readonly string[] = [FIRST_MODERN_VERSION];

/** Every version the gateway speaks, newest first, as an UnsupportedProtocolVersion error lists them. */
export const SUPPORTED_VERSIONS_OF_BOTH_ERAS: readonly string[] = [
	...MODERN_PROTOCOL_VERSIONS,
	...SUPPORTED_PROTOCOL_VERSIONS,
];

const DATE_VERSION = /^\d{4}-\d{2}-\d{2}$/;

/** Whether a version names a modern revision: a date from 2026-07-28 on, known to this gateway or not. */
export function namesModernVersion(version: string): boolean {
	return DATE_VERSION.test(version) && version >= FIRST_MODERN_VERSION;
}

/** JSON-RPC's UnsupportedProtocolVersion code (spec: basic/versioning, "Protocol Version Negotiation"). */
export const UNSUPPORTED_PROTOCOL_VERSION = -32022;
const UnsupportedVersionDataSchema = z.object({ supported: z.array(z.string()) });

/**
 * The versions an UnsupportedProtocolVersion error offers: null when the
 * error is another one, empty when its `data` lists none.
 */
export function supportedVersionsOf(error: { code: number; data?: unknown }): string[] | null {
	if (error.code !== UNSUPPORTED_PROTOCOL_VERSION) return null;
	const data = UnsupportedVersionDataSchema.safeParse(error.data);
	return data.success ? data.data.supported : [];
}

export type VersionCheck = { ok: true; version: string } | { ok: false; version: string };

/**
 * Checks an `MCP-Protocol-Version` header. A missing header means 2025-03-26,
 * as the spec says for servers that cannot tell otherwise.
 */
export function checkProtocolVersionHeader(header: string | null): VersionCheck {
	if (header === null) return { ok: true, version: DEFAULT_NEGOTIATED_PROTOCOL_VERSION };
	const version = header.trim();
	if (SUPPORTED_PROTOCOL_VERSIONS.includes(version)) return { ok: true, version };
	if (namesModernVersion(version)) return { ok: true, version };
	return { ok: false, version };
}

/** Whether a version an upstream negotiated is one this gateway can speak to a client. */
export function isSupportedLegacyVersion(version: string): boolean {
	return SUPPORTED_PROTOCOL_VERSIONS.includes(version);
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
