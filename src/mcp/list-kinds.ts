import {
	type Prompt,
	PromptSchema,
	type Resource,
	ResourceSchema,
	type ResourceTemplate,
	ResourceTemplateSchema,
	type Tool,
	ToolSchema,
} from "@modelcontextprotocol/sdk/types.js";
import {
	NOTIFICATIONS_PROMPTS_LIST_CHANGED,
	NOTIFICATIONS_RESOURCES_LIST_CHANGED,
	NOTIFICATIONS_TOOLS_LIST_CHANGED,
	PROMPTS_LIST,
	RESOURCES_LIST,
	RESOURCES_TEMPLATES_LIST,
	TOOLS_LIST,
} from "./methods.ts";

/**
 * The lists a member server can offer: the method, the result field, and the
 * SDK's schema of one entry (entries that fail it are dropped, never cast).
 */
export const LIST_KINDS = {
	tools: { method: TOOLS_LIST, field: "tools", item: ToolSchema },
	prompts: { method: PROMPTS_LIST, field: "prompts", item: PromptSchema },
	resources: { method: RESOURCES_LIST, field: "resources", item: ResourceSchema },
	resourceTemplates: { method: RESOURCES_TEMPLATES_LIST, field: "resourceTemplates", item: ResourceTemplateSchema },
} as const;
export type ListKind = keyof typeof LIST_KINDS;

/** The list kind a list method asks for (`tools/list` → `tools`). */
export const LIST_KIND_OF_METHOD: ReadonlyMap<string, ListKind> = new Map(
	(Object.keys(LIST_KINDS) as ListKind[]).map((kind) => [LIST_KINDS[kind].method, kind]),
);

/** The entry type of each list. */
export interface ListItems {
	tools: Tool;
	prompts: Prompt;
	resources: Resource;
	resourceTemplates: ResourceTemplate;
}

/**
 * The lists a client sees and the notification that says one changed; a
 * client's `resources` covers both resources and resource templates.
 */
export const PUBLIC_LISTS = {
	tools: { kinds: ["tools"], notification: NOTIFICATIONS_TOOLS_LIST_CHANGED },
	prompts: { kinds: ["prompts"], notification: NOTIFICATIONS_PROMPTS_LIST_CHANGED },
	resources: { kinds: ["resources", "resourceTemplates"], notification: NOTIFICATIONS_RESOURCES_LIST_CHANGED },
} as const satisfies Record<string, { kinds: readonly ListKind[]; notification: string }>;
export type PublicList = keyof typeof PUBLIC_LISTS;

/** Which member lists an upstream `notifications/.../list_changed` invalidates. */
export const INVALIDATED_BY: Readonly<Record<string, readonly ListKind[]>> = Object.fromEntries(
	Object.values(PUBLIC_LISTS).map((list) => [list.notification, list.kinds]),
);

/**
 * Whether `entry` is a valid entry of the list kind. The entry itself is kept
 * as the upstream wrote it (the SDK's schemas strip fields they do not know,
 * which would change what a client sees), so this is a type guard, not a parse.
 */
export function isListItem<K extends ListKind>(kind: K, entry: unknown): entry is ListItems[K] {
	return LIST_KINDS[kind].item.safeParse(entry).success;
}
