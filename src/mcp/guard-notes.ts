import { z } from "zod";
import { isJsonObject } from "../primitives/json-object.ts";

/**
 * What a content guard did to a call, as the gateway tells the client (in a
 * result's `_meta`) and its own accounting (the `tool_call` record): which
 * guard, its action, and how many matches of each kind. Never the matched
 * text. A webhook guard's note is its scanner's verdict (`allow`, `block`,
 * `modify`, or `failed` when it did not answer as it should), with no kinds.
 */

/** The `_meta` key of a guarded result: the verdicts of the response-stage guards that found something. */
export const GUARD_META_KEY = "mcp-edge-gateway/guards";

export const GuardNoteSchema = z.object({
	guard: z.string(),
	action: z.enum(["redact", "block", "log", "allow", "modify", "failed"]),
	/** Matches by detector kind (secrets, email, phone, card, iban); none for a webhook guard. */
	kinds: z.record(z.string(), z.number().int().nonnegative()),
});
export type GuardNote = z.output<typeof GuardNoteSchema>;

export const GuardNotesSchema = z.array(GuardNoteSchema).max(64);

/** The guard notes in a result's `_meta`; none when it has none or they do not parse. */
export function guardNotesOf(meta: unknown): GuardNote[] {
	if (!isJsonObject(meta) || !(GUARD_META_KEY in meta)) return [];
	const parsed = GuardNotesSchema.safeParse(meta[GUARD_META_KEY]);
	return parsed.success ? parsed.data : [];
}
