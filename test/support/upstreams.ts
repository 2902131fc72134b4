import { inject } from "vitest";
import type { CatalogTool } from "../../scripts/fixtures/control-shapes.ts";
import { newGate } from "./gates.ts";
import { admin, uniqueName } from "./gateway.ts";

export type UpstreamName =
	// The repo's own upstreams with an MCP App each (scripts/fixtures/app-view-tools.ts).
	| "viewOne"
	| "viewTwo"
	| "alpha"
	| "beta"
	| "gamma"
	| "shifting"
	| "mutable"
	| "paged"
	| "delta"
	| "epsilon"
	| "resumable"
	| "tasking"
	| "modern"
	| "dual"
	| "modernTasking"
	// The MCP Apps extension's example servers (scripts/fixtures/app-servers.ts): they keep no log of what they got.
	| "appBasicA"
	| "appBasicB"
	| "appMonitor";

function upstreamPort(which: UpstreamName): number {
	return inject(`${which}Port`);
}

export function upstreamUrl(which: UpstreamName): string {
	return `http://127.0.0.1:${upstreamPort(which)}/mcp`;
}

/** Registers a test upstream under a fresh name (alpha needs UPSTREAM_ALPHA_TOKEN, which the gateway resolves). */
export async function registerServer(
	which: UpstreamName,
	// Server names are lower-case: `modernTasking` registers as `modern-tasking-…`.
	name = uniqueName(which.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`)),
): Promise<string> {
	const headers = which === "alpha" ? { Authorization: "Bearer ${UPSTREAM_ALPHA_TOKEN}" } : {};
	const response = await admin("PUT", `/servers/${name}`, { url: upstreamUrl(which), headers });
	if (response.status !== 201 && response.status !== 200) {
		throw new Error(`registering ${name} failed: ${response.status} ${await response.text()}`);
	}
	return name;
}

export interface UpstreamLogEntry {
	method: string;
	authorization: string | null;
	sessionId: string | null;
	protocolVersion: string | null;
	lastEventId: string | null;
	body: { method?: string; id?: unknown; params?: Record<string, unknown> } | undefined;
}

/** Everything the upstream received, in order, from every test of the run. */
export async function upstreamLog(which: UpstreamName): Promise<UpstreamLogEntry[]> {
	const response = await fetch(`http://127.0.0.1:${upstreamPort(which)}/_log`);
	return (await response.json()) as UpstreamLogEntry[];
}

/**
 * The `tools/call`s of `tool` anywhere in the upstream's whole log whose arguments are `args` (give
 * them a value unique to the test): what reached the upstream of this test's call, whatever other
 * tests sent the shared upstream meanwhile.
 */
export async function toolCallsOf(
	which: UpstreamName,
	tool: string,
	args: Record<string, unknown>,
): Promise<UpstreamLogEntry[]> {
	const wanted = JSON.stringify(args);
	return (await upstreamLog(which)).filter(
		(entry) =>
			entry.body?.method === "tools/call" &&
			entry.body.params?.name === tool &&
			JSON.stringify(entry.body.params.arguments) === wanted,
	);
}

/** What the upstream received in one upstream session (the initialize that opened it carries no session id). */
export async function upstreamSessionLog(
	which: UpstreamName,
	upstreamSessionId: string | null | undefined,
): Promise<UpstreamLogEntry[]> {
	if (!upstreamSessionId) throw new Error(`no upstream session id to look for at ${which}`);
	return (await upstreamLog(which)).filter((entry) => entry.sessionId === upstreamSessionId);
}

/** A new gate of the `gate` tool on a test upstream (alpha, beta, gamma, delta, epsilon, resumable, modern, modernTasking and tasking offer it). */
export function upstreamGate(
	which: "alpha" | "beta" | "gamma" | "delta" | "epsilon" | "resumable" | "modern" | "modernTasking" | "tasking",
) {
	return newGate(`http://127.0.0.1:${upstreamPort(which)}`);
}

/** Sets what the mutable upstream lists to sessions of `?catalog=<key>` (live ones included; scripts/fixtures/pinnable-catalog.ts). */
export async function putCatalog(key: string, tools: CatalogTool[]): Promise<void> {
	const response = await fetch(`${new URL(upstreamUrl("mutable")).origin}/_catalog/${key}`, {
		method: "PUT",
		headers: { "content-type": "application/json" },
		body: JSON.stringify({ tools }),
	});
	if (response.status !== 204) throw new Error(`catalog ${key}: ${response.status} ${await response.text()}`);
}
