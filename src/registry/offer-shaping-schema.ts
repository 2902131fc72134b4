import { z } from "zod";
import { normalizeUri } from "../mcp/uri-normalize.ts";
import { GlobSchema } from "./tool-shaping-schema.ts";

/**
 * Which of a server's prompts and resources callers see, beside its tools
 * (tool-shaping-schema.ts): include/exclude globs, on servers over the
 * upstream's own names and URIs, on virtual servers over what its callers see
 * (`member__prompt`; URIs are not renamed by aggregation). Hidden entries are
 * neither listed nor usable: a prompts/get, resources/read or subscribe of one
 * is refused as an unknown prompt or resource is.
 */

/** A glob of a resource URI (or a template's uriTemplate): `*` any run, `/` included; `?` one character. */
const UriGlobSchema = z
	.string()
	.regex(/^[\x21-\x7e]{1,1024}$/, "must be a glob of a resource URI: 1-1024 printable characters, no spaces");

/**
 * A glob an operator writes now: it is compared in RFC 3986 normal form (see
 * governance/resource-globs.ts), so it must have one. Stored records are read
 * with the looser schema, so a glob written before this rule still loads.
 */
const NormalizableUriGlobSchema = UriGlobSchema.superRefine((glob, context) => {
	const normal = normalizeUri(glob, "glob");
	if ("refused" in normal) {
		context.addIssue({ code: "custom", message: `must be a glob of a resource URI, but it ${normal.refused}` });
	}
});

export const PromptShapingSchema = z.strictObject({
	include: z.array(GlobSchema).min(1).max(256).optional(),
	exclude: z.array(GlobSchema).max(256).optional(),
});
export type PromptShaping = z.infer<typeof PromptShapingSchema>;

/** Over resources' URIs and resource templates' uriTemplates alike. */
function resourceShaping<G extends z.ZodType<string>>(glob: G) {
	return z.strictObject({
		include: z.array(glob).min(1).max(256).optional(),
		exclude: z.array(glob).max(256).optional(),
	});
}

/** As records hold it. */
export const ResourceShapingSchema = resourceShaping(UriGlobSchema);
export type ResourceShaping = z.infer<typeof ResourceShapingSchema>;

/** As an admin PUT gives it. */
export const ResourceShapingInputSchema = resourceShaping(NormalizableUriGlobSchema);
