import { stableJson } from "../mcp/stable-json.ts";
import { sha256Hex } from "../primitives/crypto.ts";
import type { PinInput, ToolDefinition } from "../registry/tool-pins.ts";

/**
 * What a tool's definition is, for pinning: its name, description, input and
 * output schemas and annotations (issue 22, point 3). Title, icons and `_meta`
 * are left out: they change what a person sees, not what a model is told to
 * do or what it sends, and upstreams rewrite `_meta` freely.
 */
export const DEFINITION_FIELDS = ["name", "description", "inputSchema", "outputSchema", "annotations"] as const;
export type DefinitionField = (typeof DEFINITION_FIELDS)[number];

/** What pinning reads of a tool: an SDK `Tool` as listed, or a pinned definition. */
export interface ToolLike {
	name: string;
	description?: string | undefined;
	inputSchema: object;
	outputSchema?: object | undefined;
	annotations?: object | undefined;
}

/** The tool's definition: the fields above, an absent one left absent (so absent and undefined digest alike). */
export function toolDefinition(tool: ToolLike): ToolDefinition {
	const definition: ToolDefinition = { name: tool.name, inputSchema: { ...tool.inputSchema } };
	if (tool.description !== undefined) definition.description = tool.description;
	if (tool.outputSchema !== undefined) definition.outputSchema = { ...tool.outputSchema };
	if (tool.annotations !== undefined) definition.annotations = { ...tool.annotations };
	return definition;
}

/** One field's canonical text (key order free, `stable-json.ts`); an absent field has none. */
export function fieldText(tool: ToolLike, field: DefinitionField): string | undefined {
	const value = tool[field];
	return value === undefined ? undefined : stableJson(value);
}

/** The canonical text of the definition: what its digest is of. */
export function definitionText(tool: ToolLike): string {
	return stableJson(toolDefinition(tool));
}

/**
 * SHA-256 (hex) of the tool's definition in canonical JSON: equal for equal
 * definitions whatever the key order an upstream writes them in.
 *
 * @example
 * await toolDigest({ name: "echo", inputSchema: { type: "object" } }); // "5f1c…"
 */
export function toolDigest(tool: ToolLike): Promise<string> {
	return sha256Hex(definitionText(tool));
}

/** The fields in which `current` differs from the `approved` definition, in DEFINITION_FIELDS order. */
export function changedFields(approved: ToolLike, current: ToolLike): DefinitionField[] {
	return DEFINITION_FIELDS.filter((field) => fieldText(approved, field) !== fieldText(current, field));
}

/** What the registry is handed to pin a tool: its definition and that definition's digest. */
export async function pinInputOf(tool: ToolLike): Promise<PinInput> {
	const definition = toolDefinition(tool);
	return { digest: await sha256Hex(stableJson(definition)), definition };
}
