import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { namespacedName } from "../mcp/namespacing.ts";
import type { EndpointTools, ToolShaping } from "../registry/tool-shaping-schema.ts";
import { chosen } from "./globs.ts";

/** Whether the operator offers the upstream's tool `real` at all. */
export function toolOffered(shaping: ToolShaping | undefined, real: string): boolean {
	return chosen(shaping, real);
}

/**
 * A server's (or a virtual server's) tool list as callers see it (`where`
 * names it in the log): tools the operator hides left out,
 * aliases, descriptions and annotations applied. A tool whose real name is
 * taken by another's alias is left out too (the PUT refuses such shaping, but
 * an upstream may add a tool of that name later), and the conflict logged.
 */
export function shapeTools(where: string, shaping: ToolShaping | undefined, tools: readonly Tool[]): Tool[] {
	if (!shaping) return [...tools];
	const aliases = new Set(
		Object.entries(shaping.overrides ?? {}).flatMap(([real, override]) =>
			override.name !== undefined && override.name !== real ? [override.name] : [],
		),
	);
	const shaped: Tool[] = [];
	for (const tool of tools) {
		if (!toolOffered(shaping, tool.name)) continue;
		const override = shaping.overrides?.[tool.name];
		const exposed = override?.name ?? tool.name;
		if (exposed === tool.name && aliases.has(tool.name)) {
			console.warn(`${where}: the tool '${tool.name}' is hidden: another tool's alias takes that name`);
			continue;
		}
		if (!override) {
			shaped.push(tool);
			continue;
		}
		const next: Tool = { ...tool, name: exposed };
		if (override.description !== undefined) next.description = override.description;
		if (override.annotations) next.annotations = { ...tool.annotations, ...override.annotations };
		shaped.push(next);
	}
	return shaped;
}

/**
 * The upstream's own name of the tool callers call `exposed`, or null when no
 * tool is offered under that name: a hidden tool, the real name of an aliased
 * one, or an alias's target the operator also hides. Callers get null exactly
 * as they get an unknown tool.
 */
export function realToolName(shaping: ToolShaping | undefined, exposed: string): string | null {
	if (!shaping) return exposed;
	for (const [real, override] of Object.entries(shaping.overrides ?? {})) {
		if ((override.name ?? real) === exposed) return toolOffered(shaping, real) ? real : null;
	}
	// Not an alias: the name is the real one, unless it was renamed away or is hidden.
	const renamed = shaping.overrides?.[exposed]?.name;
	if (renamed !== undefined && renamed !== exposed) return null;
	return toolOffered(shaping, exposed) ? exposed : null;
}

/** The name callers see for the upstream's tool `real` (its alias, or itself). */
export function exposedToolName(shaping: ToolShaping | undefined, real: string): string {
	return shaping?.overrides?.[real]?.name ?? real;
}

/**
 * How a virtual server presents a member's tool `name` (the member's own
 * shaping already applied): the name its callers call it by there, when the
 * virtual server aliased it, else `name` itself (policies see names without
 * the `member__` prefix), and its annotations with the virtual server's over
 * them. Policies and the at-most-once read-only check see this view.
 */
export function endpointToolView(
	shaping: EndpointTools | undefined,
	server: string,
	name: string,
	annotations: Readonly<Record<string, unknown>> | undefined,
): { name: string; annotations: Readonly<Record<string, unknown>> } {
	const override = shaping?.overrides?.[namespacedName(server, name)];
	return {
		name: override?.name ?? name,
		annotations: override?.annotations ? { ...annotations, ...override.annotations } : (annotations ?? {}),
	};
}
