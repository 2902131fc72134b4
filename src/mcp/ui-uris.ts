import type { Resource, ResourceTemplate, Result, Tool } from "@modelcontextprotocol/sdk/types.js";
import { SEPARATOR } from "./namespacing.ts";

/*
 * MCP Apps (`io.modelcontextprotocol/ui`) Views are `ui://` resources a tool
 * names in `_meta.ui.resourceUri` (and the older `_meta["ui/resourceUri"]`).
 * On an aggregate, two members built from one template name the same URI, so
 * every member's `ui://` URI is given a form of its own: the member's name and
 * `__` in front of what follows `ui://`, as tools are named `{server}__{name}`
 * (decision 0106). Server names never contain `__`, so the first `__` splits
 * the form back into the member and its own URI.
 *
 * @example
 * memberUiUri("clock-a", "ui://get-time/mcp-app.html") // "ui://clock-a__get-time/mcp-app.html"
 * splitMemberUiUri("ui://clock-a__get-time/mcp-app.html") // { server: "clock-a", uri: "ui://get-time/mcp-app.html" }
 */

/** The scheme of MCP Apps Views (hosts render only URIs that start with it). */
export const UI_SCHEME = "ui://";

/** The older, flat key of a tool's View, which hosts still read beside `_meta.ui.resourceUri`. */
export const LEGACY_RESOURCE_URI_KEY = "ui/resourceUri";

/** The aggregate's form of a member's `ui://` URI (or URI template); any other URI is returned as it is. */
export function memberUiUri(server: string, uri: string): string {
	return uri.startsWith(UI_SCHEME) ? `${UI_SCHEME}${server}${SEPARATOR}${uri.slice(UI_SCHEME.length)}` : uri;
}

/** The member an aggregate's `ui://` URI names and the member's own URI; null for any other URI. */
export function splitMemberUiUri(uri: string): { server: string; uri: string } | null {
	if (!uri.startsWith(UI_SCHEME)) return null;
	const rest = uri.slice(UI_SCHEME.length);
	const at = rest.indexOf(SEPARATOR);
	if (at <= 0) return null;
	return { server: rest.slice(0, at), uri: `${UI_SCHEME}${rest.slice(at + SEPARATOR.length)}` };
}

/** A member's tool with the View URIs of its `_meta` in the aggregate's form (everything else as it was). */
export function withMemberUiMeta(server: string, tool: Tool): Tool {
	const meta = tool._meta;
	if (!meta) return tool;
	const ui = meta.ui;
	const nested = isRecord(ui) && typeof ui.resourceUri === "string" ? ui.resourceUri : undefined;
	const legacy = meta[LEGACY_RESOURCE_URI_KEY];
	if (nested === undefined && typeof legacy !== "string") return tool;
	const rewritten: Record<string, unknown> = { ...meta };
	if (isRecord(ui) && nested !== undefined) rewritten.ui = { ...ui, resourceUri: memberUiUri(server, nested) };
	if (typeof legacy === "string") rewritten[LEGACY_RESOURCE_URI_KEY] = memberUiUri(server, legacy);
	return { ...tool, _meta: rewritten };
}

/** A member's resource with its `ui://` URI in the aggregate's form (its `_meta` untouched). */
export function withMemberUiResource(server: string, resource: Resource): Resource {
	return resource.uri.startsWith(UI_SCHEME) ? { ...resource, uri: memberUiUri(server, resource.uri) } : resource;
}

/** A member's resource template with its `ui://` template in the aggregate's form. */
export function withMemberUiTemplate(server: string, template: ResourceTemplate): ResourceTemplate {
	return template.uriTemplate.startsWith(UI_SCHEME)
		? { ...template, uriTemplate: memberUiUri(server, template.uriTemplate) }
		: template;
}

/**
 * A member's `resources/read` result with the `uri` of each of its contents
 * in the aggregate's form; a result of another shape is returned as it is. Each content's `_meta` (a
 * View's CSP, permissions, domain, border) passes untouched.
 */
export function withMemberUiContents(server: string, result: Result): Result {
	if (!Array.isArray(result.contents)) return result;
	const contents = result.contents.map((content: unknown) =>
		isRecord(content) && typeof content.uri === "string" && content.uri.startsWith(UI_SCHEME)
			? { ...content, uri: memberUiUri(server, content.uri) }
			: content,
	);
	return { ...result, contents };
}

/** Whether a tool has a View (a `ui://` URI under either key of its `_meta`). */
export function hasView(tool: Pick<Tool, "_meta">): boolean {
	const meta = tool._meta;
	const ui = meta?.ui;
	const nested = isRecord(ui) ? ui.resourceUri : undefined;
	const legacy = meta?.[LEGACY_RESOURCE_URI_KEY];
	return [nested, legacy].some((uri) => typeof uri === "string" && uri.startsWith(UI_SCHEME));
}

function isRecord(value: unknown): value is Record<string, unknown> {
	return typeof value === "object" && value !== null && !Array.isArray(value);
}
