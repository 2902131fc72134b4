import { FIRST_MODERN_VERSION, type ProtocolEra } from "./protocol-version.ts";

/**
 * What an operator may say about the protocol a server speaks: "auto" (the
 * gateway finds out, once per generation and configuration), or one version
 * that pins the era without asking.
 */
export const UPSTREAM_PROTOCOLS = ["auto", "2025-11-25", "2026-07-28"] as const;
export type UpstreamProtocol = (typeof UPSTREAM_PROTOCOLS)[number];

/** The era an operator's setting pins; null for "auto" (the gateway finds out). */
export function pinnedEra(protocol: UpstreamProtocol): ProtocolEra | null {
	if (protocol === "auto") return null;
	return protocol === FIRST_MODERN_VERSION ? "modern" : "legacy";
}
