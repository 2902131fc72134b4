import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { vi } from "vitest";
import { admin, uniqueName } from "./gateway.ts";
import { putCatalog, upstreamUrl } from "./upstreams.ts";

/**
 * The servers and readings the content guard tests share: a 2025 server
 * whose `profile` tool echoes its `note` (as text and as structured content),
 * a 2026-07-28 server of the `modern` upstream, a result's texts, and the
 * `tool_call` lines printed for a server.
 */

/** A server of the mutable upstream whose `profile` tool echoes its `note` (a catalog of the test's own). */
export async function echoingServer(): Promise<string> {
	const catalog = uniqueName("guarded-catalog");
	await putCatalog(catalog, [{ name: "profile", args: ["note"], echoes: true }]);
	const name = uniqueName("guarded");
	const response = await admin("PUT", `/servers/${name}`, { url: `${upstreamUrl("mutable")}?catalog=${catalog}` });
	if (response.status !== 201) throw new Error(`server: ${await response.text()}`);
	return name;
}

/** A server of the 2026-07-28 `modern` upstream (its `echo` and `region_echo` tools). */
export async function modernServer(): Promise<string> {
	const name = uniqueName("guarded-modern");
	const response = await admin("PUT", `/servers/${name}`, { url: upstreamUrl("modern") });
	if (response.status !== 201) throw new Error(`server: ${await response.text()}`);
	return name;
}

/** The tool_call lines printed from now on for `server` (the spy is restored by `vi.restoreAllMocks`). */
export function toolCallLines(server: string): Array<Record<string, unknown>> {
	const lines: Array<Record<string, unknown>> = [];
	const log = console.log.bind(console);
	vi.spyOn(console, "log").mockImplementation((line: unknown) => {
		if (typeof line === "string" && line.startsWith('{"event":"tool_call"') && line.includes(server)) {
			lines.push(JSON.parse(line) as Record<string, unknown>);
		} else {
			log(line);
		}
	});
	return lines;
}

/** A tool result's content as texts (another item as `(type)`). */
export function texts(result: CallToolResult): string[] {
	return result.content.map((item) => (item.type === "text" ? item.text : `(${item.type})`));
}
