import { z } from "zod";
import { RuleNameSchema } from "./access-rules.ts";
import { PrioritySchema, ServerNameSchema, WebhookSchema } from "./schemas.ts";

/**
 * Tool policies as the registry keeps and publishes them: a CEL expression,
 * what it decides (allow, deny, confirm: the caller is asked first, or
 * approve: an approver decides, within `approvalTimeoutSeconds`) and
 * where it applies. The registry only
 * stores and publishes them; compiling and evaluating is governance's
 * (src/governance/policies.ts), which also checks at `PUT` that the
 * expression compiles. The shapes live here because the registry parses
 * them at its own boundaries (SQLite rows, KV) and may not import governance.
 */

export const POLICY_NAME = /^[a-z0-9][a-z0-9-]{0,63}$/;
export const PolicyNameSchema = z
	.string()
	.regex(POLICY_NAME, "must be 1-64 characters of a-z, 0-9 and '-', starting with a letter or digit");

/** Longest expression accepted: long enough for any policy worth reading, short enough to review. */
export const MAX_EXPRESSION_CHARS = 2_000;

/** What a policy does when its expression holds: allow or deny the tool, have the caller confirm each call first, or have an approver decide it. */
export const POLICY_EFFECTS = ["allow", "deny", "confirm", "approve"] as const;

/** How long a call an `approve` policy holds waits for an approver when the policy says nothing: ten minutes. */
export const DEFAULT_APPROVAL_TIMEOUT_SECONDS = 600;
/** The longest wait a policy may ask: a day, so a forgotten approval ends and its task with it. */
export const MAX_APPROVAL_TIMEOUT_SECONDS = 86_400;

/** Key ids as `POST /admin/keys` makes them (see api-key.ts). */
const KeyIdSchema = z.string().regex(/^key_[A-Za-z0-9_-]{12}$/, "must be an API key id (key_...)");

/**
 * Where a policy applies: every list given must name the request's server,
 * virtual server, key or access rule (one of its entries); an absent list
 * does not narrow. Absent altogether, or `{}`: everywhere.
 */
const APPLIES_FIELDS = {
	/** The server a tool belongs to (on `/mcp/<server>`, `/mcp` and as a virtual server's member). */
	servers: z.array(ServerNameSchema).min(1).max(256).optional(),
	/** The virtual server the request came through (`/mcp/<virtual>`). */
	virtualServers: z.array(ServerNameSchema).min(1).max(256).optional(),
	/** API keys, by id: a key's name is optional and need not be unique. */
	keys: z.array(KeyIdSchema).min(1).max(256).optional(),
	/** Access rules, by name: the people they admitted. */
	rules: z.array(RuleNameSchema).min(1).max(256).optional(),
};

export const PolicyAppliesSchema = z.strictObject(APPLIES_FIELDS);
export type PolicyApplies = z.output<typeof PolicyAppliesSchema>;

/**
 * The admin body's shape. Whether the expression compiles (and stays within
 * the nesting bounds) is checked by governance's `PolicyInputSchema`, which
 * refines this one.
 */
export const PolicyFieldsSchema = z.strictObject({
	expression: z
		.string()
		.min(1)
		.max(MAX_EXPRESSION_CHARS)
		.describe("A CEL expression over principal, server, tool, arguments, method and request.time."),
	effect: z
		.enum(POLICY_EFFECTS, { error: 'must be "allow", "deny", "confirm" or "approve"' })
		.describe(
			"What the policy does to a tool when its expression holds; confirm: each call is sent only once the caller confirms it; approve: only once an approver approves it.",
		),
	approvalTimeoutSeconds: z
		.int()
		.min(1)
		.max(MAX_APPROVAL_TIMEOUT_SECONDS)
		.optional()
		.describe(
			`For effect approve: how long a held call waits for an approver before it fails (seconds, at most ${MAX_APPROVAL_TIMEOUT_SECONDS}); absent: ${DEFAULT_APPROVAL_TIMEOUT_SECONDS}.`,
		),
	approvalWebhook: WebhookSchema.optional().describe(
		"For effect approve: where the gateway POSTs a notice (Slack-compatible JSON, signed) each time the policy holds a call; absent: approvers learn of it from their lists.",
	),
	applies: PolicyAppliesSchema.optional().describe(
		"Where it applies: servers, virtualServers, keys, rules (every list given must name the request's); absent: everywhere.",
	),
	priority: PrioritySchema.describe(
		"Lower first; equal priorities go by name. Order decides only which policy a refusal names.",
	),
});
export type PolicyInput = z.output<typeof PolicyFieldsSchema>;

export const PolicyRecordSchema = z.object({
	name: z.string(),
	expression: z.string(),
	effect: z.enum(POLICY_EFFECTS),
	/** null: everywhere. */
	applies: z.object(APPLIES_FIELDS).nullable(),
	/** Null or absent: the default, or an effect that waits for nobody. */
	approvalTimeoutSeconds: z.number().nullable().optional(),
	/** Null or absent: no notice is sent. */
	approvalWebhook: z.object({ url: z.string(), secret: z.string() }).nullable().optional(),
	priority: z.number(),
	createdAt: z.number(),
	updatedAt: z.number(),
});
/** A policy as the registry holds and publishes it. */
export type PolicyRecord = z.infer<typeof PolicyRecordSchema>;

/** Policies in the order they are evaluated: by priority, then by name. */
export function orderPolicies<T extends Pick<PolicyRecord, "priority" | "name">>(policies: readonly T[]): T[] {
	return [...policies].sort((a, b) => a.priority - b.priority || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
