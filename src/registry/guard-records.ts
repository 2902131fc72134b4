import { z } from "zod";
import { PolicyAppliesSchema, PolicyNameSchema } from "./policy-records.ts";

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

/** Accepted in the schema so that its refusal can say why; not built yet (docs/guards.md). */
const GuardWebhookSchema = z.strictObject({
	url: z.string().url(),
	timeoutMs: z.number().int().min(1).max(30_000).optional(),
	onFailure: z.enum(["allow", "block"]).optional(),
});

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
	action: z
		.enum(["redact", "block", "log"], { error: 'must be "redact", "block" or "log"' })
		.describe("redact: each match becomes [redacted:<kind>]; block: the call or its result refused; log: only noted."),
	webhook: GuardWebhookSchema.optional().describe("An organisation's own scanner: not yet supported, and refused."),
});

/** The admin body: `detect` is required, and a webhook is refused with a sentence saying it is not supported yet. */
export const GuardInputSchema = GuardFieldsSchema.superRefine((guard, context) => {
	if (guard.webhook !== undefined) {
		context.addIssue({
			code: "custom",
			path: ["webhook"],
			message: "webhook guards are not yet supported; use detect with the built-in detectors",
		});
	} else if (guard.detect === undefined) {
		context.addIssue({ code: "custom", path: ["detect"], message: "a guard needs detect (the detectors to run)" });
	}
});
export type GuardInput = z.output<typeof GuardFieldsSchema>;

export const GuardRecordSchema = z.object({
	name: z.string(),
	stage: z.enum(["request", "response"]),
	/** null: everywhere. */
	applies: GuardAppliesSchema.nullable(),
	detect: z.array(z.enum(GUARD_DETECTORS)),
	action: z.enum(["redact", "block", "log"]),
	createdAt: z.number(),
	updatedAt: z.number(),
});
/** A guard as the registry holds and publishes it. */
export type GuardRecord = z.infer<typeof GuardRecordSchema>;
