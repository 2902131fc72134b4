import { z } from "zod";

/**
 * Pinned tool definitions as the registry holds them (issue 22, point 3).
 * The digest and the verdicts live in src/governance/; here are only the
 * records, so that the registry's tables, its KV records and the read path
 * share one declaration of them.
 */

/**
 * What a server's changed or new tool definitions do: "block" holds them out
 * of lists and refuses calls, "warn" serves them logged and flagged, "off"
 * serves everything and records nothing.
 */
export const PINNING_MODES = ["block", "warn", "off"] as const;
export const PinningModeSchema = z.enum(PINNING_MODES, { error: 'must be "block", "warn" or "off"' });
export type PinningMode = z.output<typeof PinningModeSchema>;
/** Servers registered before pinning existed are under this mode, as are those that name none. */
export const DEFAULT_PINNING: PinningMode = "warn";

/** A JSON object as the upstream wrote it (a schema, annotations). */
const JsonObjectSchema = z.record(z.string(), z.unknown());

/** The parts of a tool that are its definition: what a pin's digest covers. Absent stays absent. */
export const ToolDefinitionSchema = z.object({
	name: z.string().min(1),
	description: z.string().optional(),
	inputSchema: JsonObjectSchema,
	outputSchema: JsonObjectSchema.optional(),
	annotations: JsonObjectSchema.optional(),
});
export type ToolDefinition = z.output<typeof ToolDefinitionSchema>;

/** SHA-256 in lowercase hex. */
const DigestSchema = z.string().regex(/^[0-9a-f]{64}$/, "must be a SHA-256 digest in hex");

/** What a caller hands the registry to pin: a definition and its digest (src/governance/tool-digest.ts). */
export const PinInputSchema = z.object({ digest: DigestSchema, definition: ToolDefinitionSchema });
export type PinInput = z.output<typeof PinInputSchema>;

/** One approved definition: `tool` is its name, the key of the pin within its server. */
export const ToolPinSchema = z.object({
	tool: z.string(),
	digest: DigestSchema,
	definition: ToolDefinitionSchema,
	approvedAt: z.number(),
});
export type ToolPin = z.output<typeof ToolPinSchema>;

/**
 * A server's pins, as published to KV (`pins/<server>`). Absent until its
 * tools were first seen (or approved): trust on first use then applies. Once
 * present, even with no pin in it, any tool not pinned is new.
 */
export const ServerPinsSchema = z.object({
	server: z.string(),
	/** The incarnation the pins belong to: a server deleted and created again starts with none. */
	generation: z.string(),
	/** When its tools were first recorded (first seen, or first approved). */
	recordedAt: z.number(),
	pins: z.array(ToolPinSchema),
});
export type ServerPins = z.output<typeof ServerPinsSchema>;

/** `POST /admin/servers/:name/tools/approve`: every current tool, or the named ones. */
export const ToolApprovalInputSchema = z.strictObject({
	tools: z
		.array(z.string().min(1).max(256))
		.min(1)
		.max(1_000)
		.optional()
		.describe("The tools to approve, by the upstream's names; absent: every tool it lists now."),
});
export type ToolApprovalInput = z.output<typeof ToolApprovalInputSchema>;

/**
 * The definitions a session last saw a server list (reported when one of
 * them was new or changed, or a pinned one was missing). Kept by the
 * registry, published nowhere: the admin reads it for servers it cannot list
 * itself (their requests carry each caller's credentials).
 */
export const ObservedToolsSchema = z.object({
	server: z.string(),
	/** The incarnation that listed them. */
	generation: z.string(),
	/** When the registry first held this list (an unchanged list reported again writes nothing). */
	observedAt: z.number(),
	tools: z.array(PinInputSchema),
});
export type ObservedTools = z.output<typeof ObservedToolsSchema>;
