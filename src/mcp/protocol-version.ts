import { DEFAULT_NEGOTIATED_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/sdk/types.js";

/**
 * From this version on, MCP negotiates the version per request instead of per
 * session, so the header check lets these through, as the reference SDK does.
 */
export const FIRST_PER_REQUEST_VERSION = "2026-07-28";

/** The per-request revisions the gateway speaks (2026-07-28 era: no session, `_meta` envelope). */
export const MODERN_PROTOCOL_VERSIONS: readonly string[] = [FIRST_PER_REQUEST_VERSION];

/** Every version the gateway speaks, newest first, as an UnsupportedProtocolVersion error lists them. */
export const SUPPORTED_VERSIONS_OF_BOTH_ERAS: readonly string[] = [
	...MODERN_PROTOCOL_VERSIONS,
	...SUPPORTED_PROTOCOL_VERSIONS,
];

const DATE_VERSION = /^\d{4}-\d{2}-\d{2}$/;

export type VersionCheck = { ok: true; version: string } | { ok: false; version: string };

/**
 * Checks an `MCP-Protocol-Version` header. A missing header means 2025-03-26,
 * as the spec says for servers that cannot tell otherwise.
 */
export function checkProtocolVersionHeader(header: string | null): VersionCheck {
	if (header === null) return { ok: true, version: DEFAULT_NEGOTIATED_PROTOCOL_VERSION };
	const version = header.trim();
	if (SUPPORTED_PROTOCOL_VERSIONS.includes(version)) return { ok: true, version };
	if (DATE_VERSION.test(version) && version >= FIRST_PER_REQUEST_VERSION) return { ok: true, version };
	return { ok: false, version };
}

/** Whether a version an upstream negotiated is one this gateway can speak to a client. */
export function isSupportedSessionVersion(version: string): boolean {
	return SUPPORTED_PROTOCOL_VERSIONS.includes(version);
}
