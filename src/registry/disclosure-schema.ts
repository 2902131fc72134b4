import { z } from "zod";
import { GlobSchema } from "./tool-shaping-schema.ts";

/**
 * How an aggregate endpoint (`/mcp` of a key or an access rule, a virtual
 * server) discloses its tools. "full": `tools/list` lists every tool the
 * caller may call (what it always did). "search": it lists the gateway's own
 * `search_tools` and `call_tool`, plus the tools `alwaysList` names, and the
 * caller finds the rest by searching (docs/tool-search.md). "code": it lists
 * `search_tools` and `execute_code`, plus `alwaysList`, and the caller writes
 * a program whose inner calls are calls (docs/code-mode.md).
 */
export const DISCLOSURE_MODES = ["full", "search", "code"] as const;
export const DisclosureModeSchema = z.enum(DISCLOSURE_MODES, { error: 'must be "full", "search" or "code"' });
export type DisclosureMode = z.infer<typeof DisclosureModeSchema>;

/** At most this many `alwaysList` globs: a short list is the point of the mode. */
const MAX_ALWAYS_LISTED = 64;

/** The fields as an admin body (and a config file) declares them. */
export const DISCLOSURE_INPUT_FIELDS = {
	disclosure: DisclosureModeSchema.default("full").describe(
		'"full": tools/list lists every tool; "search": it lists search_tools and call_tool, plus alwaysList (docs/tool-search.md); "code": search_tools and execute_code, plus alwaysList (docs/code-mode.md).',
	),
	alwaysList: z
		.array(GlobSchema)
		.max(MAX_ALWAYS_LISTED)
		.default([])
		.describe("In search and code mode, the tools still listed, by globs over the names callers see (e.g. github__*)."),
};

/** The fields as a record holds them: records older than the fields are "full", with nothing always listed. */
export const DISCLOSURE_RECORD_FIELDS = {
	disclosure: DisclosureModeSchema.default("full"),
	alwaysList: z.array(z.string()).default([]),
};

/** What a session keeps of its endpoint's disclosure, as at open. */
export const DisclosureSchema = z.object({
	mode: DisclosureModeSchema,
	alwaysList: z.array(z.string()),
});
export type Disclosure = z.infer<typeof DisclosureSchema>;

/** The disclosure of a record carrying the fields. */
export function disclosureOf(record: { disclosure: DisclosureMode; alwaysList: readonly string[] }): Disclosure {
	return { mode: record.disclosure, alwaysList: [...record.alwaysList] };
}
