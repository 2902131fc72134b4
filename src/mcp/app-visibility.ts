import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

/**
 * Who a tool is for, as the MCP Apps extension (`io.modelcontextprotocol/ui`)
 * says in `_meta.ui.visibility`: "model" (the agent may see and call it),
 * "app" (a View may call it, from its own server). Absent, it is both.
 * docs/apps.md.
 */

/** The part of a tool's `_meta` that says who it is for; anything else in it is not read here. */
const ToolUiVisibilitySchema = z.object({
	ui: z.object({ visibility: z.array(z.string()) }),
});

/**
 * Whether a tool is for its server's Views only: its visibility names "app"
 * and not "model". The model must not be offered it where the gateway builds
 * what the model sees (search mode's `search_tools`, `call_tool` and
 * `alwaysList`); a host that forwards a View's call still reaches it. A
 * visibility that is not a list of strings is read as absent (both), as the
 * extension's own `isToolVisibilityAppOnly` reads it.
 *
 * @example
 * isAppOnly({ _meta: { ui: { visibility: ["app"] } } }) // true
 * isAppOnly({ _meta: { ui: { visibility: ["model", "app"] } } }) // false
 */
export function isAppOnly(tool: Pick<Tool, "_meta">): boolean {
	// Most tools have no `ui` at all: they are answered without a parse (a failed parse builds its issues).
	if (tool._meta?.ui === undefined) return false;
	const parsed = ToolUiVisibilitySchema.safeParse(tool._meta);
	if (!parsed.success) return false;
	const { visibility } = parsed.data.ui;
	return visibility.includes("app") && !visibility.includes("model");
}
