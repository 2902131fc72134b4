import { z } from "zod";
import { PolicyAppliesSchema, PolicyNameSchema } from "./policy-records.ts";
import { WebhookSchema } from "./schemas.ts";

/**
 * Content guards as the registry keeps and publishes them: at which stage a
 * call's content is scanned (its arguments, or its result), where the guard
 * applies (as a policy does, and by tool), what it looks for and what it does
 * with what it finds. Scanning is governance's (src/governance/guards/); the
 * shapes live here because the registry parses them at its own boundaries.
 */

export const GuardNameSchema = PolicyNameSchema;

/** The built-in detectors (src/governance/guards/detectors.ts). */
export const GUARD_DETECTORS = ["secrets", "email", "phone", "card", "iban"] as const;

/** Tool names or globs (`*`, `?`), as the caller sees them without an aggregate's `server__` prefix. */
const ToolGlobsSchema = z.array(z.string().min(1).max(128)).min(1).max(256);

/** Where a guard applies: a policy's `applies`, and `tools` (every list given must match). */
export const GuardAppliesSchema = PolicyAppliesSchema.extend({ tools: ToolGlobsSchema.optional() });
export type GuardApplies = z.output<typeof GuardAppliesSchema>;

/** How long a guard's scanner may take to answer, by default and at most (docs/guards.md). */
export const GUARD_WEBHOOK_TIMEOUT_MS = { default: 2000, max: 10_000 } as const;

/**
 * An organisation's own scanner: the registry's webhook (its URL and the
 * Worker secret that signs each POST), how long it may take, and what a call
 * comes to when it fails to answer (block: refused; allow: passed, noted).
 */
export const GuardWebhookSchema = WebhookSchema.extend({
	timeoutMs: z
		.number()
		.int()
		.min(1)
		.max(GUARD_WEBHOOK_TIMEOUT_MS.max)
		.default(GUARD_WEBHOOK_TIMEOUT_MS.default)
		.describe("How long the scanner may take to answer, in milliseconds (default 2000, at most 10000)."),
	onFailure: z
		.enum(["allow", "block"], { error: 'must be "allow" or "block"' })
		.default("block")
		.describe("What a call comes to when the scanner does not answer as it should: block (the default) or allow."),
});
export type GuardWebhook = z.output<typeof GuardWebhookSchema>;

const GuardActionSchema = z.enum(["redact", "block", "log"], { error: 'must be "redact", "block" or "log"' });

export const GuardFieldsSchema = z.strictObject({
	stage: z
		.enum(["request", "response"], { error: 'must be "request" or "response"' })
		.describe("request: a tool call's arguments; response: a tool call's result and a resource read's contents."),
	applies: GuardAppliesSchema.optional().describe(
		"Where it applies: servers, virtualServers, keys, rules, tools (globs); every list given must match; absent: everywhere.",
	),
	detect: z
		.array(z.enum(GUARD_DETECTORS, { error: `must be one of ${GUARD_DETECTORS.join(", ")}` }))
		.min(1)
		.max(GUARD_DETECTORS.length)
		.optional()
		.describe("The built-in detectors to run: secrets, email, phone, card (Luhn-checked), iban (mod-97 checked)."),
	action: GuardActionSchema.optional().describe(
		"With detect: redact (each match becomes [redacted:<kind>]), block (the call or its result refused) or log (only noted).",
	),
	webhook: GuardWebhookSchema.optional().describe(
		"Instead of detect and action: an organisation's own scanner, sent the stage's content signed; it answers allow, block or modify.",
	),
});

/** The admin body: either `detect` with its `action`, or a `webhook`, each with a sentence when it is not so. */
export const GuardInputSchema = GuardFieldsSchema.superRefine((guard, context) => {
	if (guard.webhook !== undefined) {
		if (guard.detect !== undefined || guard.action !== undefined) {
			context.addIssue({
				code: "custom",
				path: ["webhook"],
				message:
					"a guard has either detect and action (the built-in detectors) or a webhook (its own scanner), not both",
			});
		}
		return;
	}
	if (guard.detect === undefined) {
		context.addIssue({
			code: "custom",
			path: ["detect"],
			message: "a guard needs detect (the detectors to run) and action, or a webhook",
		});
	}
	if (guard.action === undefined) {
		context.addIssue({ code: "custom", path: ["action"], message: "a guard with detect needs an action" });
	}
});
export type GuardInput = z.output<typeof GuardFieldsSchema>;

export const GuardRecordSchema = z.object({
	name: z.string(),
	stage: z.enum(["request", "response"]),
	/** null: everywhere. */
	applies: GuardAppliesSchema.nullable(),
	/** The built-in detectors; empty for a webhook guard. */
	detect: z.array(z.enum(GUARD_DETECTORS)),
	/** What a detect guard does with what it finds; null for a webhook guard. */
	action: GuardActionSchema.nullable(),
	/** The guard's own scanner; null for a detect guard. */
	webhook: GuardWebhookSchema.nullable().default(null),
	createdAt: z.number(),
	updatedAt: z.number(),
});
/** A guard as the registry holds and publishes it. */
export type GuardRecord = z.infer<typeof GuardRecordSchema>;
