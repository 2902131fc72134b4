import { z } from "zod";
import { EXECUTE_CODE } from "../mcp/code-tools.ts";
import { CALL_TOOL, SEARCH_TOOLS } from "../mcp/disclosure-tools.ts";

/**
 * How an operator shapes what a server's tools look like to callers: which
 * are offered (`include`/`exclude` globs of the upstream's names), and per
 * tool an alias, a description of the operator's own and annotations (a
 * `readOnlyHint` the operator adds is their promise: the at-most-once rules
 * then replay the tool). Applied to lists and to calls alike: a hidden tool is
 * neither listed nor callable, and an aliased one is called only by its alias.
 */
const GLOB = /^[A-Za-z0-9_.\-*?/]{1,128}$/;
export const GlobSchema = z
	.string()
	.regex(GLOB, "must be a glob of a tool name (letters, digits, _ . - /, and * or ?), at most 128 characters");
/** MCP's tool names: what an alias may be (2025-11-25 "SHOULD" 1-128 of these characters). */
const ToolNameSchema = z
	.string()
	.regex(/^[A-Za-z0-9_.\-/]{1,128}$/, "must be 1-128 characters of A-Z, a-z, 0-9, _ . - /");

const ToolOverrideSchema = z.strictObject({
	/** What callers call it; on aggregates, what gets the `server__` prefix. */
	name: ToolNameSchema.optional(),
	description: z.string().max(4096).optional(),
	/** Merged over the upstream's annotations. */
	annotations: z
		.strictObject({
			title: z.string().max(256).optional(),
			readOnlyHint: z.boolean().optional(),
			destructiveHint: z.boolean().optional(),
			idempotentHint: z.boolean().optional(),
			openWorldHint: z.boolean().optional(),
		})
		.optional(),
});

export const ToolShapingSchema = z
	.strictObject({
		include: z.array(GlobSchema).min(1).max(256).optional(),
		exclude: z.array(GlobSchema).max(256).optional(),
		/** By the upstream's own tool name. */
		overrides: z.record(ToolNameSchema, ToolOverrideSchema).optional(),
	})
	.superRefine((shaping, context) => {
		// Each name callers see stands for one tool: two aliases alike, or an alias equal to the name of
		// another tool named here and kept, would make one name call two tools.
		const exposedBy = new Map<string, string>();
		for (const [real, override] of Object.entries(shaping.overrides ?? {})) {
			const exposed = override.name ?? real;
			const other = exposedBy.get(exposed);
			if (other !== undefined) {
				context.addIssue({
					code: "custom",
					path: ["overrides", real, "name"],
					message: `'${exposed}' would name both '${other}' and '${real}'`,
				});
			} else exposedBy.set(exposed, real);
		}
	});
export type ToolShaping = z.infer<typeof ToolShapingSchema>;

/**
 * What a virtual server offers of its members' tools, and how they look
 * there: globs over the names its callers would otherwise see,
 * `<member>__<tool>` (the members' own shaping applied first), and overrides
 * keyed by those same names. An override's `name` here is the whole name the
 * virtual server's callers see, with no `member__` prefix added: the prefix
 * exists only to keep members' names apart, and a name the operator writes for
 * this one endpoint is kept apart by the collision check instead (two names
 * alike are refused here, and an alias that takes a member's tool's name hides
 * that tool, logged, as on a server).
 */
export const EndpointToolsSchema = ToolShapingSchema.superRefine((shaping, context) => {
	// In search and code mode these names are the gateway's own tools: an alias taking one would be unreachable.
	for (const [real, override] of Object.entries(shaping.overrides ?? {})) {
		if (override.name === SEARCH_TOOLS || override.name === CALL_TOOL || override.name === EXECUTE_CODE) {
			const mode = override.name === EXECUTE_CODE ? "code mode" : "search mode";
			context.addIssue({
				code: "custom",
				path: ["overrides", real, "name"],
				message: `'${override.name}' is the name of the gateway's own tool in ${mode}; choose another`,
			});
		}
	}
});
export type EndpointTools = ToolShaping;
